package contract

import (
	"testing"
	"time"
)

func TestStrings(t *testing.T) {
	two, ten := 2.0, 10.0
	cases := []struct{ got, want string }{
		{Arrival{Process: Poisson, Rate: 20}.String(), "poisson 20 req/s"},
		{Arrival{Process: Gamma, Rate: 5, CV: 2.5}.String(), "gamma 5 req/s cv 2.5"},
		{Arrival{Process: Closed, Concurrency: 16}.String(), "closed loop, 16 in flight"},
		{Arrival{Process: Ramp, From: 1, To: 40, Over: time.Minute}.String(), "ramp 1→40 req/s over 1m0s"},
		{Arrival{Process: Replay, File: "t.jsonl", Speed: 2}.String(), "replay t.jsonl ×2"},
		{Dist{Kind: DistFixed, Value: 64}.String(), "64"},
		{Dist{Kind: DistUniform, Min: &two, Max: &ten}.String(), "uniform 2-10"},
		{Dist{Kind: DistLognormal, Mean: 200, SD: 80, Max: &ten}.String(), "lognormal 200±80 [,10]"},
		{Dist{Kind: DistEmpirical, Values: []float64{1, 2}}.String(), "empirical (2 values)"},
		{SLO{}.String(), "none"},
		{SLO{TTFT: Bound{P99: 500 * time.Millisecond, Max: 2 * time.Second}, E2E: Bound{Max: 30 * time.Second}}.String(), "ttft p99 500ms max 2s; e2e max 30s"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
