package scrape

import (
	"math"
	"sort"

	"github.com/pel-ladder/pel/internal/figure"
)

// thin holds the points of one raw series that interpolation at a fixed set of times (the
// edges: every window's clipped ends and middle) needs, so its size follows the windows,
// not the run. A point is dropped once it has a successor and no edge lies between its
// neighbours: the points that bracket an edge are then never dropped (each has the other
// as a neighbour), and linear interpolation at the edge uses only them, so it is exact.
// The first and last points are always kept (interpolation holds them outside the range).
// Each point has w values (one for a gauge or counter; a histogram's buckets, count, sum).
type thin struct {
	w     int
	t     []float64
	v     []float64 // w per point
	edges []float64 // sorted; shared by the endpoint's series
}

func (p *thin) len() int { return len(p.t) }

func (p *thin) add1(t, v float64) {
	p.t = append(p.t, t)
	p.v = append(p.v, v)
	p.compact()
}

func (p *thin) add(t float64, v []float64) {
	p.t = append(p.t, t)
	p.v = append(p.v, v...)
	p.compact()
}

// compact drops the point before the last when no edge lies within its neighbours' span.
func (p *thin) compact() {
	n := len(p.t)
	if n < 3 {
		return
	}
	lo, hi := p.t[n-3], p.t[n-1]
	if j := sort.SearchFloat64s(p.edges, lo); j < len(p.edges) && p.edges[j] <= hi {
		return
	}
	p.t[n-2] = p.t[n-1]
	p.t = p.t[:n-1]
	copy(p.v[(n-2)*p.w:], p.v[(n-1)*p.w:])
	p.v = p.v[:(n-1)*p.w]
}

func (p *thin) lastPoint() (float64, float64) {
	n := len(p.t)
	return p.t[n-1], p.v[(n-1)*p.w]
}

func (p *thin) lastRow() (float64, []float64) {
	n := len(p.t)
	return p.t[n-1], p.v[(n-1)*p.w : n*p.w]
}

// at fills out with the values at x, interpolated linearly between the points around it
// and held constant outside their range, column by column.
func (p *thin) at(x float64, out []float64) []float64 {
	n := len(p.t)
	if n == 0 {
		clear(out)
		return out
	}
	row := func(i int) []float64 { return p.v[i*p.w : (i+1)*p.w] }
	if x <= p.t[0] {
		copy(out, row(0))
		return out
	}
	if x >= p.t[n-1] {
		copy(out, row(n-1))
		return out
	}
	i := sort.SearchFloat64s(p.t, x)
	if p.t[i] == x || p.t[i] == p.t[i-1] {
		copy(out, row(i))
		return out
	}
	a, b := row(i-1), row(i)
	for k := range out {
		out[k] = a[k] + (b[k]-a[k])*(x-p.t[i-1])/(p.t[i]-p.t[i-1])
	}
	return out
}

func (p *thin) at1(x float64) float64 {
	var out [1]float64
	return p.at(x, out[:])[0]
}

// maxChartPoints bounds the points of one drawn time series. Up to it every sample is a
// point; past it the series is downsampled: consecutive points are taken in buckets of
// equal count (doubling when the buckets fill up), and each bucket is one point at the time
// of its last sample (so a rate's point still ends its interval) with the mean of its
// values, and its min and max beside it (evidence Series.Min/Max). An hour sampled every
// second is drawn as 450 buckets of 8 samples.
const maxChartPoints = 600

// chart is one downsampled time series.
type chart struct {
	per          int // points per closed bucket (0 means 1)
	t, v, lo, hi []float64
	ct, cv       float64 // the open bucket: sums
	cmin, cmax   float64
	cn           int
	total        int // points added
}

func (c *chart) add(t, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(t) || math.IsInf(t, 0) {
		return // JSON has no NaN: such a point is not drawn
	}
	if c.per == 0 {
		c.per = 1
	}
	c.total++
	if c.cn == 0 {
		c.cmin, c.cmax = v, v
	}
	c.ct = t
	c.cv += v
	c.cmin, c.cmax = math.Min(c.cmin, v), math.Max(c.cmax, v)
	c.cn++
	if c.cn < c.per {
		return
	}
	c.close()
	if len(c.t) >= maxChartPoints {
		c.halve()
	}
}

func (c *chart) close() {
	if c.cn == 0 {
		return
	}
	n := float64(c.cn)
	c.t = append(c.t, c.ct)
	c.v = append(c.v, c.cv/n)
	c.lo = append(c.lo, c.cmin)
	c.hi = append(c.hi, c.cmax)
	c.ct, c.cv, c.cn = 0, 0, 0
}

// halve merges pairs of closed buckets (of equal counts: the mean of their means is the
// mean of their points).
func (c *chart) halve() {
	k := 0
	for i := 0; i+1 < len(c.t); i += 2 {
		c.t[k] = c.t[i+1]
		c.v[k] = (c.v[i] + c.v[i+1]) / 2
		c.lo[k] = math.Min(c.lo[i], c.lo[i+1])
		c.hi[k] = math.Max(c.hi[i], c.hi[i+1])
		k++
	}
	if len(c.t)%2 == 1 {
		last := len(c.t) - 1
		c.t[k], c.v[k], c.lo[k], c.hi[k] = c.t[last], c.v[last], c.lo[last], c.hi[last]
		k++
	}
	c.t, c.v, c.lo, c.hi = c.t[:k], c.v[:k], c.lo[:k], c.hi[:k]
	c.per *= 2
}

// scale multiplies every value by f (a percent made a ratio).
func (c *chart) scale(f float64) {
	for i := range c.v {
		c.v[i] *= f
		c.lo[i] *= f
		c.hi[i] *= f
	}
	c.cv *= f
	c.cmin *= f
	c.cmax *= f
}

// points ends the chart: times and values rounded, and (downsampled only) each bucket's
// min and max.
func (c *chart) points() (t, v, lo, hi []float64) {
	c.close()
	for i := range c.t {
		t, v = append(t, figure.Sig6(c.t[i])), append(v, figure.Sig6(c.v[i]))
	}
	if c.per > 1 {
		for i := range c.t {
			lo, hi = append(lo, figure.Sig6(c.lo[i])), append(hi, figure.Sig6(c.hi[i]))
		}
	}
	return t, v, lo, hi
}
