package quantile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestRank(t *testing.T) {
	tests := []struct {
		n    int
		q    float64
		want int
	}{
		{0, 0.5, 0},
		{1, 0.99, 1},
		{4, 0.5, 2},     // lower median of an even count
		{5, 0.5, 3},     // the middle value
		{100, 0.99, 99}, // 0.99·100 is 99 exactly, not 99.00000000000001
		{61, 0.99, 61},  // under 100 values a p99 is the maximum
		{200, 0.99, 198},
		{20, 0.95, 19},
		{3, 0, 1},
		{3, 1, 3},
	}
	for _, tc := range tests {
		if got := Rank(tc.n, tc.q); got != tc.want {
			t.Errorf("Rank(%d, %g) = %d, want %d", tc.n, tc.q, got, tc.want)
		}
	}
}

func TestSortedAndLinear(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		q            float64
		nearest, lin float64
	}{{0.5, 2, 2.5}, {0.25, 1, 1.75}, {1, 4, 4}, {0, 1, 1}, {0.99, 4, 3.97}} {
		if got := Sorted(xs, tc.q); got != tc.nearest {
			t.Errorf("Sorted(q%g) = %v, want %v", tc.q, got, tc.nearest)
		}
		if got := Linear(xs, tc.q); math.Abs(got-tc.lin) > 1e-12 {
			t.Errorf("Linear(q%g) = %v, want %v", tc.q, got, tc.lin)
		}
	}
	if got := Linear([]float64{7}, 0.3); got != 7 {
		t.Errorf("Linear of one value = %v, want it", got)
	}
	if !math.IsNaN(Sorted(nil, 0.5)) || !math.IsNaN(Linear(nil, 0.5)) || !math.IsNaN(Of(nil, 0.5)) {
		t.Error("no values must give NaN")
	}
	un := []float64{4, 1, 3, 2}
	if got := Of(un, 0.5); got != 2 || un[0] != 4 {
		t.Errorf("Of = %v (input %v), want 2 and the input untouched", got, un)
	}
}

// TestRecordedIsTheHistogramsBucket: Recorded is the lower bound of the HDR bucket a value
// falls in, for the histogram Hist builds.
func TestRecordedIsTheHistogramsBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []int64{0, 1, 2047, 2048, 2049, 4095, 4096, 4097, 1e6, MaxUS}
	for range 200 {
		vals = append(vals, rng.Int64N(MaxUS))
		vals = append(vals, rng.Int64N(100_000))
	}
	h := hdr.New(1, MaxUS, digits)
	for _, v := range vals {
		h.Reset()
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		bs := h.Distribution()
		var from int64 = -1
		for _, b := range bs {
			if b.Count > 0 {
				from = b.From
			}
		}
		if got := Recorded(v); got != from {
			t.Fatalf("Recorded(%d) = %d, the histogram's bucket starts at %d", v, got, from)
		}
		if v > 0 && float64(v-Recorded(v)) >= 0.001*float64(v) {
			t.Fatalf("Recorded(%d) = %d is 0.1%% or more below", v, Recorded(v))
		}
	}
}

// TestHistAgreesWithSorted: a histogram's quantile and the nearest-rank quantile of the same
// values as recorded are one number, at the ranks where the HDR library's own rounded rank
// (⌊q·n + ½⌋) would pick another order statistic.
func TestHistAgreesWithSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 5, 20, 61, 79, 100, 101, 1000, 40369} {
		h := NewHist()
		var ms []float64
		for range n {
			d := time.Duration(rng.ExpFloat64() * float64(50*time.Millisecond))
			h.AddUS(ClampUS(d))
			ms = append(ms, RecordedMs(d))
		}
		slices.Sort(ms)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			us, ok := h.QuantileUS(q)
			if !ok {
				t.Fatal("no quantile from a filled histogram")
			}
			if got, want := float64(us)/1000, Sorted(ms, q); got != want {
				t.Errorf("n %d q%g: histogram %v ms, sorted %v ms", n, q, got, want)
			}
		}
		if us, _ := h.QuantileUS(0.99); float64(us)/1000 > ms[len(ms)-1] {
			t.Errorf("n %d: p99 %d µs above the maximum %v ms", n, us, ms[len(ms)-1])
		}
	}
	if _, ok := NewHist().QuantileUS(0.5); ok {
		t.Error("an empty histogram has no quantile")
	}
}

func TestHistMerge(t *testing.T) {
	a, b, u := NewHist(), NewHist(), NewHist()
	for i := range int64(500) {
		a.AddUS(i * 37)
		b.AddUS(i*53 + 11)
		u.AddUS(i * 37)
		u.AddUS(i*53 + 11)
	}
	a.Merge(b)
	for _, q := range []float64{0.5, 0.99} {
		x, _ := a.QuantileUS(q)
		y, _ := u.QuantileUS(q)
		if x != y || a.N() != u.N() {
			t.Errorf("q%g: merge %d (n %d), union %d (n %d)", q, x, a.N(), y, u.N())
		}
	}
}

// TestRunsAgreeWithExpandedValues: a run of n equal values, given once with its count (to a
// histogram or a weighted quantile), gives the quantiles of the n values given one by one.
func TestRunsAgreeWithExpandedValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, runs := range []int{1, 2, 7, 60, 500} {
		h, hx := NewHist(), NewHist()
		var ws []Weighted
		var xs []float64
		for range runs {
			d := time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond))
			n := int64(rng.IntN(40))
			h.AddUSN(ClampUS(d), n)
			ws = append(ws, Weighted{RecordedMs(d), n})
			for range n {
				hx.AddUS(ClampUS(d))
				xs = append(xs, RecordedMs(d))
			}
		}
		if h.N() != hx.N() || Weights(ws) != int64(len(xs)) {
			t.Fatalf("%d runs: counts %d and %d, want %d", runs, h.N(), Weights(ws), len(xs))
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.5, 0.95, 0.99, 1} {
			got, gok := h.QuantileUS(q)
			want, wok := hx.QuantileUS(q)
			if got != want || gok != wok {
				t.Errorf("%d runs q%g: histogram of runs %d µs (%v), of values %d µs (%v)", runs, q, got, gok, want, wok)
			}
			if g, w := OfWeighted(ws, q), Sorted(xs, q); g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
				t.Errorf("%d runs q%g: weighted %v ms, sorted values %v ms", runs, q, g, w)
			}
		}
	}
}
