package stats

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// A one-request run has no rate: "goodput 1234/s" over a 0.0 s window would be noise.
func TestOneTaskHasNoRate(t *testing.T) {
	rs := []record.Record{rec(spec{sched: 0, sent: 0, chunkMs: []float64{0.5}, tokens: []int{1}, done: 0.8, accepted: true})}
	s := Summarize(ptrs(rs), 800*time.Microsecond, 0)
	if s.GoodputRPS != 0 || s.ThroughputRPS != 0 || s.OutputTokensPerS != 0 || s.Accepted != 1 {
		t.Errorf("one task: goodput %v throughput %v tokens/s %v", s.GoodputRPS, s.ThroughputRPS, s.OutputTokensPerS)
	}
}
