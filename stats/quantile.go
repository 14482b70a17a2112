package stats

import (
	"math"
	"slices"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
)

// Dist accumulates a latency distribution in microseconds: a quantile.Hist for
// percentiles, an exact sum and max.
type Dist struct {
	h   *quantile.Hist
	n   int
	sum float64
	max int64
}

// NewDist returns an empty distribution.
func NewDist() *Dist { return &Dist{h: quantile.NewHist()} }

// Add records one duration (negative values count as 0).
func (d *Dist) Add(v time.Duration) { d.AddUS(quantile.ClampUS(v)) }

// AddUS records one value in µs (clamped to [0, quantile.MaxUS]).
func (d *Dist) AddUS(us int64) {
	us = min(max(us, 0), quantile.MaxUS)
	d.h.AddUS(us)
	d.n++
	d.sum += float64(us)
	d.max = max(d.max, us)
}

// AddN records n occurrences of one duration at the cost of one: a content event's tokens
// share one inter-token latency (record.ITLRuns).
func (d *Dist) AddN(v time.Duration, n int) {
	if n <= 0 {
		return
	}
	us := quantile.ClampUS(v)
	d.h.AddUSN(us, int64(n))
	d.n += n
	d.sum += float64(us) * float64(n)
	d.max = max(d.max, us)
}

// N is the number of values.
func (d *Dist) N() int { return d.n }

// QuantileMs returns the p-th percentile (p in 0..100) in milliseconds: package
// quantile's estimator (nearest rank, the value as recorded); 0 for no values.
func (d *Dist) QuantileMs(p float64) float64 {
	us, ok := d.h.QuantileUS(p / 100)
	if !ok {
		return 0
	}
	return float64(us) / 1000
}

// MeanMs is the exact mean in milliseconds.
func (d *Dist) MeanMs() float64 {
	if d.n == 0 {
		return 0
	}
	return d.sum / float64(d.n) / 1000
}

// Quantiles summarises the distribution in milliseconds (rounded to the µs).
func (d *Dist) Quantiles() evidence.Quantiles {
	if d.n == 0 {
		return evidence.Quantiles{}
	}
	return evidence.Quantiles{
		N:    d.n,
		P50:  figure.Round3(d.QuantileMs(50)),
		P95:  figure.Round3(d.QuantileMs(95)),
		P99:  figure.Round3(d.QuantileMs(99)),
		Mean: figure.Round3(d.MeanMs()),
		Max:  figure.Round3(float64(d.max) / 1000),
	}
}

// Histogram renders the distribution for charts on bucket bounds (ms) fitted to its range,
// so the shape shows in tens of bars rather than one or two: linear bounds at a 1-2-5 step
// when the values span less than a decade past their lowest (TTFT of one prompt length,
// ITL of one batch size), else ten bounds a decade on the R10 preferred-number series
// (ISO 3: 1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8), whose equal ratios give a tail on a
// log scale its due width. Empty bounds before the first value are left out.
func (d *Dist) Histogram() evidence.Histogram {
	out := evidence.Histogram{Unit: "ms"}
	if d.n == 0 {
		return out
	}
	bs := d.h.Buckets()
	if len(bs) == 0 {
		return out
	}
	minMs := float64(bs[0].From) / 1000
	maxMs := float64(d.max) / 1000
	bounds := histBounds(minMs, maxMs)
	counts := make([]int64, len(bounds))
	for _, b := range bs {
		v := float64(b.From) / 1000
		i, _ := slices.BinarySearch(bounds, v) // the first bound at or above v
		counts[min(i, len(counts)-1)] += b.Count
	}
	lo := 0
	for lo < len(counts)-1 && counts[lo] == 0 {
		lo++
	}
	out.Bounds, out.Counts = bounds[lo:], counts[lo:]
	return out
}

// histTargetBars is about how many bars a linear histogram gets: enough to show a shape,
// few enough to read each bar's bound (the report folds anything past 64).
const histTargetBars = 24

// r10 is the R10 series of preferred numbers (ISO 3), one decade.
var r10 = []float64{1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8}

// histBounds are the upper bounds of histogram buckets covering [lo, hi] ms (see Histogram).
func histBounds(lo, hi float64) []float64 {
	hi = max(hi, lo, 0.001)
	if lo > 0 && hi <= 10*lo || hi-lo <= 0.01 {
		step := 0.001 // every value the same: one bucket, 1 µs wide
		if hi > lo {
			step = figure.Step125((hi - lo) / histTargetBars)
		}
		var out []float64
		for b := math.Floor(lo/step)*step + step; ; b += step {
			out = append(out, figure.Round3(b))
			if b >= hi || len(out) > 4*histTargetBars {
				break
			}
		}
		return out
	}
	dec := math.Pow(10, math.Floor(math.Log10(max(lo, 0.001))))
	var out []float64
	for ; ; dec *= 10 {
		for _, m := range r10 {
			b := figure.Round3(m * dec)
			if b < lo {
				continue
			}
			out = append(out, b)
			if b >= hi {
				return out
			}
		}
	}
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
