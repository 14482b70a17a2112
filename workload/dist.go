package workload

import (
	"math"
	"math/rand/v2"

	"github.com/pel-ladder/pel/contract"
)

// MaxLength caps every drawn length (16M tokens, beyond any served context today), so a
// long distribution tail cannot make the prompt builder allocate gigabytes.
const MaxLength = 1 << 24

// Sample draws one length in tokens from d: drawn, rounded to the nearest integer, clamped
// to [d.Min, d.Max] when set, and at least 1.
//
//   - fixed: Value.
//   - uniform: an integer in [ceil(Min), floor(Max)], each equally likely.
//   - normal: Mean + SD·Z.
//   - lognormal: Mean and SD are those of the lengths themselves (what people measure), so
//     σ² = ln(1 + SD²/Mean²) and μ = ln(Mean) − σ²/2 for the underlying normal.
//   - empirical: one of Values, chosen by Weights (equal when none).
func Sample(d contract.Dist, r *rand.Rand) int {
	var v float64
	switch d.Kind {
	case contract.DistFixed:
		v = d.Value
	case contract.DistUniform:
		lo, hi := 1.0, 1.0
		if d.Min != nil {
			lo = math.Ceil(*d.Min)
		}
		if d.Max != nil {
			hi = math.Floor(*d.Max)
		}
		if hi > lo {
			v = lo + float64(r.Int64N(int64(hi-lo)+1))
		} else {
			v = lo
		}
	case contract.DistNormal:
		v = d.Mean + d.SD*r.NormFloat64()
	case contract.DistLognormal:
		if d.Mean > 0 {
			s2 := math.Log1p(d.SD * d.SD / (d.Mean * d.Mean))
			v = math.Exp(math.Log(d.Mean) - s2/2 + math.Sqrt(s2)*r.NormFloat64())
		}
	case contract.DistEmpirical:
		v = pickWeighted(d.Values, d.Weights, r)
	}
	v = math.Round(v)
	if d.Min != nil && v < *d.Min {
		v = math.Ceil(*d.Min)
	}
	if d.Max != nil && v > *d.Max {
		v = math.Floor(*d.Max)
	}
	switch {
	case math.IsNaN(v) || v < 1:
		return 1
	case v > MaxLength:
		return MaxLength
	}
	return int(v)
}

func pickWeighted(values, weights []float64, r *rand.Rand) float64 {
	if len(values) == 0 {
		return 0
	}
	if len(weights) != len(values) {
		return values[r.IntN(len(values))]
	}
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return values[i]
		}
		x -= w
	}
	// Rounding left x at the end: the last value with weight.
	for i := len(values) - 1; i >= 0; i-- {
		if weights[i] > 0 {
			return values[i]
		}
	}
	return values[len(values)-1]
}

// gammaVariate draws from Gamma(shape k, scale 1) by Marsaglia & Tsang (2000), "A simple
// method for generating gamma variables", ACM TOMS 26(3); shapes below 1 use their boost
// Gamma(k) = Gamma(k+1)·U^(1/k).
func gammaVariate(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaVariate(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
