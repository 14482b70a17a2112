package sim

import (
	"math"
	"testing"
)

// recSink records emissions per sequence.
type recSink struct {
	tokens map[*Seq][]int
	times  map[*Seq][]float64
	finish map[*Seq]string
}

func newRecSink() *recSink {
	return &recSink{tokens: map[*Seq][]int{}, times: map[*Seq][]float64{}, finish: map[*Seq]string{}}
}

func (r *recSink) Emit(s *Seq, n int, at float64, finish string) {
	r.tokens[s] = append(r.tokens[s], n)
	r.times[s] = append(r.times[s], at)
	if finish != "" {
		r.finish[s] = finish
	}
}

func testEngine(t *testing.T, gpu, model string, cfg EngineConfig, p CostParams) *Engine {
	t.Helper()
	return NewEngine(0, cfg, mustCost(t, gpu, model, p), 1)
}

func words(n int, salt uint32) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i)*2654435761 ^ salt
	}
	return ids
}

// totals accumulates step results the way the Prometheus logger does.
type totals struct {
	steps, preempted, prompt, gen, queries, hits, drafts, draftTok, accepted int
	finished                                                                 []Finished
	maxKV                                                                    float64
	busy, span                                                               float64
}

// drain steps the engine until idle (bounded), accumulating stats.
func drain(t *testing.T, e *Engine, limit int) totals {
	t.Helper()
	var tt totals
	start := e.Now()
	for i := 0; i < limit; i++ {
		r := e.Step()
		if r == nil {
			tt.span = e.Now() - start
			return tt
		}
		tt.steps++
		tt.preempted += r.Preempted
		tt.prompt += r.PromptTokens
		tt.gen += r.GenTokens
		tt.queries += r.PrefixQuery
		tt.hits += r.PrefixHits
		tt.drafts += r.SpecDrafts
		tt.draftTok += r.SpecDraftTok
		tt.accepted += r.SpecAccepted
		tt.maxKV = math.Max(tt.maxKV, r.KVUsage)
		tt.busy += r.Timing.GPUEnd - r.Timing.GPUStart
		tt.finished = append(tt.finished, r.Finished...)
	}
	t.Fatalf("engine not idle after %d steps", limit)
	return tt
}

func submit(e *Engine, sink Sink, prompt, target int, salt uint32, at float64) *Seq {
	s := &Seq{ID: uint64(salt), PromptTokens: prompt, MaxTokens: target, Target: target, Sink: sink}
	e.Submit(s, HashBlocks(words(prompt, salt), e.Cfg.BlockSize), at)
	return s
}

func TestEngineSingleRequest(t *testing.T) {
	e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{}, DefaultCostParams())
	sink := newRecSink()
	s := submit(e, sink, 100, 10, 1, 0)
	tt := drain(t, e, 100)
	if got := sum(sink.tokens[s]); got != 10 {
		t.Fatalf("generated %d tokens, want 10", got)
	}
	if sink.finish[s] != "length" || tt.steps != 10 || tt.prompt != 100 || tt.gen != 10 {
		t.Errorf("finish %q steps %d prompt %d gen %d", sink.finish[s], tt.steps, tt.prompt, tt.gen)
	}
	f := tt.finished[0]
	if f.Queue != 0 || f.Prefill <= 0 || f.Decode <= 0 || !near(f.E2E, f.Queue+f.Prefill+f.Decode, 1e-9) {
		t.Errorf("request timing %+v: want e2e = queue + prefill + decode", f)
	}
	// Decode steps at batch 1: the weights at the achieved bandwidth plus the per-step
	// overhead (4.48 ms / 0.8 + 1 ms), kernel floors and the frontend adding a little.
	itl := f.Decode / 9
	want := e.Cost.DecodeRoofline(1, 100)/e.Cost.P.MemEff + e.Cost.P.StepOverheadUS*1e-6
	if itl < want || itl > 1.15*want {
		t.Errorf("ITL %.3f ms vs %.3f ms (roofline %.3f ms)", itl*1e3, want*1e3, e.Cost.DecodeRoofline(1, 100)*1e3)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func TestChunkedPrefillSplitsLongPrompt(t *testing.T) {
	for _, chunked := range []bool{true, false} {
		e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{MaxBatchedTokens: 2048, ChunkedPrefill: chunked}, DefaultCostParams())
		sink := newRecSink()
		s := submit(e, sink, 5000, 2, 1, 0)
		steps := 0
		for len(sink.tokens[s]) == 0 && steps < 10 {
			e.Step()
			steps++
		}
		want := 3 // ceil(5000/2048)
		if !chunked {
			want = 1 // budget raised to max_model_len: one whole prefill
		}
		if steps != want {
			t.Errorf("chunked=%v: first token after %d steps, want %d", chunked, steps, want)
		}
	}
}

func TestPrefixCacheHits(t *testing.T) {
	e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{PrefixCaching: true, ChunkedPrefill: true}, DefaultCostParams())
	sink := newRecSink()
	// Two prompts share their first 512 tokens (32 blocks of 16), then differ.
	a := append(words(512, 7), words(100, 1)...)
	b := append(words(512, 7), words(100, 2)...)
	s1 := &Seq{PromptTokens: len(a), Target: 4, MaxTokens: 4, Sink: sink}
	e.Submit(s1, HashBlocks(a, 16), 0)
	drain(t, e, 100)
	s2 := &Seq{PromptTokens: len(b), Target: 4, MaxTokens: 4, Sink: sink}
	e.Submit(s2, HashBlocks(b, 16), e.Now())
	tt := drain(t, e, 100)
	if tt.queries != 612 || tt.hits != 512 {
		t.Errorf("prefix queries %d hits %d, want 612 and 512", tt.queries, tt.hits)
	}
	if tt.prompt != 100 {
		t.Errorf("computed %d prompt tokens for the second request, want 100 (the rest cached)", tt.prompt)
	}
	// Without prefix caching nothing hits.
	e2 := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{PrefixCaching: false, ChunkedPrefill: true}, DefaultCostParams())
	e2.Submit(&Seq{PromptTokens: len(a), Target: 2, MaxTokens: 2}, HashBlocks(a, 16), 0)
	drain(t, e2, 100)
	e2.Submit(&Seq{PromptTokens: len(b), Target: 2, MaxTokens: 2}, HashBlocks(b, 16), e2.Now())
	if tt := drain(t, e2, 100); tt.hits != 0 {
		t.Errorf("%d hits with prefix caching off", tt.hits)
	}
}

// With KV for 1,600 tokens and 8 requests that each grow to 400, the scheduler must preempt
// and recompute, yet every request still gets exactly its tokens.
func TestPreemptionByRecompute(t *testing.T) {
	e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{KVBlocks: 100, ChunkedPrefill: true, PrefixCaching: false}, DefaultCostParams())
	sink := newRecSink()
	var seqs []*Seq
	for i := 0; i < 8; i++ {
		seqs = append(seqs, submit(e, sink, 100, 300, uint32(i+1), 0))
	}
	tt := drain(t, e, 20000)
	if tt.preempted == 0 {
		t.Fatal("no preemptions although demand (3,200 tokens) is twice the KV capacity (1,600)")
	}
	if tt.maxKV < 0.95 {
		t.Errorf("max KV usage %.2f, want pinned near 1", tt.maxKV)
	}
	if tt.prompt <= 800 {
		t.Errorf("prompt tokens %d: recompute after preemption should re-prefill", tt.prompt)
	}
	for _, s := range seqs {
		if got := sum(sink.tokens[s]); got != 300 || sink.finish[s] != "length" {
			t.Errorf("seq %d: %d tokens, finish %q", s.ID, got, sink.finish[s])
		}
	}
	if e.KVUsage() != 0 {
		t.Errorf("KV usage %.3f after all finished, want 0", e.KVUsage())
	}
}

func TestSpeculativeDecoding(t *testing.T) {
	tests := []struct {
		accept   float64
		perStep  float64 // expected tokens per decode step: 1 + E[accepted]
		tolRatio float64
	}{
		{1, 5, 0},
		{0, 1, 0},
		{0.5, 1 + expectedAccepted(4, 0.5), 0.12},
	}
	for _, tc := range tests {
		e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{SpecK: 4, SpecAcceptance: tc.accept, SpecDraftFrac: 0.1}, DefaultCostParams())
		sink := newRecSink()
		s := submit(e, sink, 50, 1001, 1, 0)
		tt := drain(t, e, 5000)
		if got := sum(sink.tokens[s]); got != 1001 {
			t.Fatalf("accept %.2f: %d tokens, want 1001", tc.accept, got)
		}
		per := float64(1000) / float64(len(sink.tokens[s])-1)
		if !near(per, tc.perStep, tc.tolRatio+0.01) {
			t.Errorf("accept %.2f: %.3f tokens per step, want %.3f", tc.accept, per, tc.perStep)
		}
		if tt.draftTok != 4*tt.drafts || tt.accepted > tt.draftTok {
			t.Errorf("drafts %d draft tokens %d accepted %d", tt.drafts, tt.draftTok, tt.accepted)
		}
	}
}

// Low acceptance with a costly draft makes per-token latency worse than no speculation.
func TestSpeculationCanBeNegative(t *testing.T) {
	perToken := func(k int) float64 {
		e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{SpecK: k, SpecAcceptance: 0.25, SpecDraftFrac: 0.25}, DefaultCostParams())
		sink := newRecSink()
		s := submit(e, sink, 100, 500, 1, 0)
		drain(t, e, 5000)
		ts := sink.times[s]
		return (ts[len(ts)-1] - ts[0]) / 499
	}
	with, without := perToken(4), perToken(0)
	if with < 1.2*without {
		t.Errorf("per-token time with speculation %.3f ms, without %.3f ms: want ≥1.2× worse", with*1e3, without*1e3)
	}
}

// Without chunked prefill a short request arriving behind a long prompt waits for its whole
// prefill; with chunking and a per-prefill cap (long_prefill_token_threshold) it gets in at
// the next step.
func TestPrefillHeadOfLine(t *testing.T) {
	ttft := func(chunked bool) float64 {
		e := testEngine(t, "a100-80gb", "llama-3-8b", EngineConfig{ChunkedPrefill: chunked, MaxBatchedTokens: 2048,
			LongPrefillThreshold: 512}, DefaultCostParams())
		sink := newRecSink()
		submit(e, sink, 7000, 8, 1, 0)
		e.Step() // the long prompt's first step
		// The short request arrived 10 ms into that step.
		short := submit(e, sink, 100, 8, 2, 0.010)
		drain(t, e, 1000)
		return sink.times[short][0] - short.Arrival
	}
	blocked, chunked := ttft(false), ttft(true)
	if blocked < 3*chunked {
		t.Errorf("short TTFT behind a long prefill: %.1f ms unchunked vs %.1f ms chunked, want ≥3×", blocked*1e3, chunked*1e3)
	}
}

// Scheduler CPU per sequence makes throughput flatten with concurrency while the GPU idles.
func TestSchedulerCPUFlattensThroughput(t *testing.T) {
	through := func(p CostParams, n int) (tokPerS, gpuShare float64) {
		e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{MaxNumSeqs: 512}, p)
		// Long answers: decode, where the host loop runs every step, dominates the prefills.
		for i := 0; i < n; i++ {
			submit(e, nil, 200, 400, uint32(i+1), 0)
		}
		tt := drain(t, e, 10000)
		return float64(tt.gen) / tt.span, tt.busy / tt.span
	}
	slow := DefaultCostParams()
	slow.SchedStepUS, slow.SchedSeqUS, slow.Overlap = 2000, 300, false
	fast := DefaultCostParams() // vLLM's default: the host loop overlapped with the GPU
	s8, _ := through(slow, 8)
	s128, share := through(slow, 128)
	f8, _ := through(fast, 8)
	f128, _ := through(fast, 128)
	if slowGain, fastGain := s128/s8, f128/f8; slowGain > 0.5*fastGain {
		t.Errorf("throughput gain 8→128: slow scheduler %.2f×, fast %.2f×: want the slow one to flatten", slowGain, fastGain)
	}
	if share > 0.4 {
		t.Errorf("GPU busy %.2f of the time at 128 sequences with a slow scheduler, want idle most of it", share)
	}
}

func TestColdStartStalls(t *testing.T) {
	e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{ColdStartup: 3, ColdCompile: 0.5, ColdShapes: 2}, DefaultCostParams())
	sink := newRecSink()
	first := submit(e, sink, 100, 4, 1, 0)
	drain(t, e, 100)
	later := submit(e, sink, 100, 4, 2, e.Now()+1)
	drain(t, e, 100)
	t1 := sink.times[first][0] - first.Arrival
	t2 := sink.times[later][0] - later.Arrival
	if t1 < 3.5 || t2 > 0.1 {
		t.Errorf("cold TTFT %.3f s (want ≥ 3.5: startup + compile), warm TTFT %.3f s", t1, t2)
	}
}

func TestAbortFreesBlocks(t *testing.T) {
	e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{}, DefaultCostParams())
	sink := newRecSink()
	s := submit(e, sink, 1000, 1000, 1, 0)
	e.Step()
	e.Step()
	s.Abort()
	tt := drain(t, e, 10)
	if sink.finish[s] != "abort" || len(tt.finished) != 1 || tt.finished[0].Reason != "abort" {
		t.Errorf("finish %q, finished %+v", sink.finish[s], tt.finished)
	}
	if e.KVUsage() != 0 {
		t.Errorf("KV usage %.3f after abort", e.KVUsage())
	}
}

func TestKVCapacityFromMemory(t *testing.T) {
	c := mustCost(t, "h100-sxm", "llama-3-8b", DefaultCostParams())
	// (80 GB × 0.9 − 16.06 GB weights − 2 GB activations) / (16 × 128 KiB) = 25,720 blocks.
	want := 25720 // floor(25720.6)
	if got := KVBlocksFromMemory(c, EngineConfig{BlockSize: 16}); got != want {
		t.Errorf("%d blocks, want %d", got, want)
	}
}

func TestHashBlocksChainsPrefixes(t *testing.T) {
	a := HashBlocks(append(words(32, 1), words(16, 2)...), 16)
	b := HashBlocks(append(words(32, 1), words(16, 3)...), 16)
	c := HashBlocks(append(words(16, 9), words(32, 1)[16:]...), 16)
	if len(a) != 3 || a[0] != b[0] || a[1] != b[1] || a[2] == b[2] {
		t.Errorf("shared prefix blocks should hash equal, the differing block not: %v %v", a, b)
	}
	if c[1] == a[1] {
		t.Error("equal block after a different prefix must hash differently (chained)")
	}
}
