package verdict

import (
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

func TestCheckOnlyRejections(t *testing.T) {
	cases := []struct {
		name string
		w    evidence.Summary
		want string // substring; "" means no explanation
	}{
		{"all accepted", evidence.Summary{Requests: 10, Accepted: 10}, ""},
		{"checks only", evidence.Summary{Requests: 10, Accepted: 7, RejectReasons: map[string]int{"check json": 3, "check contains": 3}},
			"the 3 rejected tasks failed output checks (check contains ×3, check json ×3)"},
		{"an SLO too", evidence.Summary{Requests: 10, Accepted: 7, RejectReasons: map[string]int{"check json": 2, "slo ttft max 2s": 1}}, ""},
		{"errors", evidence.Summary{Requests: 10, Accepted: 9, RejectReasons: map[string]int{"error: http 500": 1}}, ""},
	}
	for _, c := range cases {
		got := checkOnlyRejections(c.w)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestLineOutcomes: each outcome of the decision reads as it decides, and only an outcome
// of none with nothing missed says that nothing limits accepted tasks.
func TestLineOutcomes(t *testing.T) {
	v := 2500.0
	acc := 0.011
	all := 1.0
	ev := func(d evidence.Decision) *evidence.Evidence {
		e := evidence.New()
		e.Workload.Requests = 100
		e.Workload.Objectives = []evidence.Objective{{Name: "TTFT p99", Form: "p99", LimitMs: 1500, ValueMs: &v, N: 100, Over: 40, Unit: "tasks", Status: evidence.ObjectiveMissed}}
		e.Findings = []evidence.Finding{{ID: "kv-full-queue", Layer: evidence.LayerMemory, Severity: evidence.SeverityWarn, Symptom: "the pool is full", Confidence: 0.8},
			{ID: "wait-before-engine", Layer: evidence.LayerApplication, Severity: evidence.SeverityWarn, Symptom: "the first token reaches the client 840 ms after its send", Confidence: 0.8}}
		e.Decision = &d
		return e
	}
	for _, tc := range []struct {
		name string
		d    evidence.Decision
		want []string
		not  string
	}{
		{"owner", evidence.Decision{Outcome: "owner", Owner: evidence.LayerMemory, Finding: "kv-full-queue", Confidence: 0.8, Missed: []string{"TTFT p99"}, AcceptanceRate: &acc},
			[]string{"The memory layer (KV cache) limits accepted tasks: the pool is full (confidence 0.80)", "missed: TTFT p99 2500 ms > 1500 ms (+67%)", "1.1% of warm tasks accepted"}, "Nothing limits"},
		{"owner of a percentile miss alone", evidence.Decision{Outcome: "owner", Owner: evidence.LayerMemory, Finding: "kv-full-queue", Confidence: 0.8, Missed: []string{"TTFT p99"}, AcceptanceRate: &all},
			[]string{"The memory layer (KV cache) limits the contract's objectives (no task was rejected): the pool is full", "missed: TTFT p99 2500 ms > 1500 ms (+67%)", "100.0% of warm tasks accepted"}, "limits accepted tasks"},
		{"owner of the rejections, another finding of the missed objective", evidence.Decision{Outcome: "owner", Owner: evidence.LayerMemory, Finding: "kv-full-queue", Confidence: 0.8, Missed: []string{"TTFT p99"}, MissedBy: "wait-before-engine", AcceptanceRate: &acc},
			[]string{"The memory layer (KV cache) limits accepted tasks: the pool is full (confidence 0.80)", "missed: TTFT p99 2500 ms > 1500 ms (+67%) — those objectives are the application layer's: the first token reaches the client 840 ms after its send (wait-before-engine, confidence 0.80)"}, "Nothing limits"},
		{"undecided", evidence.Decision{Outcome: "undecided", Missed: []string{"TTFT p99"}, Candidates: []evidence.Layer{"memory", "scheduling"}, Probe: "engine /metrics", AcceptanceRate: &acc},
			[]string{"No layer identified: the run misses TTFT p99 2500 ms > 1500 ms", "the leading candidates are memory and scheduling", "the probe that separates them: engine /metrics"}, "Nothing limits"},
		{"measuring side", evidence.Decision{Outcome: "measuring_side", Why: "the load generator ran late"}, []string{"No layer identified: the load generator ran late"}, "Nothing limits"},
		{"none with a miss is no 'nothing'", evidence.Decision{Outcome: "none", Missed: []string{"TTFT p99"}}, []string{"No layer identified: the run misses TTFT p99"}, "Nothing limits"},
		{"unknown outcome", evidence.Decision{Outcome: "something new"}, []string{"No layer identified"}, "Nothing limits"},
		{"none", evidence.Decision{Outcome: "none", AcceptanceRate: &acc}, []string{"Nothing limits accepted tasks under this contract (1.1% of warm tasks accepted)"}, "No layer"},
	} {
		got := Line(ev(tc.d))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		if strings.Contains(got, tc.not) {
			t.Errorf("%s: %q says %q", tc.name, got, tc.not)
		}
	}
	if Line(evidence.New()) != "" {
		t.Error("evidence without a decision has a verdict")
	}
}

// TestLossLead: what rejected the tasks leads when it was not a latency objective.
func TestLossLead(t *testing.T) {
	for _, tc := range []struct {
		l    *evidence.Losses
		want string
	}{
		{nil, ""},
		{&evidence.Losses{Tasks: 10, Rejected: 10, Errors: 10, Failed: 10, Classes: []evidence.LossCount{{Name: "overloaded", N: 10, Message: "http 503"}}}, "Every warm task failed (overloaded ×10: http 503). "},
		{&evidence.Losses{Tasks: 10, Rejected: 6, Errors: 4, Failed: 4, Classes: []evidence.LossCount{{Name: "server_error", N: 4}}}, "Most rejected tasks were errors (4 of 6: server_error ×4). "},
		{&evidence.Losses{Tasks: 10, Rejected: 6, Checks: 4, CheckNames: []evidence.LossCount{{Name: "check json", N: 4}}}, "Most rejected tasks failed output checks (4 of 6: check json ×4): the outputs, not a performance layer. "},
		{&evidence.Losses{Tasks: 10, Rejected: 6, Errors: 1, Checks: 1}, ""},
	} {
		if got := lossLead(tc.l); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

// TestRetryLead: the retries the contract allowed, and what the run's retry budget denied,
// with the saves one more attempt each would have made at the run's attempt success rate.
func TestRetryLead(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *evidence.Losses
		want string
	}{
		{"none", nil, ""},
		{"no retries", &evidence.Losses{Tasks: 10, Rejected: 2, Errors: 2}, ""},
		{"retried, budget left", &evidence.Losses{Tasks: 40, Retried: 9, Retries: 10, AttemptSuccess: 0.8},
			"9 of 40 warm tasks needed a retry (10 retries in all); the run's retry budget did not run out. "},
		// 4 denied at 75% attempt success: 3 saved.
		{"budget ran out", &evidence.Losses{Tasks: 40, Rejected: 4, Errors: 4, Retried: 10, Retries: 10, RetryDenied: 4, AttemptSuccess: 0.75},
			"10 of 40 warm tasks needed a retry (10 retries in all); the run's retry budget ran out: 4 tasks failed in a way the contract retries and got no retry; one more attempt each would have saved about 3 of them (75% of this run's attempts succeeded). "},
		// A sampled run counts denied tasks but not attempts: no saving is claimed.
		{"sampled", &evidence.Losses{Tasks: 40, Rejected: 4, Errors: 4, RetryDenied: 4},
			"the run's retry budget ran out: 4 tasks failed in a way the contract retries and got no retry. "},
	} {
		if got := retryLead(tc.l); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
