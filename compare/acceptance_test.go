package compare

import (
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// TestIdenticalRunsWithCancelledTasks: a run stopped while its last 20 of 200 warm tasks
// were in flight (cancelled, every other task accepted) compared with itself. Its acceptance
// rate is 180/200 = 0.90 on both sides; the rollback trigger the diagnosis derives from it
// bounds that same rate (cancelled tasks in the denominator), so the identical candidate,
// inside the base's own interval, passes it and the comparison does not reject.
func TestIdenticalRunsWithCancelledTasks(t *testing.T) {
	recs := comparetest.Records(comparetest.Spec{N: 200, Seed: 7})
	for i := 180; i < len(recs); i++ {
		recs[i].Status, recs[i].Accepted, recs[i].Reasons = record.StatusCancelled, false, []string{"cancelled"}
	}
	trig, why := diagnose.RollbackTriggers(recs, diagnose.Options{Resamples: 500})
	var found bool
	for _, tr := range trig {
		found = found || tr.Signal == evidence.SigAcceptanceRate
	}
	if !found {
		t.Fatalf("no acceptance trigger from 200 warm tasks (%s): %+v", why, trig)
	}
	tmp := t.TempDir()
	b := write(t, filepath.Join(tmp, "b"), "", recs, trig)
	c := write(t, filepath.Join(tmp, "c"), "", recs, trig)
	r, err := Dirs(b, c, Options{Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range r.Triggers {
		if ch.Signal != evidence.SigAcceptanceRate {
			continue
		}
		if ch.Candidate == nil || *ch.Candidate != 0.9 {
			t.Errorf("candidate acceptance %v, want 0.9 (180 of 200)", ch.Candidate)
		}
		if ch.Status != StatusPass {
			t.Errorf("acceptance trigger %s on an identical run: bound %.4g, basis %s", ch.Status, ch.Bound, ch.Basis)
		}
	}
	if r.Verdict == Reject {
		t.Errorf("identical runs rejected: %v", r.Reasons)
	}
	if m := metric(t, r.Phases[0], "acceptance_rate"); m.Base == nil || *m.Base != 0.9 {
		t.Errorf("base acceptance rate %v, want 0.9", m.Base)
	}
}
