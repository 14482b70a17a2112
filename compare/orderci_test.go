package compare

import (
	"math"
	"testing"

	"github.com/pel-ladder/pel/resample"
)

// The interval is bounded on both sides exactly from the sample size the comparison's
// advice names (resample.MinSamples), so "needs N" is never said of a sample of N or more;
// and its coverage, computed exactly from the binomial, is at least the level.
func TestOrderCI(t *testing.T) {
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		nmin := resample.MinSamples(q, 0.95)
		for n := 1; n <= nmin+200; n++ {
			lo, hi := orderCI(n, q, 0.95)
			two := lo >= 1 && hi <= n
			if two != (n >= nmin) {
				t.Fatalf("q %g n %d: two-sided %v, MinSamples %d", q, n, two, nmin)
			}
			if two && (lo > hi || coverage(n, q, lo, hi) < 0.95-1e-12) {
				t.Fatalf("q %g n %d: [%d, %d] covers %.4f", q, n, lo, hi, coverage(n, q, lo, hi))
			}
		}
	}
	// 402 values bound a p99 (the shortest interval, go-moremath's, needs 441).
	if lo, hi := orderCI(402, 0.99, 0.95); lo < 1 || hi > 402 {
		t.Errorf("402 values: [%d, %d]", lo, hi)
	}
}

// coverage is P(X(lo) ≤ ξ ≤ X(hi)) = P(lo ≤ B ≤ hi−1), B ~ Binomial(n, q).
func coverage(n int, q float64, lo, hi int) float64 {
	c := 0.0
	lgN, _ := math.Lgamma(float64(n + 1))
	for k := lo; k <= hi-1; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		c += math.Exp(lgN - lk - lnk + float64(k)*math.Log(q) + float64(n-k)*math.Log1p(-q))
	}
	return c
}
