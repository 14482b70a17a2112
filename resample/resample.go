package resample

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/pel-ladder/pel/quantile"
)

// Clustered holds values that belong to tasks, pooled and sorted once.
type Clustered struct {
	vals  []float64 // ascending
	owner []int     // task index of vals[i]
	per   []int     // values per task
}

// NewClustered pools per[i], the values of task i (possibly none).
func NewClustered(per [][]float64) Clustered {
	type vo struct {
		v float64
		o int
	}
	var all []vo
	c := Clustered{per: make([]int, len(per))}
	for i, xs := range per {
		c.per[i] = len(xs)
		for _, x := range xs {
			all = append(all, vo{x, i})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	c.vals = make([]float64, len(all))
	c.owner = make([]int, len(all))
	for i, x := range all {
		c.vals[i], c.owner[i] = x.v, x.o
	}
	return c
}

// Len is the number of pooled values.
func (c *Clustered) Len() int { return len(c.vals) }

// Value is the i-th smallest pooled value, from 0 (order statistic i+1).
func (c *Clustered) Value(i int) float64 { return c.vals[i] }

// Tasks is the number of tasks (weights a resample must give).
func (c *Clustered) Tasks() int { return len(c.per) }

// Quantiles writes to out the qs-quantiles (qs ascending, in (0, 1]) of the values when task
// i counts w[i] times, in one pass; NaN when no value has weight. They are package
// quantile's estimator (rank ⌈q·total⌉ over the weights' total), so a unit-weight quantile
// of values as recorded (quantile.RecordedMs) is the figure stage 1 reports.
func (c *Clustered) Quantiles(w []int, qs []float64, out []float64) {
	total := 0
	for i, k := range w {
		total += k * c.per[i]
	}
	if total == 0 {
		for i := range qs {
			out[i] = math.NaN()
		}
		return
	}
	j, cum := 0, 0
	for i, v := range c.vals {
		cum += w[c.owner[i]]
		for j < len(qs) && cum >= quantile.Rank(total, qs[j]) {
			out[j] = v
			j++
		}
		if j == len(qs) {
			return
		}
	}
	for ; j < len(qs); j++ {
		out[j] = c.vals[len(c.vals)-1]
	}
}

// Quantile is Quantiles for one q.
func (c *Clustered) Quantile(w []int, q float64) float64 {
	var out [1]float64
	c.Quantiles(w, []float64{q}, out[:])
	return out[0]
}

// MinSamples is the fewest values for which a distribution-free interval of the q-quantile
// at this level is bounded on both sides: the sample extremes must cover the quantile with
// probability level, i.e. max(q, 1-q)^n <= (1-level)/2. For the median at 95% it is 6
// (benchstat's "need >= 6 samples"); for a p99 it is 368. Below it, a bootstrap interval of
// the quantile is an interval of the sample's extreme value.
func MinSamples(q, level float64) int {
	p := math.Max(q, 1-q)
	if p >= 1 {
		return math.MaxInt32
	}
	return int(math.Ceil(math.Log((1-level)/2) / math.Log(p)))
}

// Unit sets every weight to 1: the sample itself.
func Unit(w []int) {
	for i := range w {
		w[i] = 1
	}
}

// Draw overwrites w with one bootstrap resample of len(w) tasks: len(w) draws with
// replacement, w[i] counting how often task i was drawn. rng should be seeded so the same
// inputs give the same intervals.
func Draw(rng *rand.Rand, w []int) {
	clear(w)
	n := len(w)
	for range n {
		w[rng.IntN(n)]++
	}
}

// Bootstrap calls stat on the sample of n tasks itself (r -1, every weight 1) and then on b
// resamples of it (r 0 to b-1, Draw with rng): the one percentile bootstrap behind pel's
// intervals. w is reused between calls.
func Bootstrap(n, b int, rng *rand.Rand, stat func(r int, w []int)) {
	w := make([]int, n)
	Unit(w)
	stat(-1, w)
	for r := range b {
		Draw(rng, w)
		stat(r, w)
	}
}

// PercentileCI is the central level interval (0.95: the 2.5th to 97.5th percentile) of the
// finite values of xs (left as they are); ok is false when fewer than half the
// resamples gave a value (a statistic that mostly does not exist has no interval).
func PercentileCI(xs []float64, level float64) (lo, hi float64, ok bool) {
	fin := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			fin = append(fin, x)
		}
	}
	if len(fin) == 0 || len(fin) < len(xs)/2 {
		return 0, 0, false
	}
	sort.Float64s(fin)
	// A bootstrap distribution is a smooth distribution of a statistic, not measured
	// latencies: its percentiles interpolate (package quantile's one exception).
	a := (1 - level) / 2
	return quantile.Linear(fin, a), quantile.Linear(fin, 1-a), true
}
