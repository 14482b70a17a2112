package verify

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

func ev(config map[string]string, sigs map[string]float64) *evidence.Evidence {
	e := evidence.New()
	e.Run.EngineConfig = config
	for n, v := range sigs {
		e.Add(evidence.Signal{Name: n, Value: v, Stage: evidence.StageRequestTrace, Source: "client", Phase: evidence.PhaseWarm})
	}
	return e
}

// queueFinding is the admission-queue prediction for a llama.cpp with one slot: more slots,
// queue share under 0.25, TTFT p50 down by half, TPOT up by at most 25%.
func queueFinding() *evidence.Finding {
	return &evidence.Finding{ID: "admission-queue", Layer: evidence.LayerScheduling, Predicted: &evidence.Predicted{
		Change: evidence.Change{Action: evidence.ActRaiseSeqs, Knob: "-np", From: "1", To: "2", Config: "slots"},
		Expect: []evidence.Expectation{
			{Signal: evidence.SigQueueShare, Op: "<=", Bound: 0.25},
			{Signal: evidence.SigTTFTP50, Op: "<=", Bound: -0.5, Relative: true},
			{Signal: evidence.SigTPOTP50, Op: "<=", Bound: 0.25, Relative: true},
		}}}
}

func TestCheck(t *testing.T) {
	base := ev(map[string]string{"slots": "1"}, map[string]float64{evidence.SigQueueShare: 0.74, evidence.SigTTFTP50: 2000, evidence.SigTPOTP50: 10})
	tests := []struct {
		name string
		cand *evidence.Evidence
		ci   CIFunc
		want Outcome
		has  string
	}{
		{"the queue is gone", ev(map[string]string{"slots": "4"}, map[string]float64{evidence.SigQueueShare: 0.05, evidence.SigTTFTP50: 400, evidence.SigTPOTP50: 11}), nil, Held, "3 of 3"},
		{"slots raised, queue stays", ev(map[string]string{"slots": "4"}, map[string]float64{evidence.SigQueueShare: 0.7, evidence.SigTTFTP50: 1900, evidence.SigTPOTP50: 10}), nil, Failed, "client.queue_share_ttft falls to 0.25 or less, observed 0.7"},
		{"change not made", ev(map[string]string{"slots": "1"}, map[string]float64{evidence.SigQueueShare: 0.05}), nil, NotTestable, "slots = 1 in both runs"},
		{"nothing measured", ev(nil, map[string]float64{evidence.SigITLP50: 3}), nil, NotTestable, "not settled by these runs: client.queue_share_ttft (absent from the candidate)"},
		{"missed on the point, interval reaches", ev(map[string]string{"slots": "4"}, map[string]float64{evidence.SigQueueShare: 0.1, evidence.SigTTFTP50: 1100, evidence.SigTPOTP50: 10}),
			func(e evidence.Expectation) (float64, float64, bool) {
				return -0.6, -0.3, e.Signal == evidence.SigTTFTP50
			}, Held, "not measured"},
		{"decode slowed too much", ev(map[string]string{"slots": "4"}, map[string]float64{evidence.SigQueueShare: 0.1, evidence.SigTTFTP50: 500, evidence.SigTPOTP50: 20}), nil, Failed, "client.tpot_p50_ms rises by at most 25%, observed +100%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(base, tc.cand, queueFinding(), tc.ci)
			if r.Outcome != tc.want || !strings.Contains(r.Reason, tc.has) {
				t.Errorf("%s: %s, want %s with %q", tc.name, r.Line(), tc.want, tc.has)
			}
		})
	}
}

// TestAbsentIsZero: an error rate is only reported when errors happened; its absence in the
// candidate is a measured 0.
func TestAbsentIsZero(t *testing.T) {
	f := &evidence.Finding{ID: "context-exhausted", Predicted: &evidence.Predicted{Expect: []evidence.Expectation{
		{Signal: evidence.SigContextExhaustedRate, Op: "<=", Bound: 0, AbsentIsZero: true}}}}
	base := ev(nil, map[string]float64{evidence.SigContextExhaustedRate: 1, evidence.SigTTFTP50: 1})
	if r := Check(base, ev(nil, map[string]float64{evidence.SigTTFTP50: 1}), f, nil); r.Outcome != Held {
		t.Errorf("no lost context in the candidate: %s", r.Line())
	}
	if r := Check(base, ev(nil, map[string]float64{evidence.SigContextExhaustedRate: 0.2}), f, nil); r.Outcome != Failed {
		t.Errorf("20%% still lost: %s", r.Line())
	}
}
