package main

import (
	"os"
	"strings"
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
