package compare

import (
	"math/rand/v2"
)

// The judging primitives below are the ones a comparison applies to its candidate side;
// the live canary (package canary) and a sweep's SLO check (package sweep) judge with
// them so that a bound means the same thing wherever it is checked.

// Breach reports whether v is past the bound in op's direction; ok is false for an
// operator it does not know.
func Breach(op string, v, bound float64) (past, ok bool) { return breach(op, v, bound) }

// Needed estimates the sample size at which an interval [lo, hi] around point, from n
// values, would no longer reach the bound (its half-width shrinks as 1/√n); 0 when no
// such size is in reach.
func Needed(n int, point, lo, hi, bound float64) int { return needed(n, point, lo, hi, bound) }

// Stream is the deterministic random stream a judgement of who/phase draws its
// resamples from, under seed.
func Stream(seed uint64, who, phase string) *rand.Rand { return rng(seed, who, phase) }

// CheckObjectives judges the run's tasks of phase against every objective of its contract
// (contract.Objectives), each over the tasks it governs, as a comparison judges its
// candidate side (the point value, its interval, pass/fail/uncertain; a per-request max
// with its worst value, StatusPerRequest). key and phase seed the bootstrap. No objectives:
// none. It reads the run's summary, so it comes after the last Add.
func (r *Run) CheckObjectives(phase, key string, o Options) ([]Check, error) {
	o.defaults()
	groups := objectiveGroups(r.Contract, key+"/")
	if len(groups) == 0 {
		return nil, nil
	}
	sum, err := r.summary()
	if err != nil {
		return nil, err
	}
	ps := sum.phases[phase]
	var out []Check
	for _, g := range groups {
		sts := objectiveStats(g.objs)
		s := ps.groupSide(g, 0)
		b := s.bootstrap(sts, o.Resamples, rng(o.Seed, g.key, phase))
		for i, ob := range g.objs {
			out = append(out, objectiveCheck(ob, g.scope, s, b.point[i], b.reps[i], o.Level))
		}
	}
	return out, nil
}

// AcceptanceRate is the acceptance rate of the run's tasks of phase (stats.AcceptanceRate
// of them) and their number; ok is false for none. It comes after the last Add.
func (r *Run) AcceptanceRate(phase string) (rate float64, tasks int, ok bool, err error) {
	sum, err := r.summary()
	if err != nil {
		return 0, 0, false, err
	}
	ps := sum.phases[phase]
	if ps == nil || ps.all.n == 0 {
		return 0, 0, false, nil
	}
	s := ps.side(0)
	acc := 0.0
	for _, x := range s.acc {
		acc += x
	}
	return acc / float64(s.n), s.n, true, nil
}

// OrderCI is the equal-tailed distribution-free interval of the q-quantile from n sorted
// values, as 1-based order statistics (lo 0 or hi n+1: that side unbounded); see orderCI.
func OrderCI(n int, q, level float64) (lo, hi int) { return orderCI(n, q, level) }
