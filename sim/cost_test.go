package sim

import (
	"math"
	"testing"
)

func mustCost(t *testing.T, gpu, model string, p CostParams) *CostModel {
	t.Helper()
	g, err := LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return NewCostModel(g, m, p)
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// Hand-computed rooflines. Llama-3-8B streams (8.03e9 − 128256·4096 embedding rows) × 2 B =
// 15.009 GB of weights per decode step (the input embedding is a lookup, not a stream), plus
// one token of KV (128 KiB): 15.009 GB / 3.35 TB/s = 4.48 ms on H100 (the brief's "16 GB /
// 3.35 TB/s ≈ 4.8 ms" counts the embedding table too).
func TestDecodeRooflineHandFigures(t *testing.T) {
	tests := []struct {
		gpu, model string
		tp, batch  int
		ctx        int
		wantMS     float64
	}{
		{"h100-sxm", "llama-3-8b", 1, 1, 0, 15.0094e9 / 3.35e12 * 1e3},   // 4.480 ms
		{"h200", "llama-3-8b", 1, 1, 0, 15.0094e9 / 4.8e12 * 1e3},        // 3.127 ms
		{"a100-80gb", "llama-3-8b", 1, 1, 0, 15.0094e9 / 2.039e12 * 1e3}, // 7.361 ms
		{"l4", "llama-3-8b", 1, 1, 0, 15.0094e9 / 300e9 * 1e3},           // 50.03 ms
		// 32 sequences at 2k context add 32·2049·128 KiB = 8.594 GB of KV reads.
		{"h100-sxm", "llama-3-8b", 1, 32, 2048, (15.0093e9 + 32*2049*131072.0) / 3.35e12 * 1e3}, // 7.045 ms
		// TP=4 splits the weight stream: 70B: (70.6e9 − 128256·8192)·2 / 4 = 34.77 GB per rank.
		{"h100-sxm", "llama-3-70b", 4, 1, 0, (70.6e9 - 128256*8192.0) * 2 / 4 / 3.35e12 * 1e3}, // 10.38 ms
	}
	for _, tc := range tests {
		c := mustCost(t, tc.gpu, tc.model, CostParams{TP: tc.tp})
		got := c.DecodeRoofline(tc.batch, tc.ctx) * 1e3
		if !near(got, tc.wantMS, 0.002) {
			t.Errorf("%s %s tp=%d batch=%d ctx=%d: roofline %.4f ms, hand figure %.4f ms", tc.gpu, tc.model, tc.tp, tc.batch, tc.ctx, got, tc.wantMS)
		}
	}
}

func TestKVBytesPerToken(t *testing.T) {
	for model, want := range map[string]float64{
		"llama-3-8b":  2 * 32 * 8 * 128 * 2, // 128 KiB
		"llama-3-70b": 2 * 80 * 8 * 128 * 2, // 320 KiB
		"qwen2.5-7b":  2 * 28 * 4 * 128 * 2, // 56 KiB
	} {
		m, _ := LookupModel(model)
		if got := m.KVBytesPerToken(); got != want {
			t.Errorf("%s: %v bytes/token, want %v", model, got, want)
		}
	}
}

// A batch-1 decode with CUDA graphs is the weight stream at the achieved bandwidth plus the
// per-step overhead (the calibrated single-stream TPOT), with kernel floors and graph-node
// gaps adding under 10%: 4.48 ms / 0.8 + 1 ms = 6.6 ms on an H100.
func TestStepCostNearRooflineWithGraphs(t *testing.T) {
	c := mustCost(t, "h100-sxm", "llama-3-8b", DefaultCostParams())
	st := c.StepCost(Batch{Seqs: []SeqWork{{New: 1, Context: 0, Sampled: true}}}, 0)
	roof := c.DecodeRoofline(1, 0)
	want := roof/c.P.MemEff + c.P.StepOverheadUS*1e-6
	gpu := st.GPUEnd - st.GPUStart
	if !st.Graph {
		t.Fatal("batch-1 decode should replay a CUDA graph")
	}
	if gpu < want || gpu > 1.1*want {
		t.Errorf("GPU span %.3f ms, roofline %.3f ms at %.0f%% plus %.0f us: want within [1, 1.1]× of %.3f ms",
			gpu*1e3, roof*1e3, c.P.MemEff*100, c.P.StepOverheadUS, want*1e3)
	}
	if !near(st.End-st.Start, gpu+(st.GPUStart-st.Start), 1e-9) {
		t.Errorf("step end %.6f should be the last kernel's end", st.End)
	}
}

// Prefill is compute-bound: 4096 tokens × 2 × 7.505e9 FLOPs = 61.48 TFLOP / 989 TFLOP/s =
// 62.2 ms of GEMM, plus causal attention 32 layers × 4·4096·4096·2048.5 = 4.40 TFLOP (4.4 ms),
// at the achieved 75% of peak: 88.8 ms.
func TestPrefillComputeBound(t *testing.T) {
	c := mustCost(t, "h100-sxm", "llama-3-8b", DefaultCostParams())
	st := c.StepCost(Batch{Seqs: []SeqWork{{New: 4096, Sampled: true}}}, 0)
	want := (2*7.5047e9*4096 + 32*4*4096*4096*2048.5) / (989e12 * c.P.FLOPSEff)
	gpu := st.GPUEnd - st.GPUStart
	if gpu < want || gpu > 1.1*want {
		t.Errorf("4096-token prefill GPU time %.2f ms, hand figure %.2f ms", gpu*1e3, want*1e3)
	}
	if st.Graph {
		t.Error("a 4096-token batch is above the graph capture size and must run eagerly")
	}
	// Tensor pipes active at the achieved fraction of peak for most of the step.
	if st.TensorBusy/gpu < 0.9*c.P.FLOPSEff {
		t.Errorf("tensor-active share %.2f, want compute-bound (>%.2f)", st.TensorBusy/gpu, 0.9*c.P.FLOPSEff)
	}
}

// Eager launches of a small model's ~250 kernels (20 us each: Python, the dispatcher and
// cudaLaunchKernel, as in the launch-bound scenario) dominate its microsecond kernels.
func TestLaunchBoundEagerVsGraphs(t *testing.T) {
	p := DefaultCostParams()
	p.LaunchUS = 20
	p.CUDAGraphs = false
	eager := mustCost(t, "h100-sxm", "qwen2.5-0.5b", p)
	p.CUDAGraphs = true
	graph := mustCost(t, "h100-sxm", "qwen2.5-0.5b", p)
	b := Batch{Seqs: make([]SeqWork, 8)}
	for i := range b.Seqs {
		b.Seqs[i] = SeqWork{New: 1, Context: 300, Sampled: true}
	}
	se, sg := eager.StepCost(b, 0), graph.StepCost(b, 0)
	launches := float64(se.Kernels) * 20e-6
	if ge := se.GPUEnd - se.SchedEnd; ge < launches {
		t.Errorf("eager device span %.3f ms below %d launches × 20 us", ge*1e3, se.Kernels)
	}
	if se.End-se.Start < 2.5*(sg.End-sg.Start) {
		t.Errorf("eager step %.3f ms not ≥2.5× graph step %.3f ms", (se.End-se.Start)*1e3, (sg.End-sg.Start)*1e3)
	}
	if se.SMBusy/(se.GPUEnd-se.GPUStart) > 0.3 {
		t.Errorf("eager SM-active share %.2f: launch-bound kernels should leave SMs idle", se.SMBusy/(se.GPUEnd-se.GPUStart))
	}
}

func TestTensorParallelAllReduces(t *testing.T) {
	p := DefaultCostParams()
	p.TP = 4
	c := mustCost(t, "l4", "llama-3-8b", p)
	b := Batch{Seqs: []SeqWork{{New: 2048, Sampled: true}}}
	ks := c.Plan(b)
	comm := 0
	for _, k := range ks {
		if k.Kind == kComm {
			comm++
		}
	}
	if comm != 2*32 {
		t.Errorf("%d all-reduces, want 2 per layer = 64", comm)
	}
	st := c.Lay(ks, b.Tokens(), 0, 0, 0, 0, nil)
	// Each all-reduce sends 2·3/4 · 2048·4096·2 B = 25.2 MB over 32 GB/s: 786 us + 10 us.
	wantComm := 64 * (10e-6 + 1.5*2048*4096*2/32e9)
	if !near(st.CommBusy, wantComm, 0.01) {
		t.Errorf("comm time %.2f ms, hand figure %.2f ms", st.CommBusy*1e3, wantComm*1e3)
	}
	if st.NVLinkBytes <= 0 {
		t.Error("no link bytes counted")
	}
}

func TestOverlapHidesSchedulerCPU(t *testing.T) {
	p := DefaultCostParams()
	p.SchedStepUS, p.SchedSeqUS = 2000, 0
	p.Overlap = false
	serial := mustCost(t, "h100-sxm", "llama-3-8b", p)
	p.Overlap = true
	overlap := mustCost(t, "h100-sxm", "llama-3-8b", p)
	b := Batch{Seqs: []SeqWork{{New: 1, Context: 100, Sampled: true}}}
	s1, s2 := serial.StepCost(b, 0), overlap.StepCost(b, 0)
	gpu := s2.GPUEnd - s2.GPUStart
	if !near(s1.End, s2.End+2e-3, 0.05) {
		t.Errorf("serial step %.3f ms should be ~2 ms longer than overlapped %.3f ms", s1.End*1e3, s2.End*1e3)
	}
	if s2.End < 2e-3 || s2.End > math.Max(2e-3, gpu)+1e-4 {
		t.Errorf("overlapped step %.3f ms should be max(sched 2 ms, gpu %.3f ms)", s2.End*1e3, gpu*1e3)
	}
}

func TestCatalogLookups(t *testing.T) {
	if _, err := LookupGPU("b300"); err == nil {
		t.Error("unknown GPU accepted")
	}
	if _, err := LookupModel("gpt-5"); err == nil {
		t.Error("unknown model accepted")
	}
	for _, n := range GPUNames() {
		g, _ := LookupGPU(n)
		if g.MemBW <= 0 || g.PeakFLOPS <= 0 || g.SMs <= 0 || g.MemBytes <= 0 {
			t.Errorf("%s: incomplete figures %+v", n, g)
		}
	}
	for _, n := range ModelNames() {
		m, _ := LookupModel(n)
		// The shape-derived parameter count must match the published one within 3%.
		shape := m.layerParams()*float64(m.Layers) + m.embedParams()
		if !m.TiedEmbed {
			shape += m.lmHeadParams()
		}
		want := m.Params
		if m.ActiveParams > 0 {
			want = m.ActiveParams // a mixture of experts' shape carries its active experts
		}
		if !near(shape, want, 0.03) {
			t.Errorf("%s: shape gives %.3g params, catalog %.3g", n, shape, m.Params)
		}
	}
}
