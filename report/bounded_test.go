package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// An evidence.json with millions of histogram buckets and series points renders a page
// whose charts hold at most maxBars bars and maxLinePoints points per line, saying so; the
// folded bars keep every count.
func TestHTMLBoundsBucketsAndPoints(t *testing.T) {
	const buckets, points = 5_000_000, 200_000
	h := evidence.Histogram{Unit: "ms", Bounds: make([]float64, buckets), Counts: make([]int64, buckets)}
	for i := range h.Bounds {
		h.Bounds[i], h.Counts[i] = float64(i+1), 1
	}
	folded, n := foldBuckets(h)
	total := int64(0)
	for _, c := range folded.Counts {
		total += c
	}
	if n != buckets || len(folded.Counts) > maxBars || total != buckets || folded.Bounds[len(folded.Bounds)-1] != buckets {
		t.Fatalf("%d buckets folded to %d bars holding %d, last bound %g", n, len(folded.Counts), total, folded.Bounds[len(folded.Bounds)-1])
	}
	ev := evidence.New()
	ev.Workload.Histograms = map[string]evidence.Histogram{"ttft_ms": h}
	s := evidence.Series{Name: evidence.SeriesRunning, Unit: "count", Source: "vllm /metrics"}
	for i := 0; i < points; i++ {
		s.T, s.V = append(s.T, float64(i)), append(s.V, float64(i%10))
	}
	st := ev.Stage(evidence.StageServingCache)
	st.Series = append(st.Series, s)
	var b bytes.Buffer
	if err := HTML(&b, ev); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if b.Len() > 1<<20 {
		t.Errorf("page of %d bytes", b.Len())
	}
	for _, want := range []string{"5000000 buckets drawn as 64 bars", "downsampled: each point the mean of consecutive samples"} {
		if !strings.Contains(page, want) {
			t.Errorf("page does not say %q", want)
		}
	}
	if rects := strings.Count(page, "<rect "); rects > maxBars+20 {
		t.Errorf("%d rects", rects)
	}
}

// thinLine keeps short lines as they are (finite points only) and merges long ones.
func TestThinLine(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	tt, vv, thinned := thinLine([]float64{0, 1, 2}, []float64{1, nan, 3})
	if thinned || len(tt) != 2 || vv[1] != 3 {
		t.Fatalf("%v %v %v", tt, vv, thinned)
	}
	var ts, vs []float64
	for i := 0; i < 3*maxLinePoints; i++ {
		ts, vs = append(ts, float64(i)), append(vs, float64(i))
	}
	tt, vv, thinned = thinLine(ts, vs)
	if !thinned || len(tt) != maxLinePoints || tt[0] != 1 || vv[0] != 1 {
		t.Fatalf("%d points, first (%g, %g), thinned %v", len(tt), tt[0], vv[0], thinned)
	}
}
