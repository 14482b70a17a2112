package sweep

import (
	"fmt"
	"slices"
)

// Quantities a point can lack samples of (Point.NotMeasured).
const (
	QTTFT = "ttft"
	QITL  = "itl"
	QE2E  = "e2e"
)

// Measured reports whether the point has samples of quantity q.
func (p Point) Measured(q string) bool { return !slices.Contains(p.NotMeasured, q) }

// MsText formats one of the point's latencies (ms) for a table: "not measured" when the
// point has no sample of it, never a 0.
func (p Point) MsText(q string, v float64) string {
	if !p.Measured(q) {
		return "not measured"
	}
	return fmt.Sprintf("%.1f", v)
}
