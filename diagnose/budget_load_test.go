package diagnose

import (
	"math"
	"testing"
)

// TestPSSojourn checks the ideal server's stays against processor sharing worked by hand.
func TestPSSojourn(t *testing.T) {
	for _, tc := range []struct {
		name         string
		arrive, work []float64
		want         []float64
	}{
		{"alone", []float64{5}, []float64{2}, []float64{2}},
		{"two together share", []float64{0, 0}, []float64{1, 1}, []float64{2, 2}},
		// A alone for 1 s (1 s of work left), then A and B at half rate each: both finish at 3.
		{"join midway", []float64{0, 1}, []float64{2, 1}, []float64{3, 2}},
		// A short task beside a long one stays twice its work, not the long one's.
		{"short beside long", []float64{0, 0.5}, []float64{10, 0.1}, []float64{10.1, 0.2}},
		{"apart", []float64{0, 10}, []float64{1, 1}, []float64{1, 1}},
		{"unsorted input", []float64{1, 0}, []float64{1, 2}, []float64{2, 3}},
	} {
		got := psSojourn(tc.arrive, tc.work)
		for i := range tc.want {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Errorf("%s: stays %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
