package contract

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// System describes the deployment under test for what no endpoint says of itself (the GPU
// a CPU-side proxy hides, a model's parameter count): pel's physical floors read it where
// the engine and DCGM are silent, and what they report wins over it. It is not hashed: it
// describes the system, not the workload, and two systems run the same contract.
type System struct {
	// GPU is the accelerator: a catalog key (h100-sxm, a100-80gb, l4, a10g, h200, mi300x)
	// or the name nvidia-smi reports.
	GPU string `json:"gpu,omitempty"`
	// GPUs serving one replica (tensor × pipeline parallel); 0: unknown.
	GPUs int `json:"gpus,omitempty"`
	// TensorParallel is the tensor-parallel degree; 0: unknown (GPUs is then taken).
	TensorParallel int `json:"tensor_parallel,omitempty"`
	// Params and ActiveParams (a mixture of experts: those one token uses) count weights.
	Params       float64 `json:"params,omitempty"`
	ActiveParams float64 `json:"active_params,omitempty"`
	// DType of the weights: bf16, fp16, fp8, int8, int4.
	DType string `json:"dtype,omitempty"`
	// KVBytesPerToken is the KV cache of one token over all layers (2 × layers × KV heads
	// × head dim × bytes per element).
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	// Layers and Hidden give the all-reduce message of a tensor-parallel step.
	Layers int `json:"layers,omitempty"`
	Hidden int `json:"hidden,omitempty"`
	// Experts and ExpertsPerToken describe a mixture of experts (Mixtral: 8 and 2): a step's
	// tokens reach more distinct experts the more tokens it holds, so the bytes it reads grow
	// from the active parameters (one token) toward all of them (package diagnose's floors).
	Experts         int `json:"experts,omitempty"`
	ExpertsPerToken int `json:"experts_per_token,omitempty"`
}

// IsZero reports whether no system field is set.
func (s System) IsZero() bool { return s == System{} }

// dtypeBytes are the bytes per weight of each dtype the system block names.
var dtypeBytes = map[string]float64{"bf16": 2, "fp16": 2, "float16": 2, "bfloat16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp32": 4}

// DTypeBytes is the bytes per weight of DType (0 when unset or unknown).
func (s System) DTypeBytes() float64 { return dtypeBytes[strings.ToLower(s.DType)] }

func (d *decoder) system(n *yaml.Node, path string, s *System) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	m.str("gpu", &s.GPU)
	nonNeg := func(key string, dst *int) {
		if m.int(key, dst) && *dst < 0 {
			m.errf(key, "must not be negative, got %d", *dst)
		}
	}
	nonNeg("gpus", &s.GPUs)
	nonNeg("tensor_parallel", &s.TensorParallel)
	nonNeg("layers", &s.Layers)
	nonNeg("hidden", &s.Hidden)
	nonNeg("experts", &s.Experts)
	nonNeg("experts_per_token", &s.ExpertsPerToken)
	if s.ExpertsPerToken > s.Experts {
		m.errf("experts_per_token", "%d is more than experts %d", s.ExpertsPerToken, s.Experts)
	}
	pos := func(key string, dst *float64) {
		if m.float(key, dst) && *dst < 0 {
			m.errf(key, "must not be negative, got %v", *dst)
		}
	}
	pos("params", &s.Params)
	pos("active_params", &s.ActiveParams)
	pos("kv_bytes_per_token", &s.KVBytesPerToken)
	if s.ActiveParams > 0 && s.Params > 0 && s.ActiveParams > s.Params {
		m.errf("active_params", "%g is more than params %g", s.ActiveParams, s.Params)
	}
	if m.str("dtype", &s.DType) && s.DTypeBytes() == 0 {
		m.errf("dtype", "unknown dtype %q (want bf16|fp16|fp8|int8|int4|fp32)", s.DType)
	}
	m.finish()
}
