package resample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pel-ladder/pel/quantile"
)

// expand is the weighted sample itself: every value of cluster i repeated w[i] times.
func expand(per [][]float64, w []int) []float64 {
	var out []float64
	for i, xs := range per {
		for range w[i] {
			out = append(out, xs...)
		}
	}
	slices.Sort(out)
	return out
}

// TestQuantilesAgainstExpandedSample: the one-pass weighted quantiles (walking up for the
// lower half, down for the upper) are the nearest-rank quantiles of the sample a resample
// stands for, ties and empty tasks included.
func TestQuantilesAgainstExpandedSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	qs := []float64{0.01, 0.25, 0.5, 0.51, 0.9, 0.99, 1}
	for trial := range 200 {
		n := 1 + rng.IntN(30)
		per := make([][]float64, n)
		for i := range per {
			for range rng.IntN(6) {
				per[i] = append(per[i], float64(rng.IntN(8))) // few distinct values: ties
			}
		}
		w := make([]int, n)
		Draw(rng, w)
		c := NewClustered(per)
		got := make([]float64, len(qs))
		c.Quantiles(w, qs, got)
		all := expand(per, w)
		for i, q := range qs {
			want := quantile.Sorted(all, q)
			if !(got[i] == want || math.IsNaN(got[i]) && math.IsNaN(want)) {
				t.Fatalf("trial %d: q%g = %v, want %v (weights %v, values %v)", trial, q, got[i], want, w, per)
			}
		}
	}
}

// TestPoolUnfolded: a Pool of no more tasks than its clusters is the task bootstrap itself:
// the same distribution as NewClustered of the tasks, whatever weights a resample gives.
func TestPoolUnfolded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	per := make([][]float64, 40)
	p := NewPool(1, 1, 64)
	for i := range per {
		p.Next()
		p.AddSum(0, float64(i))
		for range rng.IntN(5) {
			v := float64(rng.IntN(20))
			per[i] = append(per[i], v)
			p.Add(0, v, 1)
		}
	}
	if p.Clusters() != 40 {
		t.Fatalf("%d clusters for 40 tasks under a maximum of 64", p.Clusters())
	}
	a, b := NewClustered(per), p.Clustered(0)
	qs := []float64{0.5, 0.99}
	for range 50 {
		w := make([]int, 40)
		Draw(rng, w)
		x, y := make([]float64, 2), make([]float64, 2)
		a.Quantiles(w, qs, x)
		b.Quantiles(w, qs, y)
		if !(x[0] == y[0] || math.IsNaN(x[0]) && math.IsNaN(y[0])) || !(x[1] == y[1] || math.IsNaN(x[1]) && math.IsNaN(y[1])) {
			t.Fatalf("weights %v: pool %v, tasks %v", w, y, x)
		}
	}
	if a.Len() != b.Len() {
		t.Errorf("pool holds %d values, tasks %d", b.Len(), a.Len())
	}
	for i := range a.Len() {
		if a.Value(i) != b.Value(i) {
			t.Fatalf("order statistic %d: pool %v, tasks %v", i+1, b.Value(i), a.Value(i))
		}
	}
}

// TestPoolFold: folding keeps task i in cluster i mod k for the tasks seen and those after,
// bounds the clusters, and leaves the values and sums as they were in total.
func TestPoolFold(t *testing.T) {
	p := NewPool(1, 1, 16)
	add := func(i int) {
		p.Next()
		p.AddSum(0, float64(i))
		p.Add(0, float64(i), 2) // task i holds value i twice
	}
	for i := range 12 {
		add(i) // 12 tasks, 12 clusters
	}
	if !p.Fold() || p.Clusters() != 8 {
		t.Fatalf("fold of 12 clusters gave %d, want 8 (a power of two)", p.Clusters())
	}
	for i := 12; i < 40; i++ {
		add(i)
	}
	if !p.Fold() || p.Clusters() != 4 {
		t.Fatalf("second fold gave %d clusters, want 4", p.Clusters())
	}
	for i := 40; i < 50; i++ {
		add(i)
	}
	sums, tasks := p.Sums(0), p.TaskCounts()
	c := p.Clustered(0)
	for k := range 4 {
		want, n := 0.0, int64(0)
		for i := k; i < 50; i += 4 {
			want += float64(i)
			n++
		}
		if sums[k] != want || tasks[k] != n {
			t.Errorf("cluster %d: sum %v over %d tasks, want %v over %d (tasks i ≡ %d mod 4)", k, sums[k], tasks[k], want, n, k)
		}
		// Weight only cluster k: its values are exactly the tasks i ≡ k (mod 4).
		w := make([]int, 4)
		w[k] = 1
		if got := c.Quantile(w, 1); int(got)%4 != k {
			t.Errorf("cluster %d holds value %v", k, got)
		}
	}
	if c.Len() != 100 {
		t.Errorf("%d values after folding, want 100", c.Len())
	}
	if p.Entries() != 50 {
		t.Errorf("%d pairs, want 50 (each task's one value, in one cluster)", p.Entries())
	}
}

// TestPoolBounded: the clusters never exceed the maximum (rounded down to a power of two),
// whatever the number of tasks.
func TestPoolBounded(t *testing.T) {
	p := NewPool(1, 0, 100)
	for i := range 10_000 {
		p.Next()
		p.Add(0, float64(i%7), 1)
	}
	if p.Clusters() != 64 {
		t.Errorf("%d clusters, want 64", p.Clusters())
	}
	if p.Entries() > 64*7 {
		t.Errorf("%d pairs, over 64 clusters × 7 values", p.Entries())
	}
	if c := p.Clustered(0); c.Len() != 10_000 {
		t.Errorf("%d values, want 10000", c.Len())
	}
}
