package report

import "github.com/pel-ladder/pel/evidence"

// notMeasured stands wherever a figure has no samples: a quantile of nothing is not 0, and
// no bound is met by it.
const notMeasured = "not measured"

// qnum formats one statistic of a distribution ("p50", "p95", "p99", "mean"), or says the
// distribution has no samples.
func qnum(q evidence.Quantiles, which string) string {
	if q.N == 0 {
		return notMeasured
	}
	switch which {
	case "p50":
		return num(q.P50)
	case "p95":
		return num(q.P95)
	case "p99":
		return num(q.P99)
	case "mean":
		return num(q.Mean)
	}
	return "?"
}
