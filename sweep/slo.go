package sweep

import (
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/record"
)

// SLOResult is one run judged against its own contract's percentile SLO bounds.
type SLOResult struct {
	Phase string `json:"phase"` // the phase judged: warm, else canary, else cold
	Tasks int    `json:"tasks"`
	// AcceptanceRate of the phase's tasks (per-request max bounds and output checks).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// Checks are the contract's objectives, global and per task, each with the run's point
	// value, its interval and a status (pass/fail/uncertain; per_request for a max) from the
	// same statistics as a comparison's candidate side.
	Checks []compare.Check `json:"checks"`
}

// CheckSLO judges one run's primary phase against the percentile SLO bounds its contract
// sets (globally and per task): which loads meet the contract. It reads the run's bounded
// summary (compare.Run), never its records.
func CheckSLO(r *compare.Run, o compare.Options) (SLOResult, error) {
	phases, err := r.Phases()
	if err != nil {
		return SLOResult{}, err
	}
	phase := primaryPhase(phases)
	res := SLOResult{Phase: phase, Checks: []compare.Check{}}
	if a, n, ok, err := r.AcceptanceRate(phase); err != nil {
		return SLOResult{}, err
	} else if ok {
		res.AcceptanceRate, res.Tasks = a, n
	}
	checks, err := r.CheckObjectives(phase, "slo", o)
	if err != nil {
		return SLOResult{}, err
	}
	res.Checks = append(res.Checks, checks...)
	return res, nil
}

// primaryPhase is the phase a single run is judged on: warm, else canary, else cold, else
// the first phase read (phases, in read order).
func primaryPhase(phases []string) string {
	have := map[string]bool{}
	for _, p := range phases {
		have[p] = true
	}
	for _, p := range []string{record.PhaseWarm, record.PhaseCanary, record.PhaseCold} {
		if have[p] {
			return p
		}
	}
	if len(phases) > 0 {
		return phases[0]
	}
	return record.PhaseWarm
}
