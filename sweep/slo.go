package sweep

import (
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// SLOResult is one run judged against its own contract's percentile SLO bounds.
type SLOResult struct {
	Phase string `json:"phase"` // the phase judged: warm, else canary, else cold
	Tasks int    `json:"tasks"`
	// AcceptanceRate of the phase's tasks (per-request max bounds and output checks).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// Checks are the global and per-task percentile bounds, each with the run's point
	// value, its interval and a status (pass/fail/uncertain) from the same statistics as a
	// comparison's candidate side.
	Checks []compare.Check `json:"checks"`
}

// CheckSLO judges one run's primary phase against the percentile SLO bounds its contract
// sets (globally and per task): which loads meet the contract.
func CheckSLO(r *compare.Run, o compare.Options) SLOResult {
	phase := primaryPhase(r.Records)
	var recs []*record.Record
	for i := range r.Records {
		if r.Records[i].Phase == phase {
			recs = append(recs, &r.Records[i])
		}
	}
	res := SLOResult{Phase: phase, Tasks: len(recs), Checks: []compare.Check{}}
	if a, ok := stats.AcceptanceRate(recs); ok {
		res.AcceptanceRate = a
	}
	res.Checks = append(res.Checks, compare.CheckBounds(recs, r.Contract.SLO, "all tasks", "slo/all tasks", phase, o)...)
	for _, t := range r.Contract.Tasks {
		if t.SLO == nil {
			continue
		}
		var of []*record.Record
		for _, rec := range recs {
			if rec.Task == t.Name {
				of = append(of, rec)
			}
		}
		res.Checks = append(res.Checks, compare.CheckBounds(of, *t.SLO, "task "+t.Name, "slo/task "+t.Name, phase, o)...)
	}
	return res
}

// primaryPhase is the phase a single run is judged on: warm, else canary, else cold, else
// whatever its first record says.
func primaryPhase(recs []record.Record) string {
	have := map[string]bool{}
	for i := range recs {
		have[recs[i].Phase] = true
	}
	for _, p := range []string{record.PhaseWarm, record.PhaseCanary, record.PhaseCold} {
		if have[p] {
			return p
		}
	}
	if len(recs) > 0 {
		return recs[0].Phase
	}
	return record.PhaseWarm
}
