package diagnose

import (
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// TestEngineTTFTClock: where the engine's TTFT histogram starts, read from its own
// histograms. vLLM's starts at arrival (TTFT = queue + prefill); llm-d-inference-sim's at
// scheduling (its TTFT equals its prefill: the figures of its one-slot queue run in
// test/vllmsim). Without strong evidence of the second, the first stands.
func TestEngineTTFTClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine string
		sigs   []sig
		want   bool
	}{
		{"vLLM under a queue: TTFT = queue + prefill", "vllm", []sig{{evidence.SigServerTTFTMean, 1372}, {evidence.SigServerQueueMean, 1271}, {evidence.SigServerPrefillMean, 101}}, true},
		{"vLLM's API server time adds on top", "vllm", []sig{{evidence.SigServerTTFTMean, 420}, {evidence.SigServerQueueMean, 300}, {evidence.SigServerPrefillMean, 100}}, true},
		{"vLLM under drifting load: TTFT a little under queue + prefill", "vllm", []sig{{evidence.SigServerTTFTMean, 330}, {evidence.SigServerQueueMean, 300}, {evidence.SigServerPrefillMean, 100}}, true},
		{"emulator: TTFT = prefill, the queue left out", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 1271}, {evidence.SigServerPrefillMean, 101}}, false},
		{"a queue too small to tell the clocks apart", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 10}, {evidence.SigServerPrefillMean, 100}}, true},
		{"no prefill histogram: TTFT far shorter than the queue", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 1271}}, false},
		{"no prefill histogram, SGLang's TTFT holds its queue", "sglang", []sig{{evidence.SigServerTTFTMean, 500}, {evidence.SigServerQueueMean, 300}}, true},
		{"empty queue", "vllm", []sig{{evidence.SigServerTTFTMean, 100}, {evidence.SigServerQueueMean, 0}, {evidence.SigServerPrefillMean, 100}}, true},
		{"no queue histogram", "triton", []sig{{evidence.SigServerTTFTMean, 100}}, true},
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
