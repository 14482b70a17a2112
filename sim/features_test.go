package sim

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A decoupled frontend (vLLM V1's API-server processes) never holds the engine core: the
// engine's steps, its ITL histogram and its finish time are those of a free frontend, while
// clients get tokens when the API servers have handled them, no earlier than the frontend's
// own work (tokens × token_us ÷ servers) and no later than that after the engine is done. A
// coupled frontend that cannot keep up slows the engine itself.
func TestDecoupledFrontend(t *testing.T) {
	const seqs, out, tokenUS = 128, 64, 200.0
	type run struct {
		engineEnd, lastClient float64
		itls, ttftMetric      []float64
		ttftEngine            []float64
	}
	do := func(decoupled bool, servers int, us float64) run {
		p := DefaultCostParams()
		p.FrontendTokenUS, p.FrontendStepUS = us, 0
		p.FrontendDecoupled, p.APIServers = decoupled, servers
		e := testEngine(t, "h100-sxm", "qwen2.5-0.5b", EngineConfig{MaxNumSeqs: 256, ChunkedPrefill: true}, p)
		sink := newRecSink()
		var all []*Seq
		for i := 0; i < seqs/2; i++ {
			all = append(all, submit(e, sink, 64, out, uint32(i+1), 0))
		}
		var r run
		for i := 0; i < 10000; i++ {
			if len(all) < seqs && e.Now() >= 0.05 {
				// A second wave, whose first tokens meet an API server already busy.
				for j := seqs / 2; j < seqs; j++ {
					all = append(all, submit(e, sink, 64, out, uint32(j+1), e.Now()))
				}
			}
			res := e.Step()
			if res == nil {
				break
			}
			r.itls = append(r.itls, res.ITLs...)
			r.ttftMetric = append(r.ttftMetric, res.TTFTs...)
		}
		r.engineEnd = e.Now()
		for _, s := range all {
			r.ttftEngine = append(r.ttftEngine, s.FirstToken-s.Arrival)
			ts := sink.times[s]
			r.lastClient = math.Max(r.lastClient, ts[len(ts)-1])
			if got := sum(sink.tokens[s]); got != out {
				t.Fatalf("seq %d got %d tokens, want %d", s.ID, got, out)
			}
		}
		return r
	}
	free := do(false, 1, 0)
	work := float64(seqs*out) * tokenUS * 1e-6 // the frontend's CPU over the whole run
	tests := []struct {
		name          string
		decoupled     bool
		servers       int
		engineSlowed  bool
		clientAtLeast float64 // the API servers' own work, each handling its share
		lateTTFT      bool    // the second wave's first tokens wait for a busy API server
	}{
		{"coupled: the engine core waits for a slow frontend", false, 1, true, work, false},
		{"decoupled, one API server", true, 1, false, work, true},
		{"decoupled, four API servers", true, 4, false, work / 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(tc.decoupled, tc.servers, tokenUS)
			if tc.engineSlowed {
				if r.engineEnd < 1.5*free.engineEnd {
					t.Errorf("engine finished at %.3f s, free frontend %.3f s: a coupled slow frontend must slow it", r.engineEnd, free.engineEnd)
				}
				return
			}
			if r.engineEnd != free.engineEnd || !slices.Equal(r.itls, free.itls) {
				t.Errorf("engine end %.6f s vs %.6f s, ITLs equal %v: a decoupled frontend must not change engine time",
					r.engineEnd, free.engineEnd, slices.Equal(r.itls, free.itls))
			}
			if r.lastClient < tc.clientAtLeast || r.lastClient > r.engineEnd+tc.clientAtLeast {
				t.Errorf("last token reached its client at %.3f s: want within [%.3f, %.3f] (frontend work %.3f s after an engine done at %.3f s)",
					r.lastClient, tc.clientAtLeast, r.engineEnd+tc.clientAtLeast, tc.clientAtLeast, r.engineEnd)
			}
			// vLLM's TTFT histogram is stamped when the frontend picks the step's outputs up:
			// never before the engine produced the token.
			late := 0
			for i := range r.ttftMetric {
				if r.ttftMetric[i] < free.ttftMetric[i]-1e-12 {
					t.Fatalf("TTFT metric %d: %.6f s before the engine's %.6f s", i, r.ttftMetric[i], free.ttftMetric[i])
				}
				if r.ttftMetric[i] > free.ttftMetric[i]+1e-9 {
					late++
				}
			}
			if tc.lateTTFT && late == 0 {
				t.Error("no TTFT waited for a busy API server")
			}
		})
	}
	// Four API servers share the load: clients are served sooner than by one.
	one, four := do(true, 1, tokenUS), do(true, 4, tokenUS)
	if four.lastClient >= one.lastClient {
		t.Errorf("last client token with 4 API servers %.3f s, with 1 %.3f s: want sooner", four.lastClient, one.lastClient)
	}
}

// max_num_partial_prefills bounds the prompts prefilled across steps at once and
// max_long_partial_prefills the long ones among them; a short prompt behind a long one that
// must wait goes first.
func TestPartialPrefillBounds(t *testing.T) {
	tests := []struct {
		name               string
		bound, longBound   int
		prompts            []int
		wantMax, wantLongs int // the most prefills in flight at once, and long ones
		order              []int
	}{
		// With a 256-token cap per prompt per step and a 2048-token budget, all four run.
		{"no bound", 0, 0, []int{2000, 2000, 2000, 2000}, 4, 0, nil},
		{"one at a time", 1, 0, []int{2000, 2000, 2000, 2000}, 1, 1, []int{0, 1, 2, 3}},
		{"two at a time", 2, 2, []int{2000, 2000, 2000, 2000}, 2, 2, []int{0, 1, 2, 3}},
		// The second long prompt waits for the first; a medium one (over the budget it may
		// take per step, under the long threshold) passes it.
		{"one long of two", 2, 1, []int{2000, 2000, 400}, 2, 1, []int{2, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := EngineConfig{ChunkedPrefill: true, MaxBatchedTokens: 2048, LongPrefillThreshold: 256,
				MaxPartialPrefills: tc.bound, MaxLongPartialPrefills: tc.longBound}
			if tc.name == "one long of two" {
				cfg.MaxBatchedTokens, cfg.LongPrefillThreshold = 512, 1000
			}
			e := testEngine(t, "h100-sxm", "llama-3-8b", cfg, DefaultCostParams())
			sink := newRecSink()
			var seqs []*Seq
			for i, n := range tc.prompts {
				seqs = append(seqs, submit(e, sink, n, 4, uint32(i+1), 0))
			}
			most, longs := 0, 0
			for i := 0; i < 10000 && e.Step() != nil; i++ {
				n, l := 0, 0
				for _, s := range e.running {
					if s.computed < s.PromptTokens {
						n++
						if s.longPrefill {
							l++
						}
					}
				}
				most, longs = max(most, n), max(longs, l)
			}
			if most != tc.wantMax || longs != tc.wantLongs {
				t.Errorf("%d prompts prefilled at once (%d long), want %d (%d long)", most, longs, tc.wantMax, tc.wantLongs)
			}
			if tc.order != nil {
				idx := make([]int, len(seqs))
				for i := range idx {
					idx[i] = i
				}
				slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(seqs[a].FirstToken, seqs[b].FirstToken) })
				if !slices.Equal(idx, tc.order) {
					t.Errorf("first tokens in order %v, want %v", idx, tc.order)
				}
			}
		})
	}
}

// The block pool is what memory leaves after the weights and the reserved share, divided by
// a block's bytes at the KV cache's own dtype: an FP8 cache beside bf16 weights holds twice
// the tokens, and memory held for activations, CUDA graphs or other processes holds none.
func TestKVPoolFromMemory(t *testing.T) {
	const weights = 8.03e9 * 2 // Llama-3-8B in bf16 on one H100
	tests := []struct {
		name       string
		kvBytes    float64
		reserveGiB float64
		want       int
	}{
		// (80 GB × 0.9 − 16.06 GB − 2 GB) / (16 × 128 KiB) = 25,720.6 blocks.
		{"bf16 cache, default reserve", 0, 0, 25720},
		// The same memory over 16 × 64 KiB blocks: 51,441.2.
		{"fp8 cache", 1, 0, 51441},
		// (72 − 16.06 − 10.737) GB / 2 MiB = 21,554.2.
		{"10 GiB reserved", 0, 10, 21554},
		// 45.20 GB / 1 MiB = 43,108.5.
		{"fp8 cache, 10 GiB reserved", 1, 10, 43108},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "name: x\nowner_layer: none\nengine:\n  gpu: h100-sxm\n  model: llama-3-8b\n"
			if tc.kvBytes > 0 {
				doc += "  kv_dtype_bytes: 1\n"
			}
			if tc.reserveGiB > 0 {
				doc += "  reserved_gib: 10\n"
			}
			s, err := ParseScenario([]byte(doc), nil, "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.KVCapacityTokens() / 16; got != tc.want {
				t.Errorf("%d blocks, want %d", got, tc.want)
			}
			// The hand figure, from the formula, agrees.
			kv := 131072.0
			if tc.kvBytes == 1 {
				kv /= 2
			}
			reserve := 2e9
			if tc.reserveGiB > 0 {
				reserve = tc.reserveGiB * (1 << 30)
			}
			if hand := int((80e9*0.9 - weights - reserve) / (16 * kv)); hand != tc.want {
				t.Errorf("hand figure %d, table %d", hand, tc.want)
			}
			// A decode step reads the KV cache at its own width: 32 sequences of 2k tokens read
			// half the KV bytes in FP8.
			c := srv.cost
			kvRead := 32 * 2049 * c.Model.KVBytesPerToken()
			if want := 32 * 2049 * kv; kvRead != want {
				t.Errorf("KV read %.0f bytes, want %.0f", kvRead, want)
			}
		})
	}
}

// A tensor-parallel all-reduce moves 2(n−1)/n of the step's activations over the link at its
// bus bandwidth, plus a fixed latency per collective (nccl-tests' busbw definition): half the
// bandwidth doubles the transfer, four ranks send 1.5× what two do.
func TestLinkBandwidthAllReduce(t *testing.T) {
	tests := []struct {
		tp      int
		gbps    float64 // 0: the catalog's PCIe figure for the A10G, 32 GB/s
		tokens  int
		wantPer float64 // seconds per all-reduce, by hand
	}{
		// 256 tokens × 4096 × 2 B = 2 MiB; TP=2 sends 2·1/2 of it: 2,097,152 B / 32e9 = 65.5 us.
		{2, 0, 256, 10e-6 + 2097152/32e9},
		{2, 8, 256, 10e-6 + 2097152/8e9},
		// TP=4 sends 2·3/4 = 1.5× the tensor.
		{4, 8, 256, 10e-6 + 1.5*2097152/8e9},
		// One decode token: 8 KiB, latency-bound.
		{2, 8, 1, 10e-6 + 8192/8e9},
	}
	for _, tc := range tests {
		p := DefaultCostParams()
		p.TP, p.LinkBW = tc.tp, tc.gbps*1e9
		c := mustCost(t, "a10g", "llama-3-8b", p)
		b := Batch{Seqs: []SeqWork{{New: tc.tokens, Sampled: true}}}
		st := c.StepCost(b, 0)
		if want := 64 * tc.wantPer; !near(st.CommBusy, want, 1e-6) {
			t.Errorf("tp %d, %g GB/s, %d tokens: %.1f us of all-reduce per step, hand figure %.1f us",
				tc.tp, tc.gbps, tc.tokens, st.CommBusy*1e6, want*1e6)
		}
	}
	// Through a scenario key.
	s, err := ParseScenario([]byte("name: x\nowner_layer: none\nengine:\n  gpu: a10g\n  tensor_parallel: 2\n  link_gbps: 12.5\n"), nil, "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c := NewCostModel(gpus["a10g"], models["llama-3-8b"], s.costParams()); c.P.LinkBW != 12.5e9 {
		t.Errorf("link_gbps 12.5 gave %g B/s", c.P.LinkBW)
	}
}

// Structured output's bitmask is built on the engine core for each structured sequence's
// sampled positions before the step samples: it lengthens the step by its host time whether
// the scheduler is async or not, and costs nothing for requests that did not ask for it.
func TestStructuredOutputStallsSteps(t *testing.T) {
	const us = 50.0
	tests := []struct {
		name       string
		structured int // of 32 decoding sequences
		async      bool
		specK      int
	}{
		{"none structured", 0, false, 0},
		{"all structured, sync", 32, false, 0},
		{"all structured, async", 32, true, 0},
		{"a quarter structured", 8, true, 0},
		{"with 3 drafts each", 8, true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			step := func(grammarUS float64) (*StepResult, float64) {
				p := DefaultCostParams()
				p.Overlap, p.GrammarTokenUS = tc.async, grammarUS
				e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{SpecK: tc.specK, SpecDraftFrac: 0.05}, p)
				for i := 0; i < 32; i++ {
					s := submit(e, nil, 100, 50, uint32(i+1), 0)
					s.Structured = i < tc.structured
				}
				e.Step() // the prefills
				r := e.Step()
				return r, r.Timing.End - r.Timing.Start
			}
			r, with := step(us)
			_, without := step(0)
			masks := float64(tc.structured * (1 + tc.specK))
			if want := masks * us * 1e-6; !near(r.Batch.Grammar, want, 1e-9) || !near(with-without, want, 1e-6) && want > 0 || want == 0 && with != without {
				t.Errorf("grammar %.1f us, step %.3f ms vs %.3f ms without: want %.0f us longer", r.Batch.Grammar*1e6, with*1e3, without*1e3, want*1e6)
			}
		})
	}
	// A request asks for it with response_format or vLLM's guided_* parameters.
	for body, want := range map[string]bool{
		`{"prompt":"a","response_format":{"type":"json_object"}}`:                  true,
		`{"prompt":"a","response_format":{"type":"json_schema","json_schema":{}}}`: true,
		`{"prompt":"a","response_format":{"type":"text"}}`:                         false,
		`{"prompt":"a","guided_regex":"[0-9]+"}`:                                   true,
		`{"prompt":"a"}`:                                                           false,
	} {
		p, aerr := parseRequest([]byte(body), false, "m", 8192)
		if aerr != nil || p.structured != want {
			t.Errorf("%s: structured %v (%v), want %v", body, p != nil && p.structured, aerr, want)
		}
	}
}

// A mixture of experts reads every expert its step's tokens were routed to: with uniform
// top-2 routing over 8 experts, E × (1 − (1 − k/E)^T) per layer, so one token reads the
// active 12.9B parameters and a large batch nearly all 46.7B, while a dense model reads its
// weights once whatever the batch.
func TestMoEExpertTraffic(t *testing.T) {
	mix, _ := LookupModel("mixtral-8x7b")
	dense, _ := LookupModel("llama-3-8b")
	ffn := 32 * 3 * 4096 * 2 * 14336.0 // the active experts' FFN weights: 11.27e9
	tests := []struct {
		tokens   int
		distinct float64 // 8 × (1 − 0.75^T)
	}{
		{1, 2}, {2, 3.5}, {4, 5.46875}, {8, 7.19910}, {64, 8 * (1 - math.Pow(0.75, 64))},
	}
	for _, tc := range tests {
		if got := mix.DistinctExperts(tc.tokens); !near(got, tc.distinct, 1e-5) {
			t.Errorf("%d tokens: %.5f experts per layer, want %.5f", tc.tokens, got, tc.distinct)
		}
		want := mix.StreamedParams() + ffn*(tc.distinct/2-1)
		if got := mix.StepWeightParams(tc.tokens); !near(got, want, 1e-6) {
			t.Errorf("%d tokens: %.4g parameters read, want %.4g", tc.tokens, got, want)
		}
		if dense.StepWeightParams(tc.tokens) != dense.StreamedParams() {
			t.Errorf("dense model's weight traffic changes with %d tokens", tc.tokens)
		}
	}
	// Every expert read: all parameters but the input embedding.
	if got, all := mix.StepWeightParams(256), mix.Params-mix.embedParams(); !near(got, all, 0.01) {
		t.Errorf("256 tokens read %.4g parameters, the whole model is %.4g", got, all)
	}
	// In the step's kernels: a 64-sequence decode step's GEMMs read ~3.6× what one
	// sequence's do on the MoE, the same bytes on the dense model.
	gemmBytes := func(m string, n int) float64 {
		c := mustCost(t, "h200", m, DefaultCostParams())
		b := Batch{Seqs: make([]SeqWork, n)}
		for i := range b.Seqs {
			b.Seqs[i] = SeqWork{New: 1, Context: 100, Sampled: true}
		}
		total := 0.0
		for _, k := range c.Plan(b) {
			if k.Kind == kGEMM {
				total += k.Bytes
			}
		}
		return total
	}
	if r := gemmBytes("mixtral-8x7b", 64) / gemmBytes("mixtral-8x7b", 1); r < 3.3 || r > 3.8 {
		t.Errorf("MoE GEMM bytes at 64 sequences %.2f× one sequence's, want ~3.6× (46.6/12.8)", r)
	}
	if r := gemmBytes("llama-3-8b", 64) / gemmBytes("llama-3-8b", 1); r > 1.05 {
		t.Errorf("dense GEMM bytes at 64 sequences %.2f× one sequence's, want ~1×", r)
	}
}

// serve_metrics: false hides /metrics (404) and cannot be combined with evidence that needs it.
func TestServeMetricsKey(t *testing.T) {
	tests := []struct {
		doc        string
		wantErr    bool
		wantStatus int
	}{
		{"name: x\nowner_layer: none\nevidence: [metrics]\n", false, http.StatusOK},
		{"name: x\nowner_layer: none\nevidence: [dcgm]\nengine:\n  serve_metrics: false\n", false, http.StatusNotFound},
		{"name: x\nowner_layer: none\nevidence: [metrics]\nengine:\n  serve_metrics: false\n", true, 0},
	}
	for _, tc := range tests {
		s, err := ParseScenario([]byte(tc.doc), nil, "x.yaml")
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "serve_metrics") {
				t.Errorf("%q: error %v, want one naming serve_metrics", tc.doc, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(s, Options{Speed: 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start("127.0.0.1:0", ""); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(srv.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("%q: /metrics answered %d, want %d", tc.doc, resp.StatusCode, tc.wantStatus)
		}
	}
}
