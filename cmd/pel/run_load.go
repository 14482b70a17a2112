package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// loadAverage is the machine's 1-minute load average as /proc/loadavg writes it ("" where
// there is none). A client's schedule lag is its neighbours' as much as its own once the
// load passes the core count, so pel run prints the two together.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// printClientLoad writes the run's schedule lag p99 with the client machine's load average
// at the start and the end of the run.
func printClientLoad(w io.Writer, ev *evidence.Evidence, before, after string) {
	if ev == nil || before == "" || after == "" {
		return
	}
	fmt.Fprintf(w, "Client: schedule lag p99 %.2f ms; load average %s at the start, %s at the end, on %d cores\n",
		ev.Workload.Latency.ScheduleLagMs.P99, before, after, runtime.NumCPU())
}
