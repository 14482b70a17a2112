package stats

import "github.com/pel-ladder/pel/record"

// AcceptanceTerms returns each task's term of the acceptance rate of recs: 1 for an accepted
// task, 0 for any other. Every task has a term: failed, timed-out, rejected and cancelled
// alike. A cancelled task was offered under the contract and not accepted (its reason is
// "cancelled"); leaving it out would let a run stopped while its slowest tasks were still in
// flight, or a tool that cancels requests on purpose, report a rate over only the tasks that
// got through. The rate is the terms' mean: Summarize's AcceptanceRate (client.acceptance_rate),
// and the values the bootstrap resamples for an acceptance rollback trigger (package diagnose)
// and for pel compare's candidate, so a trigger's bound and the figure checked against it
// are one quantity.
func AcceptanceTerms(recs []*record.Record) []float64 {
	out := make([]float64, len(recs))
	for i, r := range recs {
		if r.Accepted {
			out[i] = 1
		}
	}
	return out
}

// AcceptanceRate is the acceptance rate of recs, the mean of their AcceptanceTerms; ok is
// false for no tasks.
func AcceptanceRate(recs []*record.Record) (rate float64, ok bool) {
	if len(recs) == 0 {
		return 0, false
	}
	s := 0.0
	for _, x := range AcceptanceTerms(recs) {
		s += x
	}
	return s / float64(len(recs)), true
}
