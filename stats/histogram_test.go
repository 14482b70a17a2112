package stats

import (
	"testing"
	"time"
)

// TestHistogramResolution: a distribution gets tens of bars across its own range, not the
// one or two a decade-wide 1-2-5 grid gives a narrow one; a wide one spans its decades on
// equal ratios; every value lands in a bucket.
func TestHistogramResolution(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lo, hi   time.Duration
		min, max int // bars
	}{
		{"ITL 7-14 ms (one batch size)", 7 * time.Millisecond, 14 * time.Millisecond, 10, 40},
		{"TTFT 400-600 ms (one prompt length)", 400 * time.Millisecond, 600 * time.Millisecond, 10, 40},
		{"E2E 20 ms - 30 s (a queue)", 20 * time.Millisecond, 30 * time.Second, 25, 40},
		{"one value", 5 * time.Millisecond, 5 * time.Millisecond, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDist()
			n := 1000
			for i := 0; i < n; i++ {
				d.Add(tc.lo + time.Duration(float64(tc.hi-tc.lo)*float64(i)/float64(n-1)))
			}
			h := d.Histogram()
			if len(h.Bounds) < tc.min || len(h.Bounds) > tc.max {
				t.Errorf("%d bars (bounds %v), want %d..%d", len(h.Bounds), h.Bounds, tc.min, tc.max)
			}
			var sum int64
			for i, c := range h.Counts {
				sum += c
				if i > 0 && h.Bounds[i] <= h.Bounds[i-1] {
					t.Errorf("bounds not increasing: %v", h.Bounds)
				}
			}
			if sum != int64(n) {
				t.Errorf("counts sum to %d, want %d", sum, n)
			}
			if last := h.Bounds[len(h.Bounds)-1]; last < float64(tc.hi)/1e6*0.99 {
				t.Errorf("last bound %v ms below the largest value %v", last, tc.hi)
			}
		})
	}
}
