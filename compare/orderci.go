package compare

import "math"

// orderCI is the equal-tailed distribution-free confidence interval of the q-quantile ξ of
// a continuous distribution from n sorted values: the 1-based order statistics lo and hi
// with P(X(lo) ≤ ξ) ≥ 1 − α/2 and P(X(hi) ≥ ξ) ≥ 1 − α/2, α = 1 − level, each as tight as
// that allows. The number of values below ξ is Binomial(n, q), so P(X(k) ≤ ξ) = P(B ≥ k)
// and P(X(k) ≥ ξ) = P(B ≤ k − 1). lo is 0 (no lower bound) or hi is n+1 (no upper bound)
// when the sample cannot bound that side: a side is bounded exactly when
// max(q, 1−q)^n ≤ α/2, which is resample.MinSamples — 6 values for a median, 368 for a p99
// at 95% — so the sample size the comparison asks for and the one this interval needs are
// the same number. (go-moremath's QuantileCI picks the shortest interval instead, which for a
// p99 stays unbounded above up to 440 values.)
func orderCI(n int, q, level float64) (lo, hi int) {
	if n <= 0 || !(q > 0 && q < 1) {
		return 0, n + 1
	}
	a := (1 - level) / 2
	lq, lp := math.Log(q), math.Log1p(-q)
	lgN, _ := math.Lgamma(float64(n + 1))
	// cdf[k] = P(B ≤ k), accumulated from the pmf in log space.
	cdf := make([]float64, n+1)
	sum := 0.0
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		sum += math.Exp(lgN - lk - lnk + float64(k)*lq + float64(n-k)*lp)
		cdf[k] = sum
	}
	// Largest lo ≥ 1 with P(B ≥ lo) = 1 − cdf[lo−1] ≥ 1 − a, i.e. cdf[lo−1] ≤ a.
	for k := n; k >= 1; k-- {
		if cdf[k-1] <= a {
			lo = k
			break
		}
	}
	// Smallest hi ≤ n with P(B ≤ hi−1) = cdf[hi−1] ≥ 1 − a.
	hi = n + 1
	for k := 1; k <= n; k++ {
		if cdf[k-1] >= 1-a {
			hi = k
			break
		}
	}
	return lo, hi
}
