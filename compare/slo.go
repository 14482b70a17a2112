package compare

import (
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
	Checks []Check `json:"checks"`
}

// CheckSLO judges one run's primary phase against the percentile SLO bounds its contract
// sets (globally and per task). A sweep uses it to tell which loads meet the contract.
func CheckSLO(r *Run, o Options) SLOResult {
	o.defaults()
	phase := primaryPhase(r.Records)
	recs := filterPhase(r.Records, phase)
	res := SLOResult{Phase: phase, Tasks: len(recs), Checks: []Check{}}
	if a, ok := stats.AcceptanceRate(recs); ok {
		res.AcceptanceRate = a
	}
	judgeAll := func(scope string, rs []*record.Record, bounds []sloBound) {
		if len(bounds) == 0 {
			return
		}
		sts := make([]stat, len(bounds))
		for i, b := range bounds {
			sts[i] = b.st
		}
		s := newSide(rs, 0)
		b := s.bootstrap(sts, o.Resamples, rng(o.Seed, "slo/"+scope, phase))
		for i, bd := range bounds {
			ch := Check{Source: "contract slo", Signal: bd.signal, Op: ">", Bound: bd.bound, Unit: "ms", Scope: scope}
			judge(&ch, s, bd.st, b.point[i], b.reps[i], o.Level)
			res.Checks = append(res.Checks, ch)
		}
	}
	judgeAll("all tasks", recs, sloBounds(r.Contract.SLO))
	for _, t := range r.Contract.Tasks {
		if t.SLO != nil {
			judgeAll("task "+t.Name, filterTask(recs, t.Name), sloBounds(*t.SLO))
		}
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
