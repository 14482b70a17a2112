package resample

import (
	"math/bits"
	"slices"
)

// Pool builds Clustered distributions and per-cluster sums from tasks streamed one at a
// time, in memory bounded by the number of clusters and of distinct (value, cluster) pairs,
// never by the number of tasks or values.
//
// Task i (0-based, in the order Next is called) belongs to cluster i mod k. k starts at the
// Pool's maximum, so a run of at most that many tasks has one cluster per task and its
// bootstrap is the task bootstrap itself. Fold lowers k to the largest power of two below the clusters
// in use and merges cluster c into c mod k, which keeps "task i is in cluster i mod k" true for every task
// seen and to come (k is a power of two, so a fold of i mod k is i mod k/2). Because consecutive tasks go to different clusters, each cluster is a
// systematic sample of the whole run, the clusters are exchangeable, and resampling them
// with replacement is a cluster bootstrap of the run (its intervals rest on the cluster
// count: Clusters).
type Pool struct {
	k, tasks int
	cur      int32
	series   []map[key]int64 // per series: (value, cluster) -> count
	sums     [][]float64     // [sum][cluster]
	per      [][]int64       // [series][cluster] values
	n        []int64         // [cluster] tasks
	entries  int
}

type key struct {
	v float64
	c int32
}

// NewPool holds series distributions and sums per-cluster sums, with at most maxClusters
// clusters, rounded down to a power of two (at least 1).
func NewPool(series, sums, maxClusters int) *Pool {
	p := &Pool{k: 1 << (bits.Len(uint(max(maxClusters, 1))) - 1), series: make([]map[key]int64, series), sums: make([][]float64, sums), per: make([][]int64, series)}
	for i := range p.series {
		p.series[i] = map[key]int64{}
	}
	return p
}

// Next starts the next task: Add and AddSum go to its cluster until the next call.
func (p *Pool) Next() {
	c := p.tasks % p.k
	p.tasks++
	p.cur = int32(c)
	if c == len(p.n) {
		p.n = append(p.n, 0)
		for i := range p.sums {
			p.sums[i] = append(p.sums[i], 0)
		}
		for i := range p.per {
			p.per[i] = append(p.per[i], 0)
		}
	}
	p.n[c]++
}

// clusters is the number of clusters in use.
func (p *Pool) clusters() int { return len(p.n) }

// Add records n occurrences of value v in series s for the current task.
func (p *Pool) Add(s int, v float64, n int64) {
	if n <= 0 || p.tasks == 0 {
		return
	}
	k := key{v, p.cur}
	if _, ok := p.series[s][k]; !ok {
		p.entries++
	}
	p.series[s][k] += n
	p.per[s][p.cur] += n
}

// AddSum adds x to sum s of the current task's cluster.
func (p *Pool) AddSum(s int, x float64) {
	if p.tasks > 0 {
		p.sums[s][p.cur] += x
	}
}

// Entries is the number of distinct (value, cluster) pairs held over every series: the
// Pool's memory, and each resample's work.
func (p *Pool) Entries() int { return p.entries }

// Tasks is the number of tasks started.
func (p *Pool) Tasks() int { return p.tasks }

// Clusters is the number of clusters the tasks fill: a resample's weights.
func (p *Pool) Clusters() int { return p.clusters() }

// Fold halves the clusters in use (see Pool); false when there is one cluster or none
// left to merge.
func (p *Pool) Fold() bool {
	used := p.clusters()
	if used <= 1 || p.tasks == 0 {
		return false
	}
	k := 1 << (bits.Len(uint(used-1)) - 1) // the largest power of two below used
	for i, m := range p.series {
		out := make(map[key]int64, len(m))
		for e, n := range m {
			out[key{e.v, e.c % int32(k)}] += n
		}
		p.series[i] = out
	}
	p.entries = 0
	for _, m := range p.series {
		p.entries += len(m)
	}
	fold := func(xs []float64) []float64 {
		for c := k; c < len(xs); c++ {
			xs[c%k] += xs[c]
		}
		return xs[:k]
	}
	for i := range p.sums {
		p.sums[i] = fold(p.sums[i])
	}
	foldInt := func(xs []int64) []int64 {
		for c := k; c < len(xs); c++ {
			xs[c%k] += xs[c]
		}
		return xs[:k]
	}
	for i := range p.per {
		p.per[i] = foldInt(p.per[i])
	}
	p.n = foldInt(p.n)
	p.k = k
	p.cur %= int32(k)
	return true
}

// Clustered is series s's distribution, one cluster per Clusters.
func (p *Pool) Clustered(s int) Clustered {
	all := make([]entry, 0, len(p.series[s]))
	for e, n := range p.series[s] {
		all = append(all, entry{e.v, e.c, n})
	}
	return build(all, slices.Clone(p.per[s]))
}

// Sums is sum s per cluster.
func (p *Pool) Sums(s int) []float64 { return slices.Clone(p.sums[s]) }

// TaskCounts is the number of tasks per cluster.
func (p *Pool) TaskCounts() []int64 { return slices.Clone(p.n) }

// Release lets series s's pairs go (once its Clustered is built); the Pool no longer holds
// or counts them.
func (p *Pool) Release(s int) {
	p.entries -= len(p.series[s])
	p.series[s] = map[key]int64{}
}
