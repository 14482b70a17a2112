package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/evidence"
)

// TestCompareIdenticalImportsWithCancelled: two imports of one AIPerf run (100 requests, 89
// completed, 11 cancelled on purpose by --request-cancellation-rate 10) are the same run, so
// the acceptance rollback trigger the first one's diagnosis derives must hold on the second:
// its baseline is the run's own acceptance rate, 89 accepted of 100 warm tasks (a cancelled
// task stays in the denominator, as in the figure compare measures on the candidate), and an
// identical candidate's 0.89 lies inside that rate's own interval.
func TestCompareIdenticalImportsWithCancelled(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join("..", "..", "importer", "testdata", "aiperf-run1", "profile_export.jsonl")
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, d := range []string{a, b} {
		if code, _, errs := runCLI(t, "import", "aiperf", file, "-o", d); code != 0 {
			t.Fatalf("import: exit %d: %s", code, errs)
		}
	}
	res, err := compare.Dirs(a, b, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var acc *compare.Check
	for i := range res.Triggers {
		if res.Triggers[i].Signal == evidence.SigAcceptanceRate {
			acc = &res.Triggers[i]
		}
	}
	if acc == nil {
		t.Fatalf("no acceptance trigger derived from a run of 100 warm tasks: %+v", res.Triggers)
	}
	if !strings.Contains(acc.Basis, "baseline warm acceptance 0.890") {
		t.Errorf("acceptance trigger's baseline is not 89 accepted of 100 warm tasks: %s", acc.Basis)
	}
	if acc.Candidate == nil || *acc.Candidate != 0.89 {
		t.Errorf("candidate acceptance %v, want 0.89 (89 of 100)", acc.Candidate)
	}
	if acc.Status != compare.StatusPass {
		t.Errorf("acceptance trigger %s on an identical run: bound %.4g, basis %s", acc.Status, acc.Bound, acc.Basis)
	}
	if res.Verdict == compare.Reject {
		t.Errorf("identical runs rejected: %v", res.Reasons)
	}
}
