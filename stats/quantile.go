package stats

import (
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

// Histogram renders the distribution on 1-2-5 bucket bounds (ms) for charts.
func (d *Dist) Histogram() evidence.Histogram {
	out := evidence.Histogram{Unit: "ms"}
	if d.n == 0 {
		return out
	}
	maxMs := float64(d.max) / 1000
	var bounds []float64
	for dec := 0.01; ; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			bounds = append(bounds, figure.Round3(m*dec))
		}
		if dec*5 >= maxMs {
			break
		}
	}
	counts := make([]int64, len(bounds))
	for _, b := range d.h.Buckets() {
		v := float64(b.From) / 1000
		i := 0
		for i < len(bounds)-1 && v > bounds[i] {
			i++
		}
		counts[i] += b.Count
	}
	// Trim empty leading buckets (keep one for context).
	lo := 0
	for lo < len(counts)-1 && counts[lo] == 0 && counts[lo+1] == 0 {
		lo++
	}
	out.Bounds, out.Counts = bounds[lo:], counts[lo:]
	return out
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
