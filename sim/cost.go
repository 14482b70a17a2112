package sim

import "math"

// CostParams are the engine knobs the cost model needs (a scenario's engine block).
type CostParams struct {
	TP int // tensor-parallel degree (GPUs per replica)
	// CUDAGraphs replays the step as one cudaGraphLaunch when the batch has at most
	// GraphMaxTokens tokens (vLLM captures decode-sized batches, up to 512 by default);
	// larger batches run eagerly, one launch per kernel.
	CUDAGraphs     bool
	GraphMaxTokens int
	LaunchUS       float64 // host cost of one eager launch: framework dispatch + cudaLaunchKernel
	GraphLaunchUS  float64 // host cost of one cudaGraphLaunch
	GraphNodeUS    float64 // device-side gap between consecutive graph nodes
	MinKernelUS    float64 // shortest possible kernel (launch latency on the device, tail effects)
	// The engine core's host loop: scheduling, input preparation and applying the sampled
	// tokens to request state (vLLM V1 EngineCore.step).
	SchedStepUS float64 // host CPU per step
	SchedSeqUS  float64 // host CPU per scheduled sequence
	// Overlap runs the host loop for step n+1 while step n is on the GPU (vLLM's async
	// scheduling, the default since v0.14); otherwise host and GPU work are serial.
	Overlap bool
	// Achieved fractions of the datasheet roofline: real kernels stream weights and
	// activations below peak HBM bandwidth and run GEMMs below peak tensor FLOP/s.
	MemEff   float64
	FLOPSEff float64
	// AttnSeqUS is decode attention's fixed device time per sequence per layer (paged-KV
	// block-table walk, split-KV partial softmax and its reduction), paid whatever the
	// context length: it is why attention over many short contexts is slower than its bytes.
	AttnSeqUS float64
	// StepOverheadUS is device time per step outside the layers' kernels: sampling and
	// logits post-processing, input and output copies, and the boundaries between the pieces
	// of vLLM V1's piecewise CUDA graphs (attention runs between them).
	StepOverheadUS float64
	AllReduceUS    float64 // fixed latency of one all-reduce (NCCL ring setup, sync)
	// LinkBW is the bus bandwidth a tensor-parallel all-reduce achieves, bytes/s per
	// direction (nccl-tests' busbw); 0 takes the GPU's link figure from the catalog.
	LinkBW float64
	// The frontend (vLLM's API-server process): detokenizes each new token and streams it to
	// its client, in parallel with the engine core. FrontendTokenUS is its CPU per output
	// token, FrontendStepUS per engine step (receiving and decoding the step's outputs). When
	// it cannot keep up, clients see tokens late and the engine core, one step ahead at most,
	// waits for it.
	FrontendTokenUS float64
	FrontendStepUS  float64
	// FrontendDecoupled runs the frontend as vLLM V1's separate API-server processes: the
	// engine core pushes each step's outputs and moves on (no wait for the frontend), and
	// the outputs queue at the frontend when it is slower. APIServers (vLLM's
	// --api-server-count) is how many such processes there are; each request is served by
	// one of them, which handles its tokens alone.
	FrontendDecoupled bool
	APIServers        int
	// GrammarTokenUS is the engine core's host time to build one structured-output
	// request's grammar bitmask for one sampled position (guided decoding): the mask must
	// follow the previous step's token and be ready before sampling, so it is on the step's
	// critical path, async scheduling or not.
	GrammarTokenUS float64
}

// Calibrated defaults (sim/calibration_test.go checks them against published vLLM
// measurements; BENCHMARKS.md lists the sources and residuals). Hardware figures come from
// the catalog's datasheets; these are the software's share.
const (
	// defaultMemEff: decode streams the weights at ~80% of datasheet HBM bandwidth. A
	// single-stream sweep of vLLM on A100 40GB reports decode at "roughly 77% of the GPU's
	// memory-bandwidth ceiling"; with defaultStepOverheadUS this fits single-stream TPOT of
	// vLLM 0.20.1 on A100 80GB (AccelMark) within 2%.
	defaultMemEff = 0.80
	// defaultFLOPSEff: cuBLAS BF16 GEMMs at prefill and large-batch shapes reach ~75% of peak
	// tensor FLOP/s; it sets where a growing decode batch turns compute-bound.
	defaultFLOPSEff = 0.75
	// defaultAttnSeqUS: fitted to the TPOT rise from 1 to ~128 concurrent requests of the
	// AccelMark A100 runs (vLLM 0.20.1, ~420-token contexts).
	defaultAttnSeqUS = 1.5
	// defaultStepOverheadUS: the rest of single-stream TPOT beyond the weight stream on A100
	// (10.77 ms measured, 9.2 ms weights at defaultMemEff).
	defaultStepOverheadUS = 1000
	// defaultSchedSeqUS: vLLM V1's engine-core loop spent 5-6 ms between two decode steps of
	// 256 sequences (vllm-project/vllm#10634, Llama-2-7B, before async scheduling):
	// ~21 us per sequence.
	defaultSchedSeqUS = 21
	// defaultFrontendTokenUS: vLLM V1's single API-server process capped a 1B model on A100
	// at 12,850 output tokens/s with 400 streams (vllm-project/vllm#12287, "Before"):
	// ~78 us per streamed token, an upper bound since the engine core shared that run.
	defaultFrontendTokenUS = 78
)

// DefaultCostParams are typical figures for vLLM V1 on Hopper/Ampere: PyTorch eager dispatch
// plus cudaLaunchKernel costs several microseconds per op; a graph launch about ten; an NCCL
// all-reduce on NVLink has a latency floor around ten microseconds; async scheduling on, as
// vLLM has shipped it by default since v0.14.
func DefaultCostParams() CostParams {
	return CostParams{TP: 1, CUDAGraphs: true, GraphMaxTokens: 512, LaunchUS: 6, GraphLaunchUS: 12,
		GraphNodeUS: 0.4, MinKernelUS: 1.5, SchedStepUS: 300, SchedSeqUS: defaultSchedSeqUS, Overlap: true,
		MemEff: defaultMemEff, FLOPSEff: defaultFLOPSEff, AttnSeqUS: defaultAttnSeqUS,
		StepOverheadUS: defaultStepOverheadUS, AllReduceUS: 10, FrontendTokenUS: defaultFrontendTokenUS}
}

// kernelKind classifies kernels for the DCGM and trace views.
type kernelKind uint8

const (
	kGEMM kernelKind = iota
	kAttn
	kElem
	kComm
	kSample
	kDraft
)

// Kernel is one planned device kernel with its roofline inputs and resulting duration.
type Kernel struct {
	Name      string
	Kind      kernelKind
	FLOPs     float64 // tensor-core FLOPs
	Bytes     float64 // DRAM bytes
	CommBytes float64 // bytes each rank sends (all-reduce)
	Ideal     float64 // datasheet roofline seconds: max(FLOPs/peak, bytes/bandwidth)
	Dur       float64 // actual seconds: at achieved efficiency, plus fixed work, floored
}

// SeqWork is one sequence's share of a step: New tokens computed on top of Context cached
// ones; Sampled when the step ends with a sampled token for it (last prefill chunk or decode).
type SeqWork struct {
	New, Context int
	Sampled      bool
}

// Batch is what one engine step runs.
type Batch struct {
	Seqs []SeqWork
	// SpecK draft tokens per decode (0: no speculation) and the draft model's cost as a
	// fraction of the target model's decode pass.
	SpecK         int
	SpecDraftFrac float64
	Compile       float64 // seconds of compile / graph capture stalling this step (cold start)
	// Grammar is the seconds of host time building structured-output bitmasks before this
	// step can sample (GrammarTokenUS × structured positions sampled).
	Grammar float64
}

// Tokens is the batch's total new tokens (the step's token count in vLLM's sense).
func (b Batch) Tokens() int {
	n := 0
	for _, s := range b.Seqs {
		n += s.New
	}
	return n
}

// CostModel turns a Batch into a kernel list and a step timeline for one GPU and model.
type CostModel struct {
	GPU   GPU
	Model Model
	P     CostParams
}

// NewCostModel fills unset parameters with defaults.
func NewCostModel(g GPU, m Model, p CostParams) *CostModel {
	d := DefaultCostParams()
	if p.TP <= 0 {
		p.TP = 1
	}
	if p.MemEff <= 0 || p.MemEff > 1 {
		p.MemEff = d.MemEff
	}
	if p.FLOPSEff <= 0 || p.FLOPSEff > 1 {
		p.FLOPSEff = d.FLOPSEff
	}
	if p.GraphMaxTokens <= 0 {
		p.GraphMaxTokens = d.GraphMaxTokens
	}
	if p.LinkBW <= 0 {
		p.LinkBW = g.LinkBW
	}
	if p.APIServers <= 0 {
		p.APIServers = 1
	}
	return &CostModel{GPU: g, Model: m, P: p}
}

// Roofline is the lower bound on a kernel's time at the datasheet figures:
// max(FLOPs / peak, bytes / bandwidth).
func (c *CostModel) Roofline(flops, bytes float64) float64 {
	return math.Max(flops/c.GPU.PeakFLOPS, bytes/c.GPU.MemBW)
}

// Achieved is a kernel's time at the achieved fractions of peak (MemEff, FLOPSEff).
func (c *CostModel) Achieved(flops, bytes float64) float64 {
	return math.Max(flops/(c.GPU.PeakFLOPS*c.P.FLOPSEff), bytes/(c.GPU.MemBW*c.P.MemEff))
}

// DecodeRoofline is the pure roofline of a whole decode step of batch sequences that each
// hold ctx cached tokens: weights streamed once (for a mixture of experts, every expert the
// batch's tokens were routed to), KV read once per sequence, 2 FLOPs per active weight per
// token. It ignores launch overhead and kernel floors; tests use it to check the model
// against hand-computed figures.
func (c *CostModel) DecodeRoofline(batch, ctx int) float64 {
	m := c.Model
	tp := float64(c.P.TP)
	bytes := m.StepWeightParams(batch)*m.DTypeBytes/tp + float64(batch)*float64(ctx+1)*m.KVBytesPerToken()/tp
	flops := 2 * m.StreamedParams() * float64(batch) / tp
	return c.Roofline(flops, bytes)
}

// kernel plans one kernel: its datasheet roofline (Ideal) and its achieved time (Dur), plus
// fixed seconds of work the roofline does not see, floored at the shortest kernel.
func (c *CostModel) kernel(name string, kind kernelKind, flops, bytes, fixed float64) Kernel {
	return Kernel{Name: name, Kind: kind, FLOPs: flops, Bytes: bytes, Ideal: c.Roofline(flops, bytes),
		Dur: math.Max(c.Achieved(flops, bytes)+fixed, c.P.MinKernelUS*1e-6)}
}

// Kernel names follow what vLLM's kernels are called in real Kineto traces so that trace
// analysis (HTA-style categories: GEMM, attention, communication) classifies them.
const (
	nameRMSNorm   = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)"
	nameAddNorm   = "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
	nameGEMM      = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	nameRotary    = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)"
	nameCache     = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)"
	nameAttn      = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, true, false, false, true, false, false, false>(flash::Flash_fwd_params)"
	nameSiluMul   = "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"
	nameAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
	nameSoftmax   = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
	nameArgmax    = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)"
	nameDraft     = "void vllm::eagle_draft_forward_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int)"
	nameStepTail  = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, std::array<char*, 1ul> >(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)"
)

// Plan lists the kernels of one forward pass over the batch on one tensor-parallel rank, in
// launch order: per layer norm, QKV GEMM, rotary, KV-cache write, attention, output GEMM,
// (all-reduce), fused add-norm, gate/up GEMM, SiLU-and-mul, down GEMM, (all-reduce); then the
// final norm, LM head and sampler. Speculative decoding prepends the draft passes.
func (c *CostModel) Plan(b Batch) []Kernel {
	m := c.Model
	tp := float64(c.P.TP)
	B := m.DTypeBytes
	T := float64(b.Tokens())
	S := 0.0
	for _, s := range b.Seqs {
		if s.Sampled {
			S++
		}
	}
	d := float64(m.Hidden)
	kvLayer := m.KVBytesPerToken() / float64(m.Layers) / tp
	// Attention per layer, summed over sequences: QK^T and PV are 2 FLOPs each per (query,
	// key, head dim) pair: 4·heads·head_dim·n·(c + (n+1)/2) with causal masking; the whole
	// cached K and V of the sequence is read once.
	var attnFLOPs, attnBytes float64
	for _, s := range b.Seqs {
		n, ctx := float64(s.New), float64(s.Context)
		attnFLOPs += 4 * float64(m.Heads*m.HeadDim) / tp * n * (ctx + (n+1)/2)
		attnBytes += kvLayer * (ctx + n)
	}
	attnBytes += 2 * T * float64(m.Heads*m.HeadDim) * B / tp // Q in, O out
	attnFixed := float64(len(b.Seqs)) * c.P.AttnSeqUS * 1e-6
	gemm := func(params float64, outDim float64) Kernel {
		p := params / tp
		return c.kernel(nameGEMM, kGEMM, 2*p*T, p*B+T*(d+outDim/tp)*B, 0)
	}
	// A mixture of experts' FFN GEMMs compute over the active experts (params carry their
	// width) but read every expert a token of the step was routed to.
	expertX := m.ExpertTrafficFactor(b.Tokens())
	ffn := func(params float64, outDim float64) Kernel {
		p := params / tp
		return c.kernel(nameGEMM, kGEMM, 2*p*T, p*expertX*B+T*(d+outDim/tp)*B, 0)
	}
	elem := func(name string, bytes float64) Kernel { return c.kernel(name, kElem, 0, bytes, 0) }
	comm := func() Kernel {
		if c.P.TP <= 1 {
			return Kernel{}
		}
		// Ring all-reduce of the step's activations (T × hidden × dtype bytes): each rank
		// sends and receives 2·(n−1)/n of it, so at bus bandwidth busbw it takes
		// 2·(n−1)/n × bytes / busbw, plus the collective's fixed latency. This is how
		// nccl-tests defines all-reduce bus bandwidth (PERFORMANCE.md: busbw = algbw ×
		// 2(n−1)/n), the figure comparable to a link's per-direction peak.
		send := 2 * (tp - 1) / tp * T * d * B
		dur := c.P.AllReduceUS*1e-6 + send/c.P.LinkBW
		return Kernel{Name: nameAllReduce, Kind: kComm, Bytes: 2 * send, CommBytes: send, Ideal: dur, Dur: dur}
	}
	nl := 10
	if c.P.TP > 1 {
		nl = 12
	}
	ks := make([]Kernel, 0, m.Layers*nl+13+4*b.SpecK)
	if b.SpecK > 0 && b.SpecDraftFrac > 0 {
		// Each draft pass costs SpecDraftFrac of a target decode pass over the decoding
		// sequences (EAGLE-style heads or a small draft model), split into a few kernels.
		dec := 0.0
		for _, s := range b.Seqs {
			if s.Sampled {
				dec++
			}
		}
		p := m.StreamedParams() / tp * b.SpecDraftFrac
		for i := 0; i < b.SpecK; i++ {
			for j := 0; j < 4; j++ {
				ks = append(ks, c.kernel(nameDraft, kDraft, 2*p*dec/4, p*B/4, 0))
			}
		}
	}
	for l := 0; l < m.Layers; l++ {
		ks = append(ks,
			elem(nameRMSNorm, 2*T*d*B+d*B),
			gemm(m.qkvParams(), float64((m.Heads+2*m.KVHeads)*m.HeadDim)),
			elem(nameRotary, 2*T*float64((m.Heads+m.KVHeads)*m.HeadDim)*B/tp),
			elem(nameCache, 2*T*kvLayer),
			c.kernel(nameAttn, kAttn, attnFLOPs, attnBytes, attnFixed),
			gemm(m.oParams(), d*tp),
		)
		if c.P.TP > 1 {
			ks = append(ks, comm())
		}
		ks = append(ks,
			elem(nameAddNorm, 3*T*d*B+d*B),
			ffn(m.gateUpParams(), 2*float64(m.Intermediate)),
			elem(nameSiluMul, 3*T*float64(m.Intermediate)*B/tp),
			ffn(m.downParams(), d*tp),
		)
		if c.P.TP > 1 {
			ks = append(ks, comm())
		}
	}
	// LM head only for sampled positions (vLLM computes logits for those alone).
	lm := m.lmHeadParams() / tp
	ks = append(ks,
		elem(nameRMSNorm, 2*T*d*B),
		c.kernel(nameGEMM, kGEMM, 2*lm*S, lm*B+S*float64(m.Vocab)/tp*4, 0),
		c.kernel(nameSoftmax, kSample, 0, 2*S*float64(m.Vocab)*4, 0),
		c.kernel(nameArgmax, kSample, 0, S*float64(m.Vocab)*4, 0),
	)
	if c.P.StepOverheadUS > 0 {
		// Device time the layers do not account for, as the copy and bookkeeping kernels it
		// is made of in a real trace (small, SM-light).
		const pieces = 8
		for i := 0; i < pieces; i++ {
			ks = append(ks, c.kernel(nameStepTail, kElem, 0, 0, c.P.StepOverheadUS*1e-6/pieces))
		}
	}
	return ks
}

// StepTiming is the laid-out timeline of one step (virtual seconds) and its device totals.
type StepTiming struct {
	Start, End    float64 // the step's span; the next step starts at End
	SchedEnd      float64 // end of scheduler CPU (== Start with overlap)
	GrammarEnd    float64 // end of structured-output bitmasks (== SchedEnd without any)
	CompileEnd    float64 // end of a cold-start compile stall (== GrammarEnd without one)
	GPUStart      float64 // first kernel start
	GPUEnd        float64 // last kernel end
	Graph         bool    // replayed as a CUDA graph
	Kernels       int
	KernelBusy    float64 // sum of kernel durations (one stream: no overlap)
	SMBusy        float64 // Σ duration × fraction of SMs active
	OccBusy       float64 // Σ duration × SM fraction × achieved occupancy
	TensorBusy    float64 // Σ tensor FLOPs / peak
	DRAMBusy      float64 // Σ bytes / achieved bandwidth
	CommBusy      float64 // Σ all-reduce durations
	NVLinkBytes   float64 // bytes sent by this rank
	LaunchCPUBusy float64 // host time spent launching
}

// KernelVisit receives each kernel as it is laid out: its launch call on the host and its
// execution on the device (virtual seconds).
type KernelVisit func(i int, k *Kernel, launchStart, launchDur, kStart float64)

// Lay places the kernels on a timeline starting at start with sched seconds of scheduler
// CPU, grammar seconds of structured-output bitmasks and compile seconds of compile stall:
// host launches are serial; a kernel starts when both its launch is done and the previous
// kernel has ended (one stream). Graph mode issues one launch for all kernels. Async
// scheduling (Overlap) hides the scheduler's CPU behind the GPU, never the bitmasks: they
// need the previous step's tokens. visit may be nil.
func (c *CostModel) Lay(ks []Kernel, tokens int, start, sched, grammar, compile float64, visit KernelVisit) StepTiming {
	st := StepTiming{Start: start, Kernels: len(ks)}
	cpu := start
	if !c.P.Overlap {
		cpu += sched
	}
	st.SchedEnd = cpu
	cpu += grammar
	st.GrammarEnd = cpu
	cpu += compile
	st.CompileEnd = cpu
	gpuFree := cpu
	st.Graph = c.P.CUDAGraphs && tokens <= c.P.GraphMaxTokens
	var graphReady float64
	if st.Graph {
		graphReady = cpu + c.P.GraphLaunchUS*1e-6
		st.LaunchCPUBusy = c.P.GraphLaunchUS * 1e-6
		cpu = graphReady
	}
	sms := float64(c.GPU.SMs)
	for i := range ks {
		k := &ks[i]
		var ls, ld, kstart float64
		if st.Graph {
			ls, ld = st.CompileEnd, c.P.GraphLaunchUS*1e-6
			kstart = math.Max(gpuFree, graphReady)
			if i > 0 {
				kstart += c.P.GraphNodeUS * 1e-6
			}
		} else {
			ls, ld = cpu, c.P.LaunchUS*1e-6
			cpu += ld
			st.LaunchCPUBusy += ld
			kstart = math.Max(gpuFree, cpu)
		}
		if i == 0 {
			st.GPUStart = kstart
		}
		gpuFree = kstart + k.Dur
		if visit != nil {
			visit(i, k, ls, ld, kstart)
		}
		st.KernelBusy += k.Dur
		smFrac, occ := kernelSMShare(k, sms)
		st.SMBusy += k.Dur * smFrac
		st.OccBusy += k.Dur * smFrac * occ
		if k.Kind == kComm {
			st.CommBusy += k.Dur
			st.NVLinkBytes += k.CommBytes
		} else {
			st.TensorBusy += k.FLOPs / c.GPU.PeakFLOPS
			// The memory interface is active for the whole transfer: the shortfall from peak
			// bandwidth is protocol overhead (refresh, turnarounds) on a busy bus, so a streaming
			// kernel reads DRAM_ACTIVE near 1 in DCGM.
			st.DRAMBusy += math.Min(k.Dur, k.Bytes/(c.GPU.MemBW*c.P.MemEff))
		}
	}
	st.GPUEnd = gpuFree
	if len(ks) == 0 {
		st.GPUStart, st.GPUEnd = cpu, cpu
	}
	st.End = math.Max(st.GPUEnd, cpu)
	if c.P.Overlap {
		st.End = math.Max(st.End, start+grammar+sched)
	}
	return st
}

// kernelSMShare estimates the fraction of SMs a kernel keeps busy and the warp occupancy on
// those SMs. A kernel that runs at its roofline fills the GPU (memory-bound kernels too: their
// SMs are resident, stalled on loads); a kernel stretched to the minimum kernel time did a
// fraction Ideal/Dur of that work, so only that share of SMs was active. NCCL ring kernels use
// a handful of CTAs (8 in the a100-ddp-nccl fixture).
func kernelSMShare(k *Kernel, sms float64) (smFrac, occupancy float64) {
	switch k.Kind {
	case kComm:
		return math.Min(1, 8/sms), 0.03
	case kGEMM, kDraft:
		occupancy = 0.19 // tensor-core GEMMs run 1–2 CTAs of 4 warps per SM (~12 of 64 warps)
	case kAttn:
		occupancy = 0.25
	default:
		occupancy = 0.6 // elementwise kernels launch wide, full blocks
	}
	if k.Dur <= 0 {
		return 0, occupancy
	}
	smFrac = math.Min(1, math.Max(k.Ideal/k.Dur, 1/sms))
	return smFrac, occupancy
}

// StepCost is Plan then Lay with the scheduler CPU time for nseqs sequences.
func (c *CostModel) StepCost(b Batch, start float64) StepTiming {
	ks := c.Plan(b)
	return c.Lay(ks, b.Tokens(), start, c.SchedCPU(len(b.Seqs)), b.Grammar, b.Compile, nil)
}

// SchedCPU is the scheduler's host time for a step of nseqs sequences.
func (c *CostModel) SchedCPU(nseqs int) float64 {
	return (c.P.SchedStepUS + c.P.SchedSeqUS*float64(nseqs)) * 1e-6
}

// WeightBytesPerGPU is the model's weight footprint on one tensor-parallel rank.
func (c *CostModel) WeightBytesPerGPU() float64 {
	return c.Model.Params * c.Model.DTypeBytes / float64(c.P.TP)
}
