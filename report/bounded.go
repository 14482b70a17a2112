package report

import (
	"math"

	"github.com/pel-ladder/pel/evidence"
)

// Bounds on what one chart draws, whatever evidence.json holds: a page stays a few MB and
// its rendering a few MB of memory however many buckets or points the file carries.
const (
	// maxBars: bars of one histogram chart. pel's own histograms have 1-2-5 bounds (~20
	// bars); past maxBars, runs of adjacent buckets are drawn as one bar (their counts
	// added, labelled by the last bound), which is what a chart 640 units wide can show.
	maxBars = 64
	// maxLinePoints: points of one line of a time chart (a point per unit of plot width
	// and more). pel's series hold at most 600 (package scrape); past maxLinePoints, runs
	// of consecutive points are drawn as their mean.
	maxLinePoints = 1000
)

// foldBuckets returns h with at most maxBars buckets, and the number of buckets it had.
func foldBuckets(h evidence.Histogram) (evidence.Histogram, int) {
	n := min(len(h.Bounds), len(h.Counts))
	if n <= maxBars {
		return h, n
	}
	per := (n + maxBars - 1) / maxBars
	out := evidence.Histogram{Unit: h.Unit}
	for i := 0; i < n; i += per {
		j := min(i+per, n)
		var c int64
		for _, x := range h.Counts[i:j] {
			if x > 0 && c > math.MaxInt64-x {
				c = math.MaxInt64 // a count no run reaches: drawn at the top
				continue
			}
			c += x
		}
		out.Bounds = append(out.Bounds, h.Bounds[j-1])
		out.Counts = append(out.Counts, c)
	}
	return out, n
}

// thinLine returns the finite points of (t, v), at most maxLinePoints of them: past it,
// each run of consecutive points is one point at their mean time and value. thinned says
// whether any run was merged.
func thinLine(t, v []float64) (ot, ov []float64, thinned bool) {
	n := min(len(t), len(v))
	finite := 0
	for i := 0; i < n; i++ {
		if ok(t[i], v[i]) {
			finite++
		}
	}
	per := max(1, (finite+maxLinePoints-1)/maxLinePoints)
	st, sv, k := 0.0, 0.0, 0
	for i := 0; i < n; i++ {
		if !ok(t[i], v[i]) {
			continue
		}
		st, sv, k = st+t[i], sv+v[i], k+1
		if k == per {
			ot, ov = append(ot, st/float64(k)), append(ov, sv/float64(k))
			st, sv, k = 0, 0, 0
		}
	}
	if k > 0 {
		ot, ov = append(ot, st/float64(k)), append(ov, sv/float64(k))
	}
	return ot, ov, per > 1
}

func ok(t, v float64) bool {
	return !math.IsNaN(t) && !math.IsInf(t, 0) && !math.IsNaN(v) && !math.IsInf(v, 0)
}
