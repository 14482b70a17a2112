package diagnose

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// agentTask is a three-call task: each call's TTFT is ttft (the second call's ttft2), 20
// tokens 10 ms apart, and think planned between calls.
func agentTask(i int, ttft, ttft2, think time.Duration) record.Record {
	start := t0.Add(time.Duration(i) * 10 * time.Second)
	var steps []record.Record
	at := start
	for j := 0; j < 3; j++ {
		tt := ttft
		if j == 1 {
			tt = ttft2
		}
		s := task(i, 0, tt, 10*time.Millisecond, 20)
		s.Task = "agent"
		ref := &record.StepRef{Task: i, Index: j, Kind: record.StepChat, Turn: j}
		if j > 0 {
			ref.ThinkUS = think.Microseconds()
			at = at.Add(think)
		}
		s.Step = ref
		shift := at.Sub(s.ScheduledAt)
		s.ScheduledAt, s.SentAt, s.HeadersAt = at, s.SentAt.Add(shift), s.HeadersAt.Add(shift)
		s.FirstTokenAt, s.LastTokenAt, s.DoneAt = s.FirstTokenAt.Add(shift), s.LastTokenAt.Add(shift), s.DoneAt.Add(shift)
		at = s.DoneAt
		steps = append(steps, s)
	}
	r := record.Record{Seq: i, Task: "agent", Phase: record.PhaseWarm, Status: record.StatusOK, Accepted: true, Attempts: 1, Steps: 3,
		ScheduledAt: start, SentAt: start, FirstTokenAt: steps[0].FirstTokenAt, LastTokenAt: steps[2].LastTokenAt, DoneAt: steps[2].DoneAt,
		TokenSource: record.TokensUsage, PromptTokens: 300, OutputTokens: 60}
	r.AttachSteps(steps)
	return r
}

// TestBudgetMultiStep: each call of a multi-step task has its own budget, the waits
// between calls are their own component, and the task's excess is found where it missed:
// over its end-to-end bound because of its planned waits (application), or over one call's
// TTFT bound, charged to that call's time to first token.
func TestBudgetMultiStep(t *testing.T) {
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 2000 * time.Millisecond}, {Metric: contract.MetricTTFT, Limit: 150 * time.Millisecond}, {Metric: contract.MetricE2E, Limit: 3000 * time.Millisecond}}}
	for _, tc := range []struct {
		name        string
		think       time.Duration
		ttft2       time.Duration
		reason      string
		wantOver    bool
		wantBetween bool
		want        evidence.Layer
	}{
		{"waits over the e2e bound", 2 * time.Second, 100 * time.Millisecond, "slo e2e max 3s", true, true, evidence.LayerApplication},
		{"within the bounds", 200 * time.Millisecond, 100 * time.Millisecond, "", false, true, ""},
		{"one call's TTFT", 200 * time.Millisecond, 600 * time.Millisecond, "slo ttft max 150ms (step 2)", true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Half the tasks have the case's timings (and its rejection); the others stay
			// within every bound.
			const thinkOK, ttftOK = 200 * time.Millisecond, 100 * time.Millisecond
			var rs []record.Record
			for i := 0; i < 30; i++ {
				r := agentTask(i, 100*time.Millisecond, ttftOK, thinkOK)
				if i%2 == 0 {
					r = agentTask(i, 100*time.Millisecond, tc.ttft2, tc.think)
					if tc.reason != "" {
						reject(&r, tc.reason)
					}
				}
				rs = append(rs, r)
			}
			ev := diagnoseWith(rs, o, nil)
			b := ev.Budget
			if b == nil || len(b.TaskTypes) != 1 {
				t.Fatalf("budget %+v", b)
			}
			tb := b.TaskTypes[0]
			if !tb.PerCall || tb.Tasks != 90 {
				t.Errorf("per call %v over %d calls, want 90", tb.PerCall, tb.Tasks)
			}
			var planned float64
			for _, c := range tb.Components {
				if c.Part == evidence.PartBetween && c.Layer == evidence.LayerApplication {
					planned = c.Ms
				}
			}
			// Two waits per three calls, half the tasks at each think time.
			if want := 2 * float64((tc.think + thinkOK).Milliseconds()) / 2 / 3; planned < 0.99*want || planned > 1.01*want {
				t.Errorf("planned waits %v ms per call, want %v", planned, want)
			}
			if (b.Excess != nil) != tc.wantOver {
				t.Fatalf("excess %+v, want over %v", b.Excess, tc.wantOver)
			}
			if b.Excess == nil {
				return
			}
			if b.Excess.Tasks != 15 {
				t.Errorf("%d tasks over, want 15", b.Excess.Tasks)
			}
			if tc.want != "" && b.Excess.Owner != tc.want {
				t.Errorf("owner %q, want %s: %+v", b.Excess.Owner, tc.want, b.Excess)
			}
			// The call's own excess: 450 ms over 150 ms for each of 15 tasks.
			if tc.name == "one call's TTFT" {
				if d := b.Excess.TotalMs - 15*450; d > 1 || d < -1 {
					t.Errorf("excess %v ms, want %v", b.Excess.TotalMs, 15*450)
				}
				for _, s := range b.Excess.Shares {
					if s.Layer == evidence.LayerApplication {
						t.Errorf("a TTFT excess charged to the waits between calls: %+v", s)
					}
				}
			}
		})
	}
}
