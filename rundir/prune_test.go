package rundir_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pel-ladder/pel/rundir"
)

const pruneContract = "name: r\nversion: 1\narrival: {process: closed, concurrency: 1}\nrequests: 1\ntasks:\n  - {name: t, weight: 1, prompt_tokens: 8, output_tokens: 8}\n"

var pruneNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// makeRun writes a run directory started age before pruneNow: through evidence.json, or,
// when viaRecord, through its first record only; retention is appended to the contract.
func makeRun(t *testing.T, dir string, age time.Duration, viaRecord bool, retention string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := pruneContract
	if retention != "" {
		c += "retention: " + retention + "\n"
	}
	start := pruneNow.Add(-age).Format(time.RFC3339Nano)
	files := map[string]string{rundir.ContractFile: c,
		rundir.RequestsFile: `{"seq":0,"id":"a","task":"t","phase":"warm","scheduled_at":"` + start + `","status":"ok","attempts":1,"accepted":true,"prompt_tokens":8,"output_tokens":8,"in_flight":0}` + "\n"}
	if !viaRecord {
		files[rundir.EvidenceFile] = `{"run":{"started_at":"` + start + `"}}`
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrune(t *testing.T) {
	day := 24 * time.Hour
	tmp := t.TempDir()
	root := filepath.Join(tmp, "root")
	outside := filepath.Join(tmp, "outside")
	makeRun(t, filepath.Join(root, "old"), 60*day, false, "")
	makeRun(t, filepath.Join(root, "new"), 5*day, false, "")
	makeRun(t, filepath.Join(root, "retained"), 10*day, true, "7d")
	makeRun(t, filepath.Join(root, "kept-by-retention"), 10*day, false, "90d")
	makeRun(t, filepath.Join(root, "sweep", "c1"), 45*day, false, "")
	makeRun(t, outside, 400*day, false, "1d")
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes", rundir.ContractFile), []byte(pruneContract), 0o600); err != nil {
		t.Fatal(err) // a contract alone is not a run directory
	}
	list := func(es []rundir.PruneEntry, pick func(rundir.PruneEntry) bool) []string {
		var out []string
		for _, e := range es {
			if pick(e) {
				rel, _ := filepath.Rel(root, e.Path)
				out = append(out, rel)
			}
		}
		slices.Sort(out)
		return out
	}
	expired := func(e rundir.PruneEntry) bool { return e.Expired }
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	tests := []struct {
		name      string
		o         rundir.PruneOptions
		expired   []string
		remaining []string
	}{
		{"dry run, 30 days", rundir.PruneOptions{OlderThan: 30 * day, Now: pruneNow}, []string{"old", "sweep/c1"},
			[]string{"old", "new", "retained", "kept-by-retention", "sweep/c1"}},
		{"dry run, each run's retention", rundir.PruneOptions{Now: pruneNow}, []string{"retained"},
			[]string{"old", "new", "retained", "kept-by-retention", "sweep/c1"}},
		{"remove, each run's retention", rundir.PruneOptions{Now: pruneNow, Remove: true}, []string{"retained"},
			[]string{"old", "new", "kept-by-retention", "sweep/c1"}},
		{"remove, 30 days", rundir.PruneOptions{OlderThan: 30 * day, Now: pruneNow, Remove: true}, []string{"old", "sweep/c1"},
			[]string{"new", "kept-by-retention"}},
	}
	for _, tc := range tests {
		es, err := rundir.Prune(root, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := list(es, expired); !slices.Equal(got, tc.expired) {
			t.Errorf("%s: expired %v, want %v", tc.name, got, tc.expired)
		}
		for _, n := range tc.remaining {
			if !exists(filepath.Join(root, n, rundir.RequestsFile)) {
				t.Errorf("%s: %s was removed", tc.name, n)
			}
		}
		if !exists(filepath.Join(outside, rundir.RequestsFile)) || !exists(filepath.Join(root, "link")) || !exists(filepath.Join(root, "notes", rundir.ContractFile)) {
			t.Fatalf("%s: removed something that is not a run directory below ROOT", tc.name)
		}
	}
	if _, err := rundir.Prune(filepath.Join(root, "link"), rundir.PruneOptions{Now: pruneNow, Remove: true}); err == nil {
		t.Errorf("a ROOT that is a link was walked")
	}
}
