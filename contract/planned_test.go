package contract

import (
	"strings"
	"testing"
	"time"
)

// TestPlanned: the task counts a schedule plans, from its arrival process and limits alone.
func TestPlanned(t *testing.T) {
	cases := []struct {
		name        string
		c           Contract
		tasks, warm float64
		exact, know bool
	}{
		{"constant 10/s for 40 s", Contract{Arrival: Arrival{Process: Constant, Rate: 10}, Duration: 40 * time.Second, Warmup: 5 * time.Second}, 400, 350, true, true},
		{"poisson capped by requests", Contract{Arrival: Arrival{Process: Poisson, Rate: 20}, Duration: 30 * time.Second, Requests: 500, Warmup: 5 * time.Second}, 500, 400, false, true},
		{"ramp 0→10 over 10 s, then 10/s", Contract{Arrival: Arrival{Process: Ramp, From: 0, To: 10, Over: 10 * time.Second}, Duration: 20 * time.Second}, 150, 150, false, true},
		{"closed loop, duration only", Contract{Arrival: Arrival{Process: Closed, Concurrency: 8}, Duration: 20 * time.Second}, 0, 0, false, false},
		{"closed loop, requests, no warm-up", Contract{Arrival: Arrival{Process: Closed, Concurrency: 8}, Requests: 100}, 100, 100, true, true},
		{"burst of 50", Contract{Arrival: Arrival{Process: Burst}, Requests: 50}, 50, 50, true, true},
		{"burst of 50 inside a warm-up: all cold", Contract{Arrival: Arrival{Process: Burst}, Requests: 50, Warmup: time.Second}, 50, 0, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.c.Planned()
			if p.Tasks != tc.tasks || p.Warm != tc.warm || p.Exact != tc.exact || p.Known != tc.know {
				t.Errorf("planned %+v, want tasks %g warm %g exact %v known %v", p, tc.tasks, tc.warm, tc.exact, tc.know)
			}
		})
	}
}

// TestExampleDecides: the contract pel contract init writes plans enough warm tasks for a
// comparison of two of its runs to decide, and pel contract check says so.
func TestExampleDecides(t *testing.T) {
	c, err := Parse(Example(), "example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Planned()
	if !p.Known || p.Warm < float64(DecisionWarmTasks) {
		t.Errorf("example plans %+v warm tasks, want at least %d", p, DecisionWarmTasks)
	}
	if !strings.Contains(p.DecisionText(), "enough for pel compare to decide") {
		t.Errorf("DecisionText %q", p.DecisionText())
	}
}
