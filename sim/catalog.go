package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pel-ladder/pel/gpuspec"
)

// GPU holds the published figures the roofline needs. Dense (non-sparse) BF16 tensor FLOP/s
// are used, since LLM serving does not use 2:4 sparsity.
type GPU struct {
	Name       string  // catalog key, e.g. "h100-sxm"
	ModelName  string  // what nvidia-smi / DCGM report (modelName label)
	MemBytes   float64 // HBM / GDDR capacity in bytes
	MemBW      float64 // memory bandwidth, bytes/s
	PeakFLOPS  float64 // dense BF16 tensor-core FLOP/s
	SMs        int
	LinkBW     float64 // GPU-to-GPU bandwidth per direction, bytes/s (NVLink, or PCIe without it)
	LinkNVLink bool    // false: peers talk over PCIe
	ComputeCap [2]int
}

// gpus is the GPU catalog: package gpuspec's datasheet figures (the one place they live),
// in the cost model's terms.
var gpus = func() map[string]GPU {
	out := map[string]GPU{}
	for _, k := range gpuspec.Keys() {
		g, _ := gpuspec.Lookup(k)
		out[k] = GPU{Name: g.Key, ModelName: g.ModelName, MemBytes: g.MemBytes, MemBW: g.MemBW, PeakFLOPS: g.PeakFLOPS,
			SMs: g.SMs, LinkBW: g.LinkBW, LinkNVLink: g.NVLink, ComputeCap: g.ComputeCap}
	}
	return out
}()

// Model holds a decoder-only transformer's shape, from its Hugging Face config.json.
type Model struct {
	Name         string  // catalog key and default served model name
	HFName       string  // Hugging Face repository
	Params       float64 // total parameters
	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int
	Vocab        int
	TiedEmbed    bool
	DTypeBytes   float64 // 2 for bf16
	MaxModelLen  int     // max_position_embeddings
	// ActiveParams, set for a mixture-of-experts model, are the parameters one token's
	// forward pass uses (shared layers plus its top-k experts); Params then counts every
	// expert, which is what memory holds. Intermediate is the active experts' FFN width
	// together, so the layer shape carries the active compute and weight traffic (the
	// small-batch limit, where a step's tokens share their experts).
	ActiveParams float64
	// Experts and ExpertsPerToken (top-k) describe a mixture-of-experts model's FFN: each
	// layer holds Experts experts of Intermediate/ExpertsPerToken width, and each token is
	// routed to ExpertsPerToken of them. A step reads every expert any of its tokens was
	// routed to (ExpertTrafficFactor), so its weight traffic grows with its token count.
	Experts, ExpertsPerToken int
	// KVDTypeBytes is the KV cache's bytes per element when it differs from the weights'
	// (vLLM's --kv-cache-dtype fp8 with bf16 weights: 1); 0 means DTypeBytes.
	KVDTypeBytes float64
}

// models is the model catalog; shapes come from each repository's config.json and parameter
// counts from its model card:
//   - meta-llama/Meta-Llama-3-8B: 32 layers, hidden 4096, 32 heads, 8 KV heads, FFN 14336,
//     vocab 128256, 8.03B parameters, context 8192.
//   - meta-llama/Meta-Llama-3-70B: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672,
//     vocab 128256, 70.6B parameters.
//   - Qwen/Qwen2.5-7B: 28 layers, hidden 3584, 28 heads, 4 KV heads, FFN 18944, vocab 152064,
//     7.62B parameters, context 32768.
//   - Qwen/Qwen3-8B: 36 layers, hidden 4096, 32 heads, 8 KV heads, head dim 128, FFN 12288,
//     vocab 151936, untied embeddings, 8.19B parameters (6.95B non-embedding), context 40960.
//   - Qwen/Qwen2.5-0.5B: 24 layers, hidden 896, 14 heads, 2 KV heads, head dim 64, FFN 4864,
//     vocab 151936, tied embeddings, 0.49B parameters.
//   - mistralai/Mixtral-8x7B-v0.1: 32 layers, hidden 4096, 32 heads, 8 KV heads, 8 experts
//     of FFN 14336 with 2 active per token, vocab 32000, 46.7B parameters (12.9B active),
//     context 32768.
//   - tiny: a made-up 4-layer model for fast tests (parameters computed from its shape).
var models = map[string]Model{
	"llama-3-8b": {Name: "llama-3-8b", HFName: "meta-llama/Meta-Llama-3-8B", Params: 8.03e9, Layers: 32,
		Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256,
		DTypeBytes: 2, MaxModelLen: 8192},
	"llama-3-70b": {Name: "llama-3-70b", HFName: "meta-llama/Meta-Llama-3-70B", Params: 70.6e9, Layers: 80,
		Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256,
		DTypeBytes: 2, MaxModelLen: 8192},
	"qwen2.5-7b": {Name: "qwen2.5-7b", HFName: "Qwen/Qwen2.5-7B", Params: 7.62e9, Layers: 28,
		Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064,
		DTypeBytes: 2, MaxModelLen: 32768},
	"qwen3-8b": {Name: "qwen3-8b", HFName: "Qwen/Qwen3-8B", Params: 8.19e9, Layers: 36,
		Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 12288, Vocab: 151936,
		DTypeBytes: 2, MaxModelLen: 40960},
	"qwen2.5-0.5b": {Name: "qwen2.5-0.5b", HFName: "Qwen/Qwen2.5-0.5B", Params: 0.49e9, Layers: 24,
		Hidden: 896, Heads: 14, KVHeads: 2, HeadDim: 64, Intermediate: 4864, Vocab: 151936, TiedEmbed: true,
		DTypeBytes: 2, MaxModelLen: 32768},
	"mixtral-8x7b": {Name: "mixtral-8x7b", HFName: "mistralai/Mixtral-8x7B-v0.1", Params: 46.7e9, ActiveParams: 12.9e9,
		Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 2 * 14336, Vocab: 32000,
		DTypeBytes: 2, MaxModelLen: 32768, Experts: 8, ExpertsPerToken: 2},
	"tiny": func() Model {
		m := Model{Name: "tiny", HFName: "pel/tiny-test-model", Layers: 4, Hidden: 256, Heads: 4, KVHeads: 2,
			HeadDim: 64, Intermediate: 1024, Vocab: 32000, DTypeBytes: 2, MaxModelLen: 4096}
		m.Params = m.layerParams()*float64(m.Layers) + 2*float64(m.Vocab*m.Hidden)
		return m
	}(),
}

// LookupGPU returns a catalog GPU by key (case-insensitive).
func LookupGPU(name string) (GPU, error) {
	g, ok := gpus[strings.ToLower(name)]
	if !ok {
		return GPU{}, fmt.Errorf("unknown gpu %q (known: %s)", name, strings.Join(GPUNames(), ", "))
	}
	return g, nil
}

// LookupModel returns a catalog model by key (case-insensitive).
func LookupModel(name string) (Model, error) {
	m, ok := models[strings.ToLower(name)]
	if !ok {
		return Model{}, fmt.Errorf("unknown model %q (known: %s)", name, strings.Join(ModelNames(), ", "))
	}
	return m, nil
}

// GPUNames lists the GPU catalog keys, sorted.
func GPUNames() []string { return slices.Sorted(maps.Keys(gpus)) }

// ModelNames lists the model catalog keys, sorted.
func ModelNames() []string { return slices.Sorted(maps.Keys(models)) }

// Per-layer matmul weight counts; they split the layer's weight traffic among its GEMMs.
func (m Model) qkvParams() float64 {
	return float64(m.Hidden) * float64((m.Heads+2*m.KVHeads)*m.HeadDim)
}
func (m Model) oParams() float64      { return float64(m.Heads*m.HeadDim) * float64(m.Hidden) }
func (m Model) gateUpParams() float64 { return 2 * float64(m.Hidden) * float64(m.Intermediate) }
func (m Model) downParams() float64   { return float64(m.Intermediate) * float64(m.Hidden) }
func (m Model) layerParams() float64 {
	return m.qkvParams() + m.oParams() + m.gateUpParams() + m.downParams()
}

// embedParams is the input embedding table: a lookup reads only the rows it needs, so it is
// excluded from the per-step weight traffic (the LM head is read in full).
func (m Model) embedParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// lmHeadParams is the output projection (the tied embedding when TiedEmbed).
func (m Model) lmHeadParams() float64 { return float64(m.Vocab) * float64(m.Hidden) }

// StreamedParams are the parameters a forward pass reads from memory once per step: all of
// them except the input embedding table (unless it is tied to the LM head, then it is read
// there anyway).
func (m Model) StreamedParams() float64 {
	if m.ActiveParams > 0 {
		return m.ActiveParams - m.embedParams()
	}
	if m.TiedEmbed {
		return m.Params
	}
	return m.Params - m.embedParams()
}

// KVBytesPerToken is the K and V cache of one token over all layers:
// 2 × layers × KV heads × head dim × KV dtype bytes (128 KiB for Llama-3-8B in bf16, 64 KiB
// with an FP8 cache).
func (m Model) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * m.kvDTypeBytes()
}

func (m Model) kvDTypeBytes() float64 {
	if m.KVDTypeBytes > 0 {
		return m.KVDTypeBytes
	}
	return m.DTypeBytes
}

// moe reports whether the model routes tokens to a subset of its experts.
func (m Model) moe() bool {
	return m.Experts > 1 && m.ExpertsPerToken > 0 && m.ExpertsPerToken < m.Experts
}

// DistinctExperts is the expected number of a layer's experts that at least one of tokens
// tokens is routed to, with uniform, independent top-k routing: each expert is missed by one
// token with probability 1 − k/E, so E × (1 − (1 − k/E)^tokens) are hit. One token hits k;
// a few dozen hit nearly all E. A dense model has one "expert", its FFN.
func (m Model) DistinctExperts(tokens int) float64 {
	if !m.moe() {
		return 1
	}
	if tokens < 1 {
		tokens = 1
	}
	e, k := float64(m.Experts), float64(m.ExpertsPerToken)
	return e * (1 - math.Pow(1-k/e, float64(tokens)))
}

// ExpertTrafficFactor is how many times the active experts' weights a step of tokens tokens
// reads: distinct experts hit ÷ experts per token (1 for one token and for a dense model,
// up to E/k once every expert is hit).
func (m Model) ExpertTrafficFactor(tokens int) float64 {
	if !m.moe() {
		return 1
	}
	return m.DistinctExperts(tokens) / float64(m.ExpertsPerToken)
}

// StepWeightParams are the parameters a forward pass over tokens tokens reads from memory:
// StreamedParams for a dense model; for a mixture of experts, the shared layers plus every
// expert the step's tokens were routed to.
func (m Model) StepWeightParams(tokens int) float64 {
	if !m.moe() {
		return m.StreamedParams()
	}
	ffn := float64(m.Layers) * (m.gateUpParams() + m.downParams())
	return m.StreamedParams() + ffn*(m.ExpertTrafficFactor(tokens)-1)
}
