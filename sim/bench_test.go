package sim

import "testing"

// BenchmarkEngineStep measures the engine alone (no HTTP): steps of 2,000 running sequences
// (64-token prompts, 1,000-token answers, finished ones replaced at once) on Llama-3-8B /
// H100, including scheduling, KV allocation, the prefix cache and the cost model's kernel
// timeline. `go test ./sim -run XXX -bench EngineStep`.
func BenchmarkEngineStep(b *testing.B) {
	g, _ := LookupGPU("h100-sxm")
	m, _ := LookupModel("llama-3-8b")
	e := NewEngine(0, EngineConfig{MaxNumSeqs: 4096, MaxBatchedTokens: 1 << 16, ChunkedPrefill: true,
		PrefixCaching: true, KVBlocks: 1 << 18}, NewCostModel(g, m, DefaultCostParams()), 1)
	next := uint32(0)
	add := func() {
		next++
		e.Submit(&Seq{PromptTokens: 64, Target: 1000, MaxTokens: 1000}, HashBlocks(words(64, next), 16), e.Now())
	}
	for i := 0; i < 2000; i++ {
		add()
	}
	b.ResetTimer()
	tokens, preempted := 0, 0
	for i := 0; i < b.N; i++ {
		r := e.Step()
		tokens += r.GenTokens
		preempted += r.Preempted
		for range r.Finished {
			add()
		}
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	if preempted > 0 {
		b.Fatalf("%d preemptions: the benchmark should measure steady decoding", preempted)
	}
}
