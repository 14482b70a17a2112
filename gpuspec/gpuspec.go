// Package gpuspec holds accelerators' published figures (memory, bandwidth, dense tensor
// throughput, links) and the achievable fractions of them that pel's physical floors use.
//
// It is the one owner of these figures: the simulator's cost model and the diagnosis's
// floors both read them here. A datasheet figure is a peak; the Achievable* constants say
// how much of it real kernels reach, each with its source, so a floor is what the hardware
// could do for the work at its best, and measured ÷ floor near 1 means the hardware is the
// limit.
package gpuspec

import (
	"sort"
	"strings"
)

// GPU is one accelerator's datasheet. Dense (non-sparse) BF16 tensor FLOP/s: LLM serving
// does not use 2:4 sparsity.
type GPU struct {
	Key       string  // catalog key, e.g. "h100-sxm"
	ModelName string  // what nvidia-smi / DCGM report (modelName label)
	MemBytes  float64 // HBM / GDDR capacity in bytes
	MemBW     float64 // memory bandwidth, bytes/s
	PeakFLOPS float64 // dense BF16 tensor FLOP/s
	SMs       int     // SMs (NVIDIA) or compute units (AMD)
	// LinkBW is GPU-to-GPU bandwidth per direction, bytes/s (NVLink / Infinity Fabric, or
	// PCIe without them); NVLink is false when peers talk over PCIe.
	LinkBW     float64
	NVLink     bool
	ComputeCap [2]int
	Source     string // the datasheet the figures come from
}

// Achievable fractions of the datasheet peaks. A floor divides the work by peak × fraction;
// each fraction is at or above what measured kernels reach, so a floor is never above what
// a well-tuned engine does.
const (
	// AchievableHBM: a measured vLLM decode of Llama-3-8B on an L4 (AccelMark, vLLM 0.7.3,
	// 61.2 ms per token at concurrency 1) moved the model's 16.06 GB of weights at 262 GB/s,
	// 0.875 of the datasheet's 300 GB/s (counting every weight, the input embedding's too);
	// a streaming kernel reached 0.83 on V100 (Jia et al., "Dissecting the NVIDIA Volta GPU
	// Architecture via Microbenchmarking", 2018). A floor must stay below every real
	// measurement: 0.90.
	AchievableHBM = 0.90
	// AchievableTensor: large BF16 GEMMs in cuBLAS reach about three quarters of the dense
	// peak on Ampere and Hopper (the simulator's calibration uses 0.75); 0.80 sits above it.
	AchievableTensor = 0.80
	// AchievableLink: nccl-tests' all-reduce bus bandwidth on NVLink reaches about 80% of
	// the per-direction link figure (nccl-tests PERFORMANCE.md defines busbw as
	// size × 2(n−1)/n / time, comparable to the link's peak).
	AchievableLink = 0.80
)

// catalog: figures from each vendor's datasheet.
var catalog = []GPU{
	{Key: "h100-sxm", ModelName: "NVIDIA H100 80GB HBM3", MemBytes: 80e9, MemBW: 3.35e12, PeakFLOPS: 989e12, SMs: 132,
		LinkBW: 450e9, NVLink: true, ComputeCap: [2]int{9, 0},
		Source: "NVIDIA H100 Tensor Core GPU Datasheet: 3.35 TB/s HBM3, 989 TFLOPS dense BF16, NVLink 900 GB/s bidirectional; SMs from the Hopper whitepaper"},
	{Key: "h200", ModelName: "NVIDIA H200", MemBytes: 141e9, MemBW: 4.8e12, PeakFLOPS: 989e12, SMs: 132,
		LinkBW: 450e9, NVLink: true, ComputeCap: [2]int{9, 0},
		Source: "NVIDIA H200 Tensor Core GPU Datasheet: 141 GB HBM3e, 4.8 TB/s, 989 TFLOPS dense BF16, NVLink 900 GB/s"},
	{Key: "a100-80gb", ModelName: "NVIDIA A100-SXM4-80GB", MemBytes: 80e9, MemBW: 2.039e12, PeakFLOPS: 312e12, SMs: 108,
		LinkBW: 300e9, NVLink: true, ComputeCap: [2]int{8, 0},
		Source: "NVIDIA A100 Tensor Core GPU Datasheet: 2,039 GB/s HBM2e, 312 TFLOPS dense BF16, NVLink 3 600 GB/s bidirectional"},
	{Key: "a100-40gb", ModelName: "NVIDIA A100-SXM4-40GB", MemBytes: 40e9, MemBW: 1.555e12, PeakFLOPS: 312e12, SMs: 108,
		LinkBW: 300e9, NVLink: true, ComputeCap: [2]int{8, 0},
		Source: "NVIDIA A100 Tensor Core GPU Datasheet: 1,555 GB/s HBM2, otherwise as the 80GB SXM4 part"},
	{Key: "l4", ModelName: "NVIDIA L4", MemBytes: 24e9, MemBW: 300e9, PeakFLOPS: 121e12, SMs: 58,
		LinkBW: 32e9, NVLink: false, ComputeCap: [2]int{8, 9},
		Source: "NVIDIA L4 Tensor Core GPU Datasheet: 24 GB GDDR6 at 300 GB/s, 121 TFLOPS dense BF16, PCIe Gen4 x16"},
	// NVIDIA publishes no datasheet for the A10G (AWS G5); its memory system is the A10's,
	// and the A10 datasheet's figures stand in for it.
	{Key: "a10g", ModelName: "NVIDIA A10G", MemBytes: 24e9, MemBW: 600e9, PeakFLOPS: 125e12, SMs: 80,
		LinkBW: 32e9, NVLink: false, ComputeCap: [2]int{8, 6},
		Source: "NVIDIA A10 Tensor Core GPU Datasheet (A10G has no datasheet of its own): 24 GB GDDR6 at 600 GB/s, 125 TFLOPS dense BF16, PCIe Gen4 x16"},
	{Key: "mi300x", ModelName: "AMD Instinct MI300X", MemBytes: 192e9, MemBW: 5.3e12, PeakFLOPS: 1307.4e12, SMs: 304,
		LinkBW: 64e9, NVLink: true,
		Source: "AMD Instinct MI300X datasheet: 192 GB HBM3 at 5.3 TB/s, 1,307.4 TFLOPS dense BF16, 304 CUs, Infinity Fabric links of 128 GB/s bidirectional"},
}

// Lookup returns a catalog GPU by key (case-insensitive).
func Lookup(key string) (GPU, bool) {
	k := strings.ToLower(strings.TrimSpace(key))
	for _, g := range catalog {
		if g.Key == k {
			return g, true
		}
	}
	return GPU{}, false
}

// ByModelName finds the catalog GPU a reported model name describes (DCGM's modelName
// label, nvidia-smi's name, or a catalog key): an exact name first, then the catalog entry
// whose name the reported one contains, longest first ("NVIDIA H100 80GB HBM3" is the
// H100 SXM; "NVIDIA H100 PCIe" is no catalog entry and stays unknown).
func ByModelName(name string) (GPU, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return GPU{}, false
	}
	if g, ok := Lookup(n); ok {
		return g, true
	}
	for _, g := range catalog {
		if strings.ToLower(g.ModelName) == n {
			return g, true
		}
	}
	best, bl := GPU{}, 0
	for _, g := range catalog {
		m := strings.ToLower(g.ModelName)
		if strings.Contains(n, m) && len(m) > bl {
			best, bl = g, len(m)
		}
	}
	return best, bl > 0
}

// Keys lists the catalog keys, sorted.
func Keys() []string {
	out := make([]string, 0, len(catalog))
	for _, g := range catalog {
		out = append(out, g.Key)
	}
	sort.Strings(out)
	return out
}
