package resample

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/pel-ladder/pel/quantile"
)

// Clustered holds values that belong to clusters (a task, or a fold of tasks: Pool), pooled
// and sorted once. Equal values of one cluster are held once with their count, so a
// distribution of recorded values (quantile.Recorded: at most a few tens of thousands of
// distinct values) costs memory by distinct (value, cluster) pairs, not by values.
type Clustered struct {
	vals  []float64 // ascending
	owner []int32   // cluster of vals[i]
	count []int64   // how many times vals[i] occurs in its cluster
	cum   []int64   // count[0] + … + count[i]
	per   []int64   // values per cluster
}

// NewClustered pools per[i], the values of task i (possibly none).
func NewClustered(per [][]float64) Clustered {
	var all []entry
	counts := make([]int64, len(per))
	for i, xs := range per {
		counts[i] = int64(len(xs))
		for _, x := range xs {
			all = append(all, entry{x, int32(i), 1})
		}
	}
	return build(all, counts)
}

// NewClusteredRuns pools per[i], the values of task i as runs of equal values (a content
// event's tokens share one latency, record.ITLRuns), at a cost per run, not per value.
func NewClusteredRuns(per [][]quantile.Weighted) Clustered {
	var all []entry
	counts := make([]int64, len(per))
	for i, ws := range per {
		for _, w := range ws {
			if w.N > 0 {
				counts[i] += w.N
				all = append(all, entry{w.V, int32(i), w.N})
			}
		}
	}
	return build(all, counts)
}

// entry is count occurrences of value v in cluster c.
type entry struct {
	v     float64
	c     int32
	count int64
}

// build sorts the entries by value (then cluster, so the layout is deterministic), merges
// equal pairs and indexes them.
func build(all []entry, per []int64) Clustered {
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v < all[j].v
		}
		return all[i].c < all[j].c
	})
	c := Clustered{per: per}
	for _, e := range all {
		if n := len(c.vals); n > 0 && c.vals[n-1] == e.v && c.owner[n-1] == e.c {
			c.count[n-1] += e.count
			c.cum[n-1] += e.count
			continue
		}
		prev := int64(0)
		if n := len(c.cum); n > 0 {
			prev = c.cum[n-1]
		}
		c.vals = append(c.vals, e.v)
		c.owner = append(c.owner, e.c)
		c.count = append(c.count, e.count)
		c.cum = append(c.cum, prev+e.count)
	}
	return c
}

// Len is the number of pooled values.
func (c *Clustered) Len() int {
	if len(c.cum) == 0 {
		return 0
	}
	return int(c.cum[len(c.cum)-1])
}

// Value is the i-th smallest pooled value, from 0 (order statistic i+1).
func (c *Clustered) Value(i int) float64 {
	k := sort.Search(len(c.cum), func(j int) bool { return c.cum[j] > int64(i) })
	return c.vals[k]
}

// Tasks is the number of clusters (weights a resample must give): the tasks, unless a Pool
// folded them.
func (c *Clustered) Tasks() int { return len(c.per) }

// Quantiles writes to out the qs-quantiles (qs ascending, in (0, 1]) of the values when
// cluster i counts w[i] times; NaN when no value has weight. They are package quantile's
// estimator (rank ⌈q·total⌉ over the weights' total), so a unit-weight quantile of values as
// recorded (quantile.RecordedMs) is the figure stage 1 reports. A quantile in the lower half
// is found walking up from the smallest value, one in the upper half walking down from the
// largest, so a p99 reads about 1% of the pooled pairs.
func (c *Clustered) Quantiles(w []int, qs []float64, out []float64) {
	total := int64(0)
	for i, k := range w {
		total += int64(k) * c.per[i]
	}
	if total == 0 {
		for i := range qs {
			out[i] = math.NaN()
		}
		return
	}
	split := 0 // qs[:split] walk up, qs[split:] walk down
	for split < len(qs) && 2*int64(quantile.Rank(int(total), qs[split])) <= total {
		split++
	}
	j, cum := 0, int64(0)
	for i := 0; i < len(c.vals) && j < split; i++ {
		cum += int64(w[c.owner[i]]) * c.count[i]
		for j < split && cum >= int64(quantile.Rank(int(total), qs[j])) {
			out[j] = c.vals[i]
			j++
		}
	}
	// Rank k is the value where the weight at or above it first reaches total − k + 1.
	j, top := len(qs)-1, int64(0)
	for i := len(c.vals) - 1; i >= 0 && j >= split; i-- {
		top += int64(w[c.owner[i]]) * c.count[i]
		for j >= split && top >= total-int64(quantile.Rank(int(total), qs[j]))+1 {
			out[j] = c.vals[i]
			j--
		}
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
