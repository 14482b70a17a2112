package resample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQuantiles(t *testing.T) {
	tests := []struct {
		name string
		per  [][]float64
		w    []int
		qs   []float64
		want []float64
	}{
		// Unit weights give the nearest-rank order statistics.
		{"unit weights", [][]float64{{1}, {2}, {3}, {4}}, []int{1, 1, 1, 1}, []float64{0.25, 0.5, 1}, []float64{1, 2, 4}},
		// Weighting one task moves the median onto it.
		{"weights 0,0,3,1", [][]float64{{1}, {2}, {3}, {4}}, []int{0, 0, 3, 1}, []float64{0.5, 0.99}, []float64{3, 4}},
		// A task with several values moves them together.
		{"clustered", [][]float64{{1, 1, 1}, {9}}, []int{0, 2}, []float64{0.5}, []float64{9}},
		{"median of pooled values", [][]float64{{5, 1}, {3}, {}, {9, 7, 2}}, []int{1, 1, 1, 1}, []float64{0.5}, []float64{3}},
		{"one task drawn twice", [][]float64{{5, 1}, {3}, {}, {9, 7, 2}}, []int{0, 0, 0, 2}, []float64{1}, []float64{9}},
		{"no weighted value", [][]float64{{5, 1}, {3}, {}}, []int{0, 0, 4}, []float64{0.5, 0.99}, []float64{math.NaN(), math.NaN()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClustered(tc.per)
			out := make([]float64, len(tc.qs))
			c.Quantiles(tc.w, tc.qs, out)
			for i := range out {
				if !(out[i] == tc.want[i] || math.IsNaN(out[i]) && math.IsNaN(tc.want[i])) {
					t.Errorf("q%g = %v, want %v", tc.qs[i], out[i], tc.want[i])
				}
				if got := c.Quantile(tc.w, tc.qs[i]); !(got == out[i] || math.IsNaN(got) && math.IsNaN(out[i])) {
					t.Errorf("Quantile(q%g) = %v, Quantiles gave %v", tc.qs[i], got, out[i])
				}
			}
		})
	}
}

// TestDrawIsAResample: a draw keeps the task count, and the same seed gives the same draw.
func TestDrawIsAResample(t *testing.T) {
	a, b := make([]int, 50), make([]int, 50)
	Draw(rand.New(rand.NewPCG(7, 1)), a)
	Draw(rand.New(rand.NewPCG(7, 1)), b)
	sum := 0
	for i := range a {
		sum += a[i]
		if a[i] != b[i] {
			t.Fatalf("same seed, different draws at %d: %d vs %d", i, a[i], b[i])
		}
	}
	if sum != 50 {
		t.Errorf("draw holds %d tasks, want 50", sum)
	}
	Unit(a)
	for _, k := range a {
		if k != 1 {
			t.Fatalf("Unit left weight %d", k)
		}
	}
}

func TestPercentileCI(t *testing.T) {
	xs := make([]float64, 101)
	for i := range xs {
		xs[100-i] = float64(i) // descending: PercentileCI sorts a copy
	}
	lo, hi, ok := PercentileCI(xs, 0.9)
	if !ok || math.Abs(lo-5) > 1e-9 || math.Abs(hi-95) > 1e-9 {
		t.Errorf("90%% interval of 0..100 = [%v, %v] %v, want [5, 95]", lo, hi, ok)
	}
	if xs[0] != 100 {
		t.Error("PercentileCI reordered its input")
	}
	// NaN resamples (no value had weight) are left out, unless they are the majority.
	if lo, hi, ok := PercentileCI([]float64{math.NaN(), 1, 2, 3}, 0.5); !ok || lo != 1.5 || hi != 2.5 {
		t.Errorf("with one NaN: [%v, %v] %v", lo, hi, ok)
	}
	if _, _, ok := PercentileCI([]float64{math.NaN(), math.NaN(), math.NaN(), 1}, 0.95); ok {
		t.Error("interval from one finite value of four")
	}
}

func TestMinSamples(t *testing.T) {
	for _, tc := range []struct {
		q, level float64
		want     int
	}{{0.5, 0.95, 6}, {0.99, 0.95, 368}, {0.95, 0.95, 72}, {0.01, 0.95, 368}, {0.5, 0.99, 8}, {1, 0.95, math.MaxInt32}} {
		if got := MinSamples(tc.q, tc.level); got != tc.want {
			t.Errorf("MinSamples(%v, %v) = %d, want %d", tc.q, tc.level, got, tc.want)
		}
	}
}

// TestBootstrap: the sample comes first with unit weights, then b seeded resamples of n
// tasks each, the same for the same seed.
func TestBootstrap(t *testing.T) {
	run := func() [][]int {
		var out [][]int
		Bootstrap(5, 3, rand.New(rand.NewPCG(9, 9)), func(r int, w []int) {
			if want := len(out) - 1; r != want {
				t.Fatalf("replicate %d given as %d", want, r)
			}
			out = append(out, append([]int(nil), w...))
		})
		return out
	}
	a, b := run(), run()
	if len(a) != 4 {
		t.Fatalf("%d evaluations, want the sample and 3 resamples", len(a))
	}
	for i, w := range a {
		sum := 0
		for j, k := range w {
			sum += k
			if i == 0 && k != 1 {
				t.Errorf("sample weight %d = %d, want 1", j, k)
			}
			if k != b[i][j] {
				t.Errorf("same seed, different resample %d", i)
			}
		}
		if sum != 5 {
			t.Errorf("evaluation %d holds %d tasks, want 5", i, sum)
		}
	}
}
