package diagnose

import (
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
)

// SLOBounds maps a contract's global SLO onto the client signals the rules and headroom read
// (Options.SLO), in milliseconds. A percentile bound maps to that percentile's signal; a
// per-request max stands in for the p99 signal when no p99 is given, since a p99 over the
// max means at least 1% of tasks were rejected for it.
func SLOBounds(s contract.SLO) map[string]float64 {
	out := map[string]float64{}
	set := func(sig string, d time.Duration) {
		if d > 0 {
			out[sig] = float64(d) / float64(time.Millisecond)
		}
	}
	set(evidence.SigTTFTP50, s.TTFT.P50)
	set(evidence.SigTTFTP95, s.TTFT.P95)
	set(evidence.SigTTFTP99, first(s.TTFT.P99, s.TTFT.Max))
	set(evidence.SigITLP50, s.ITL.P50)
	set(evidence.SigITLP99, first(s.ITL.P99, s.ITL.Max))
	set(evidence.SigTPOTP50, first(s.TPOT.P50, s.TPOT.P99, s.TPOT.Max))
	set(evidence.SigE2EP50, s.E2E.P50)
	set(evidence.SigE2EP99, first(s.E2E.P99, s.E2E.Max))
	return out
}

func first(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}
