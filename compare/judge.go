package compare

import (
	"math/rand/v2"

	"github.com/pel-ladder/pel/contract"
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

// CheckBounds judges the run's tasks of phase (task "": all of them; else those of that
// task type, to which the run's contract gives percentile bounds of its own) against the
// percentile bounds slo sets, as a comparison judges its candidate side (the point value,
// its interval, pass/fail/uncertain), each check under scope. key and phase seed the
// bootstrap. No bounds: none. It reads the run's summary, so it comes after the last Add.
func (r *Run) CheckBounds(phase, task string, slo contract.SLO, scope, key string, o Options) ([]Check, error) {
	o.defaults()
	bounds := sloBounds(slo)
	if len(bounds) == 0 {
		return nil, nil
	}
	sum, err := r.summary()
	if err != nil {
		return nil, err
	}
	sts := make([]stat, len(bounds))
	for i, b := range bounds {
		sts[i] = b.st
	}
	ps := sum.phases[phase]
	s := ps.side(0)
	if task != "" {
		s = ps.taskSide(task)
	}
	b := s.bootstrap(sts, o.Resamples, rng(o.Seed, key, phase))
	out := make([]Check, 0, len(bounds))
	for i, bd := range bounds {
		ch := Check{Source: "contract slo", Signal: bd.signal, Op: ">", Bound: bd.bound, Unit: "ms", Scope: scope}
		judge(&ch, s, bd.st, b.point[i], b.reps[i], o.Level)
		out = append(out, ch)
	}
	return out, nil
}

// SLOBound is one percentile bound of an SLO, as comparisons and sweeps check it.
type SLOBound struct {
	Signal   string  // e.g. client.ttft_p99_ms
	Metric   string  // ttft, itl, tpot, e2e
	Quantile float64 // in (0, 1]
	BoundMs  float64
}

// SLOBounds lists the percentile bounds an SLO sets, per metric (ttft, itl, tpot, e2e) in
// ascending quantile: the bounds CheckBounds judges, named as it names them.
func SLOBounds(s contract.SLO) []SLOBound {
	var out []SLOBound
	for _, b := range sloBounds(s) {
		out = append(out, SLOBound{Signal: b.signal, Metric: b.metric, Quantile: b.st.q, BoundMs: b.bound})
	}
	return out
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
