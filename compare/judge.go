package compare

import (
	"math/rand/v2"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
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

// CheckBounds judges recs against the percentile bounds slo sets, as a comparison judges
// its candidate side (the point value, its interval, pass/fail/uncertain), each check
// under scope. key and phase seed the bootstrap. No bounds: none.
func CheckBounds(recs []*record.Record, slo contract.SLO, scope, key, phase string, o Options) []Check {
	o.defaults()
	bounds := sloBounds(slo)
	if len(bounds) == 0 {
		return nil
	}
	sts := make([]stat, len(bounds))
	for i, b := range bounds {
		sts[i] = b.st
	}
	s := newSide(recs, 0)
	b := s.bootstrap(sts, o.Resamples, rng(o.Seed, key, phase))
	out := make([]Check, 0, len(bounds))
	for i, bd := range bounds {
		ch := Check{Source: "contract slo", Signal: bd.signal, Op: ">", Bound: bd.bound, Unit: "ms", Scope: scope}
		judge(&ch, s, bd.st, b.point[i], b.reps[i], o.Level)
		out = append(out, ch)
	}
	return out
}

// Window is the time span of a set of records, first scheduled to last done: the window a
// side's goodput is computed over.
func Window(rs []*record.Record) (start, end time.Time) { return window(rs) }

// OrderCI is the equal-tailed distribution-free interval of the q-quantile from n sorted
// values, as 1-based order statistics (lo 0 or hi n+1: that side unbounded); see orderCI.
func OrderCI(n int, q, level float64) (lo, hi int) { return orderCI(n, q, level) }
