package stats

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// TestAcceptanceTerms: every task of the set is a term of the acceptance rate, accepted ones
// 1 and the rest 0, cancelled tasks included, and the terms' mean is the rate Summarize
// reports (client.acceptance_rate), the one figure a rollback trigger bounds and pel compare
// measures.
func TestAcceptanceTerms(t *testing.T) {
	ok := spec{sched: 0, sent: 0, chunkMs: []float64{5, 10}, tokens: []int{1, 1}, done: 12, accepted: true}
	checkFail := spec{sched: 1, sent: 1, chunkMs: []float64{5}, tokens: []int{1}, done: 7, reasons: []string{"check regex"}}
	timeout := spec{sched: 2, sent: 2, done: 60, status: record.StatusTimeout, reasons: []string{"error: timeout"}}
	httpErr := spec{sched: 3, sent: 3, done: 4, status: record.StatusHTTPError, reasons: []string{"error: http 500"}}
	cancelled := spec{sched: 4, sent: 4, chunkMs: []float64{5}, tokens: []int{1}, done: 9, status: record.StatusCancelled, reasons: []string{"cancelled"}}
	cases := []struct {
		name  string
		tasks []spec
		terms []float64
	}{
		{"all accepted", []spec{ok, ok}, []float64{1, 1}},
		{"check failure rejects", []spec{ok, checkFail}, []float64{1, 0}},
		{"errors stay in the denominator", []spec{ok, timeout, httpErr}, []float64{1, 0, 0}},
		{"cancelled stays in the denominator", []spec{ok, ok, ok, cancelled}, []float64{1, 1, 1, 0}},
		{"only cancelled", []spec{cancelled, cancelled}, []float64{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := make([]record.Record, len(c.tasks))
			for i, s := range c.tasks {
				rs[i] = rec(s)
			}
			got := AcceptanceTerms(ptrs(rs))
			if len(got) != len(c.terms) {
				t.Fatalf("%d terms for %d tasks", len(got), len(c.terms))
			}
			sum := 0.0
			for i := range got {
				if got[i] != c.terms[i] {
					t.Errorf("task %d (%s): term %v, want %v", i, rs[i].Status, got[i], c.terms[i])
				}
				sum += got[i]
			}
			rate, ok := AcceptanceRate(ptrs(rs))
			if !ok || rate != sum/float64(len(got)) {
				t.Errorf("AcceptanceRate %v (ok %v), the terms' mean %v", rate, ok, sum/float64(len(got)))
			}
			if s := Summarize(ptrs(rs), time.Second, 0); s.AcceptanceRate != round6(rate) {
				t.Errorf("Summarize's acceptance rate %v, AcceptanceRate %v", s.AcceptanceRate, rate)
			}
		})
	}
	if _, ok := AcceptanceRate(nil); ok {
		t.Error("an acceptance rate of no tasks")
	}
}
