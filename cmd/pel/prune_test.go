package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/rundir"
)

// A contract's retention: is recorded in the run's evidence, pel prune lists a run by it
// (the run just ended: kept) and by --older-than, removes only with --yes, and refuses a
// bad period.
func TestRetentionAndPrune(t *testing.T) {
	srv := httptest.NewServer(&loadgentest.Handler{})
	defer srv.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	if err := os.WriteFile(cf, []byte(runContract+"retention: 30d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "runs")
	dir := filepath.Join(root, "r1")
	if code, _, errs := runCLI(t, "run", "--target", srv.URL, "--contract", cf, "-o", dir); code != 0 {
		t.Fatalf("pel run: exit %d: %s", code, errs)
	}
	ev, err := rundir.ReadEvidence(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Run.RetentionS != 30*24*3600 {
		t.Errorf("evidence records retention %d s, want 30 days", ev.Run.RetentionS)
	}
	code, out, errs := runCLI(t, "prune", root)
	if code != 0 || !strings.Contains(out, "keep         "+dir) || !strings.Contains(out, "limit 30.0d") {
		t.Errorf("prune by retention: exit %d\n%s%s", code, out, errs)
	}
	// A run that has ended is older than a nanosecond.
	code, out, _ = runCLI(t, "prune", root, "--older-than", "1ns")
	if code != 0 || !strings.Contains(out, "would remove "+dir) || !strings.Contains(out, "--yes") {
		t.Errorf("dry run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a dry run removed the run: %v", err)
	}
	code, out, _ = runCLI(t, "prune", root, "--older-than", "1ns", "--yes")
	if _, err := os.Stat(dir); code != 0 || !os.IsNotExist(err) || !strings.Contains(out, "removed      "+dir) {
		t.Errorf("--yes: exit %d, stat %v\n%s", code, err, out)
	}
	if code, _, errs := runCLI(t, "prune", root, "--older-than", "forever"); code != 2 || !strings.Contains(errs, "bad retention") {
		t.Errorf("a bad --older-than: exit %d: %s", code, errs)
	}
}
