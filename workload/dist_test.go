package workload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pel-ladder/pel/contract"
)

func f(v float64) *float64 { return &v }

func moments(d contract.Dist, n int) (mean, sd float64, lo, hi int) {
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi = math.MaxInt, 0
	var s, s2 float64
	for i := 0; i < n; i++ {
		v := Sample(d, r)
		lo, hi = min(lo, v), max(hi, v)
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	mean = s / float64(n)
	return mean, math.Sqrt(s2/float64(n) - mean*mean), lo, hi
}

func TestSample(t *testing.T) {
	cases := []struct {
		name           string
		d              contract.Dist
		mean, sd       float64 // expected (sd < 0: don't check)
		wantLo, wantHi int     // exact observed range (0: don't check)
	}{
		{"fixed", contract.Dist{Kind: "fixed", Value: 64}, 64, 0, 64, 64},
		{"fixed rounds", contract.Dist{Kind: "fixed", Value: 2.6}, 3, 0, 3, 3},
		{"uniform inclusive", contract.Dist{Kind: "uniform", Min: f(10), Max: f(20)}, 15, math.Sqrt((11*11 - 1) / 12.0), 10, 20},
		{"normal", contract.Dist{Kind: "normal", Mean: 256, SD: 64}, 256, 64, 0, 0},
		{"normal clamped", contract.Dist{Kind: "normal", Mean: 256, SD: 64, Min: f(200), Max: f(300)}, -1, -1, 200, 300},
		// Lognormal: mean and sd of the lengths themselves, not of their logarithm.
		{"lognormal", contract.Dist{Kind: "lognormal", Mean: 200, SD: 80}, 200, 80, 0, 0},
		{"empirical", contract.Dist{Kind: "empirical", Values: []float64{100, 400}, Weights: []float64{3, 1}}, 175, math.Sqrt(0.75*75*75 + 0.25*225*225), 100, 400},
		{"empirical equal", contract.Dist{Kind: "empirical", Values: []float64{1, 3}}, 2, 1, 1, 3},
		{"at least 1", contract.Dist{Kind: "normal", Mean: 1, SD: 5}, -1, -1, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mean, sd, lo, hi := moments(tc.d, 50000)
			if tc.mean >= 0 {
				within(t, "mean", mean, tc.mean, 0.02)
			}
			if tc.sd > 0 {
				within(t, "sd", sd, tc.sd, 0.04)
			} else if tc.sd == 0 && sd != 0 {
				t.Errorf("sd %v, want 0", sd)
			}
			if tc.wantLo > 0 && lo != tc.wantLo {
				t.Errorf("min draw %d, want %d", lo, tc.wantLo)
			}
			if tc.wantHi > 0 && hi != tc.wantHi {
				t.Errorf("max draw %d, want %d", hi, tc.wantHi)
			}
		})
	}
}

func TestSampleHugeTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	d := contract.Dist{Kind: "lognormal", Mean: 1e12, SD: 1e13}
	for i := 0; i < 1000; i++ {
		if v := Sample(d, r); v < 1 || v > MaxLength {
			t.Fatalf("draw %d outside [1, MaxLength]", v)
		}
	}
}
