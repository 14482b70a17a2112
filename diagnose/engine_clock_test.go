package diagnose

import (
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestEngineTTFTClock: where the engine's TTFT histogram starts, read from its own
// histograms. vLLM's starts at arrival (TTFT = queue + prefill); llm-d-inference-sim's at
// scheduling (its TTFT equals its prefill: the figures of its one-slot queue run in
// test/vllmsim). With an empty queue, or no queue histogram, the engine table decides.
func TestEngineTTFTClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine string
		sigs   []sig
		want   bool
	}{
		{"vLLM under a queue: TTFT = queue + prefill", "vllm", []sig{{evidence.SigServerTTFTMean, 1372}, {evidence.SigServerQueueMean, 1271}, {evidence.SigServerPrefillMean, 101}}, true},
		{"vLLM's API server time adds on top", "vllm", []sig{{evidence.SigServerTTFTMean, 420}, {evidence.SigServerQueueMean, 300}, {evidence.SigServerPrefillMean, 100}}, true},
		{"emulator: TTFT = prefill, the queue left out", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 1271}, {evidence.SigServerPrefillMean, 101}}, false},
		{"no prefill histogram: TTFT shorter than the queue", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 1271}}, false},
		{"no prefill histogram, TTFT longer than the queue: the table", "vllm", []sig{{evidence.SigServerTTFTMean, 500}, {evidence.SigServerQueueMean, 300}}, true},
		{"empty queue: the table", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 0}, {evidence.SigServerPrefillMean, 100}}, true},
		{"no queue histogram, an engine the table does not mark", "tgi", []sig{{evidence.SigServerTTFTMean, 100}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(tc.sigs...)
			ev.Run.Engine = tc.engine
			c := engineTTFTClock(newView(ev))
			if c.fromArrival != tc.want {
				t.Errorf("from arrival %v, want %v (%s)", c.fromArrival, tc.want, c.why)
			}
		})
	}
}
