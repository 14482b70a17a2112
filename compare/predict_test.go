package compare

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/verify"
)

// TestPredictionsExplainTheVerdict: the baseline named the admission queue and predicted
// TTFT p50 −50% with more slots. Better with the drop → for the predicted reason; better
// while TTFT stayed (the gain came from elsewhere) → the diagnosis was wrong; worse → worse.
func TestPredictionsExplainTheVerdict(t *testing.T) {
	owner := evidence.LayerScheduling
	baseEv := evidence.New()
	baseEv.OwnerLayer = &owner
	baseEv.Findings = []evidence.Finding{{ID: "admission-queue", Layer: owner, Severity: evidence.SeverityCritical,
		Predicted: &evidence.Predicted{Change: evidence.Change{Action: evidence.ActRaiseSeqs, Knob: "-np"},
			Expect: []evidence.Expectation{{Signal: evidence.SigTTFTP50, Op: "<=", Bound: -0.5, Relative: true}}}}}
	baseEv.Add(evidence.Signal{Name: evidence.SigTTFTP50, Value: 2000, Stage: 1, Phase: evidence.PhaseWarm})
	cand := func(ttft float64) *evidence.Evidence {
		e := evidence.New()
		e.Add(evidence.Signal{Name: evidence.SigTTFTP50, Value: ttft, Stage: 1, Phase: evidence.PhaseWarm})
		return e
	}
	f := func(v float64) *float64 { return &v }
	row := func(change string, lo, hi float64) Metric {
		return Metric{Signal: evidence.SigTTFTP50, Base: f(2000), CILo: f(lo), CIHi: f(hi), Change: change}
	}
	tests := []struct {
		name    string
		ttft    float64
		row     Metric
		verdict Verdict
		want    verify.Outcome
		explain string
	}{
		{"held", 400, row("better", -1700, -1500), Accept, verify.Held, "better, for the predicted reason"},
		{"failed, change unseen", 1900, Metric{Signal: evidence.SigITLP50, Change: "better"}, Accept, verify.Failed, "better, but the prediction failed: if the candidate made the predicted change (-np), the diagnosis was wrong"},
		{"worse", 2600, row("worse", 400, 800), Reject, verify.Failed, "worse; admission-queue's prediction (scheduling) failed"},
		{"interval reaches", 1100, row("better", -1200, -500), Accept, verify.NotTestable, "better; admission-queue's prediction (scheduling) could not be tested: not settled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Verdict: tc.verdict, Phases: []PhaseResult{{Metrics: []Metric{tc.row}}}}
			ps, why := predictions(&Run{Evidence: baseEv}, &Run{Evidence: cand(tc.ttft)}, res)
			if len(ps) != 1 || ps[0].Outcome != tc.want || !strings.HasPrefix(why, tc.explain) {
				t.Errorf("%+v; %q", ps, why)
			}
		})
	}
}
