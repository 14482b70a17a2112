// Package figure holds the small numeric and figure-printing helpers that several packages
// share: a measured value that may be missing is a *float64 (nil: not measured), printed
// as "-" where a table needs a cell.
package figure

import (
	"fmt"
	"math"
	"time"
)

// Ptr is f as an optional value: nil when f is NaN or infinite (no figure to print).
func Ptr(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Mean is the arithmetic mean of xs, 0 for none.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Round3 rounds v to three decimals.
func Round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Sig rounds v to digits significant digits (NaN, ±Inf and 0 as they are).
func Sig(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// Sig6 rounds v to six significant digits (NaN, ±Inf and 0 as they are).
func Sig6(v float64) float64 { return Sig(v, 6) }

// Sig3 rounds v to three significant digits, and is 0 for NaN, ±Inf and -0: for a figure
// that must be a plain number (evidence.json carries no NaN), at the precision of an
// estimate built from run-level means (a time budget's shares, a floor).
func Sig3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return Sig(v, 3)
}

// Fmt prints an optional value with four significant digits, "-" when missing.
func Fmt(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.4g", *p)
}

// FmtCI prints an interval; a missing end is unbounded (the sample cannot bound the
// quantile on that side).
func FmtCI(lo, hi *float64) string {
	switch {
	case lo == nil && hi == nil:
		return "-"
	case hi == nil:
		return fmt.Sprintf("[%.4g, +inf)", *lo)
	case lo == nil:
		return fmt.Sprintf("(-inf, %.4g]", *hi)
	}
	return fmt.Sprintf("[%.4g, %.4g]", *lo, *hi)
}

// FmtPct prints an optional signed percentage with one decimal, "-" when missing.
func FmtPct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

// OrDash is s, or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FmtRel prints an absolute delta as a signed percentage of base (absolute when base is
// missing or 0), "-" when missing.
func FmtRel(d, base *float64) string {
	if d == nil {
		return "-"
	}
	if base == nil || *base == 0 {
		return fmt.Sprintf("%+.4g", *d)
	}
	return fmt.Sprintf("%+.1f%%", *d/math.Abs(*base)*100)
}

// OrNaN is *p, or NaN when p is missing.
func OrNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Step125 is the smallest 1, 2 or 5 × 10^k at or above x (1 for x not positive or not
// finite): the step of an axis or a bucket width a reader takes in at a glance.
func Step125(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= x {
			return m * mag
		}
	}
	return 10 * mag
}
