package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// A torn last line in requests.jsonl (a crash or a full disk mid-write) does not make
// pel analyze refuse the run: the complete lines are used and the torn one is named in a
// warning.
func TestRebuildTornLastLine(t *testing.T) {
	dir := t.TempDir()
	c := "name: t\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 3\ntasks:\n  - {name: a, prompt_tokens: 8}\n"
	if err := os.WriteFile(filepath.Join(dir, rundir.ContractFile), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := record.Create(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i := range 2 {
		at := t0.Add(time.Duration(i) * time.Second)
		w.Write(&record.Record{Seq: i, Task: "a", Phase: record.PhaseWarm, ScheduledAt: at, SentAt: at, DoneAt: at.Add(time.Second), Status: record.StatusOK, Accepted: true, Attempts: 1})
	}
	w.Close()
	f, _ := os.OpenFile(filepath.Join(dir, rundir.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":2,"task":"a","sched`)
	f.Close()
	for range 2 { // twice: the warning is not repeated
		ev, err := rundir.Rebuild(dir)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Workload.Requests != 2 {
			t.Errorf("%d requests, want the 2 complete lines", ev.Workload.Requests)
		}
		n := 0
		for _, note := range ev.Run.Notes {
			if strings.Contains(note, "requests.jsonl line 3 is cut mid-write") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d warnings naming line 3 in %q", n, ev.Run.Notes)
		}
		if err := ev.WriteFile(filepath.Join(dir, rundir.EvidenceFile)); err != nil {
			t.Fatal(err)
		}
	}
}
