package diagnose

import (
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// notStreamedMin: a share of completed tasks flagged not_streamed at which answers are sent
// whole as a rule, not by accident: half. One body instead of a stream is all or nothing per
// server (or per proxy on the way), so the share is ~0 or ~1 in practice.
const notStreamedMin = 0.5

// ruleNotStreamed: the answers came as one JSON body although pel asked for a stream
// (record.FlagNotStreamed). The first token then reaches the client with the last, so TTFT is
// the whole answer's time and no inter-token latency exists to measure: what a user of a
// streaming client waits for the first word is the whole generation.
func ruleNotStreamed(v *view, o *Options) *hit {
	sig := evidence.SigFlagRate(record.FlagNotStreamed)
	m := v.judge(sig, ">=", notStreamedMin)
	if !m.present || !m.holds {
		return nil
	}
	return &hit{
		symptom:    fmt.Sprintf("%.0f%% of completed tasks came as one JSON body although pel asked for a stream: their first token arrived with the last", m.item.Value*100),
		hypothesis: `The server, or a proxy in front of it, does not stream: it ignores "stream": true and sends each answer whole, so TTFT is the time to the whole answer and ITL and TPOT cannot be measured.`,
		items:      []meas{m},
		confidence: confDirect,
		cond:       "the answers are sent whole",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActNoProxyBuffering), Expect: []evidence.Expectation{
			rateGone(sig),
		}, Note: "TTFT then measures the first token, and inter-token latency becomes measurable."},
		nextProbe: `curl -N the endpoint with "stream": true, directly and through any proxy: a streaming server answers Content-Type text/event-stream with data: lines that arrive one by one.`,
		// The first token's wait is the whole answer's: the TTFT the budget cannot split
		// (no server timings for a body sent whole) is this rule's to explain.
		impact: impactSpec{dims: []string{dimTTFT}, match: func(r *record.Record) bool {
			if !r.HasFlag(record.FlagNotStreamed) {
				return false
			}
			for _, why := range r.Reasons {
				if strings.HasPrefix(why, "slo ttft") {
					return true
				}
			}
			return false
		}, matchWhat: "tasks not streamed that missed a TTFT bound"},
		strength: clamp01(m.item.Value),
	}
}
