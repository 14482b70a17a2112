package diagnose

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/gpuspec"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// system is what pel knows of the deployment for its physical floors: what the system
// reported of itself first (DCGM, the engine), the contract's system block for the rest.
type system struct {
	gpu      gpuspec.GPU
	gpuKnown bool
	tp       int     // GPUs sharing one replica's weights (tensor parallel)
	gpus     int     // GPUs in the deployment (replicas × tp)
	active   float64 // parameters one token reads
	dtypeB   float64 // bytes per weight
	kvB      float64 // KV bytes per token, 0 when unknown
	layers   int
	hidden   int
	// experts and perToken describe a mixture of experts (0: dense); total is every
	// parameter, active those one token reads.
	experts, perToken int
	total             float64
	facts             []evidence.ConfigFact
	unknown           []string
}

// actBytes: activations cross the tensor-parallel all-reduce in bf16 (2 bytes), vLLM's and
// SGLang's default activation dtype.
const actBytes = 2

// systemOf gathers the floors' inputs, each with its source.
func systemOf(cfg map[string]string, o *Options, engines int) system {
	var s system
	sys := o.System
	fact := func(k, v, src string) { s.facts = append(s.facts, evidence.ConfigFact{Key: k, Value: v, Source: src}) }
	if m := cfg[evidence.ConfigGPUModel]; m != "" {
		if g, ok := gpuspec.ByModelName(m); ok {
			s.gpu, s.gpuKnown = g, true
			fact("gpu", m, "dcgm modelName")
		} else {
			s.unknown = append(s.unknown, fmt.Sprintf("GPU %q is not in pel's datasheet catalog (%v)", m, gpuspec.Keys()))
		}
	}
	if !s.gpuKnown && sys.GPU != "" {
		if g, ok := gpuspec.ByModelName(sys.GPU); ok {
			s.gpu, s.gpuKnown = g, true
			fact("gpu", sys.GPU, "contract system.gpu")
		} else {
			s.unknown = append(s.unknown, fmt.Sprintf("contract system.gpu %q is not in pel's datasheet catalog (%v)", sys.GPU, gpuspec.Keys()))
		}
	}
	if !s.gpuKnown && len(s.unknown) == 0 {
		s.unknown = append(s.unknown, "GPU model (DCGM's modelName label via --dcgm, or the contract's system.gpu)")
	}
	if s.gpuKnown {
		fact("datasheet", fmt.Sprintf("%.0f GB/s, %.0f TFLOPS dense BF16", s.gpu.MemBW/1e9, s.gpu.PeakFLOPS/1e12), s.gpu.Source)
	}
	if n, err := strconv.Atoi(cfg[evidence.ConfigGPUCount]); err == nil && n > 0 {
		s.gpus = n
		fact("gpus", strconv.Itoa(n), "dcgm gpu labels")
	} else if sys.GPUs > 0 {
		s.gpus = sys.GPUs
		fact("gpus", strconv.Itoa(sys.GPUs), "contract system.gpus")
	}
	switch {
	case sys.TensorParallel > 0:
		s.tp = sys.TensorParallel
		fact("tensor_parallel", strconv.Itoa(s.tp), "contract system.tensor_parallel")
	case cfg[evidence.ConfigTensorParallel] != "":
		s.tp, _ = strconv.Atoi(cfg[evidence.ConfigTensorParallel])
		fact("tensor_parallel", cfg[evidence.ConfigTensorParallel], "engine configuration")
	case s.gpus > 0 && engines > 0 && s.gpus%engines == 0:
		s.tp = s.gpus / engines
		fact("tensor_parallel", strconv.Itoa(s.tp), fmt.Sprintf("%d GPUs over %d engine replicas", s.gpus, engines))
	}
	if s.tp <= 0 {
		s.tp = 1
		s.unknown = append(s.unknown, "tensor-parallel degree (1 assumed)")
	}
	if s.gpus <= 0 {
		s.gpus = s.tp * max(engines, 1)
	}
	params := sys.Params
	src := "contract system.params"
	if p, err := strconv.ParseFloat(cfg[evidence.ConfigModelParams], 64); err == nil && p > 0 {
		params, src = p, "engine model metadata (n_params)"
	}
	s.active = params
	if sys.ActiveParams > 0 {
		s.active, src = sys.ActiveParams, "contract system.active_params"
	}
	if s.active > 0 {
		fact("active_params", fmt.Sprintf("%.3g", s.active), src)
	} else {
		s.unknown = append(s.unknown, "model parameters (the contract's system.params, or the engine's model metadata)")
	}
	s.dtypeB = sys.DTypeBytes()
	if s.dtypeB > 0 {
		fact("dtype", sys.DType, "contract system.dtype")
	} else {
		s.dtypeB = 2
		s.unknown = append(s.unknown, "weight dtype (bf16 assumed; fp8 would halve the weight floor)")
	}
	if sys.KVBytesPerToken > 0 {
		s.kvB = sys.KVBytesPerToken
		fact("kv_bytes_per_token", fmt.Sprintf("%.0f", s.kvB), "contract system.kv_bytes_per_token")
	} else {
		s.unknown = append(s.unknown, "KV bytes per token (the floors leave the KV read out)")
	}
	s.layers, s.hidden = sys.Layers, sys.Hidden
	if sys.Experts > 0 && sys.ExpertsPerToken > 0 && sys.ExpertsPerToken < sys.Experts && params > s.active {
		s.experts, s.perToken, s.total = sys.Experts, sys.ExpertsPerToken, params
		fact("experts", fmt.Sprintf("%d, %d per token", sys.Experts, sys.ExpertsPerToken), "contract system.experts")
	}
	if s.tp > 1 && (s.layers == 0 || s.hidden == 0) {
		s.unknown = append(s.unknown, "layers and hidden size (the floors leave the all-reduces out)")
	}
	return s
}

// ready reports whether the floors can be computed.
func (s *system) ready() bool { return s.gpuKnown && s.active > 0 }

// decodeStep is the floor of one decode step of batch sequences holding ctx tokens each,
// in ms: the bytes one replica's GPU reads (its share of the weights, its share of the
// batch's KV) over achievable HBM bandwidth, or the step's FLOPs over achievable tensor
// throughput when larger, plus the all-reduces (two per layer) over the link.
func (s *system) decodeStep(batch, ctx float64) (step, comm float64) {
	return s.stepOf(batch, ctx, 1)
}

// stepOf is the floor of one step that computes n tokens of each of batch sequences holding
// ctx tokens (n = 1: a decode step; n = k+1: a speculative verification of k drafts), in
// ms: the weights and the batch's KV are read once, the FLOPs and the all-reduced
// activations grow with the tokens.
func (s *system) stepOf(batch, ctx, n float64) (step, comm float64) {
	tp := float64(s.tp)
	bytes := s.weightsRead(batch*n)*s.dtypeB/tp + batch*ctx*s.kvB/tp
	flops := 2 * s.active * batch * n / tp
	t := math.Max(bytes/(s.gpu.MemBW*gpuspec.AchievableHBM), flops/(s.gpu.PeakFLOPS*gpuspec.AchievableTensor))
	if s.tp > 1 && s.layers > 0 && s.hidden > 0 {
		// Ring all-reduce: each rank sends 2(n−1)/n of the message (nccl-tests' busbw).
		msg := batch * n * float64(s.hidden) * actBytes * 2 * (tp - 1) / tp
		comm = 2 * float64(s.layers) * msg / (s.gpu.LinkBW * gpuspec.AchievableLink)
	}
	return (t + comm) * 1000, comm * 1000
}

// weightsRead is the parameters a step of tokens tokens reads: the active ones for a dense
// model; for a mixture of experts, the shared weights and every expert some token routes
// to. With E experts, k per token and uniform routing, a layer's tokens reach E·(1 − (1 −
// k/E)^tokens) distinct experts in expectation (each expert is missed by a token with
// probability 1 − k/E), so one token reads the active parameters and a large batch nearly
// all of them. The per-expert and shared sizes follow from total = shared + E·e and active
// = shared + k·e.
func (s *system) weightsRead(tokens float64) float64 {
	if s.experts <= 0 || tokens <= 1 {
		return s.active
	}
	E, k := float64(s.experts), float64(s.perToken)
	e := (s.total - s.active) / (E - k)
	shared := s.active - k*e
	reached := E * (1 - math.Pow(1-k/E, tokens))
	return shared + reached*e
}

// prefill is the floor of prefilling p uncached prompt tokens, in ms: 2 FLOPs per active
// weight per token over achievable tensor throughput, or one read of the weights when
// longer (attention's quadratic FLOPs are left out, so it stays a floor).
func (s *system) prefill(p float64) float64 {
	if p <= 0 {
		return 0
	}
	tp := float64(s.tp)
	flops := 2 * s.active * p / tp
	bytes := s.weightsRead(p) * s.dtypeB / tp
	return 1000 * math.Max(flops/(s.gpu.PeakFLOPS*gpuspec.AchievableTensor), bytes/(s.gpu.MemBW*gpuspec.AchievableHBM))
}

// uncached is the prompt tokens the engine had to compute for r.
func uncached(r *record.Record) float64 {
	p := r.PromptTokens
	if r.Server != nil && r.Server.PromptN > 0 {
		return float64(r.Server.PromptN)
	}
	if r.CachedPromptTokens > 0 && r.CachedPromptTokens < p {
		p -= r.CachedPromptTokens
	}
	return float64(p)
}

// OptionsFor is the diagnosis options a contract implies: its objectives, its system block
// and whether the loop is closed.
func OptionsFor(c *contract.Contract) Options {
	return Options{Objectives: c.Objectives(), System: c.System, ClosedLoop: c.Arrival.Process == contract.Closed}
}

// FloorSpec names a deployment for its physical floors outside a diagnosis (benchmarks
// and tables compare measurements with them): the GPU by catalog key or reported name, the
// parameters one token reads, bytes per weight, KV bytes per token (0: left out) and the
// tensor-parallel layout (Layers and Hidden size its all-reduces; 0: left out).
type FloorSpec struct {
	GPU                                       string
	ActiveParams, DTypeBytes, KVBytesPerToken float64
	TP, Layers, Hidden                        int
}

func (f FloorSpec) system() (system, bool) {
	g, ok := gpuspec.ByModelName(f.GPU)
	if !ok || f.ActiveParams <= 0 {
		return system{}, false
	}
	s := system{gpu: g, gpuKnown: true, tp: max(f.TP, 1), active: f.ActiveParams, dtypeB: f.DTypeBytes, kvB: f.KVBytesPerToken,
		layers: f.Layers, hidden: f.Hidden}
	if s.dtypeB <= 0 {
		s.dtypeB = 2
	}
	s.gpus = s.tp
	return s, true
}

// DecodeStepMs is the floor of one decode step of batch sequences holding ctx tokens each.
func (f FloorSpec) DecodeStepMs(batch, ctx float64) (float64, bool) {
	s, ok := f.system()
	if !ok {
		return 0, false
	}
	step, _ := s.decodeStep(batch, ctx)
	return step, true
}

// PrefillMs is the floor of prefilling tokens uncached prompt tokens.
func (f FloorSpec) PrefillMs(tokens float64) (float64, bool) {
	s, ok := f.system()
	if !ok {
		return 0, false
	}
	return s.prefill(tokens), true
}

// infeasible lists the objectives whose limit lies below the physical floor of the work
// they govern: each warm task's own floor (its prefill at the compute floor; its decode at
// one sequence per step, the fastest any schedule can make a token), the floor's quantile
// at the objective's (its worst for a max) against the limit. A limit below that cannot be
// met on this hardware whatever the schedule, batch or load.
func infeasible(sys *system, o *Options, v *view, recs []record.Record) []evidence.Infeasible {
	if !sys.ready() {
		return nil
	}
	// With speculative decoding a step can yield several tokens of a sequence: its floor per
	// token is the step's over the tokens a step yields (the engine's mean accepted length);
	// with speculation on and that length not measured, no decode floor is stated.
	perStep, decodeKnown := 1.0, true
	if l, ok := v.val(evidence.SigSpecMeanAcceptLen); ok && l >= 1 {
		perStep = l
	} else if v.has(evidence.SigSpecAcceptanceRate) {
		decodeKnown = false
	} else if sp, ok := v.config[evidence.ConfigSpeculative]; ok && sp != "" && sp != "off" && sp != "false" && sp != "none" {
		decodeKnown = false
	}
	var out []evidence.Infeasible
	for _, ob := range o.Objectives {
		if ob.Metric != contract.MetricTTFT && !decodeKnown {
			continue
		}
		var floors []float64
		for i := range recs {
			r := &recs[i]
			if r.Phase != record.PhaseWarm || !r.OK() || r.MultiStep() || !contract.Governs(o.Objectives, ob, r.Task) {
				continue
			}
			pre := sys.prefill(uncached(r))
			step, _ := sys.stepOf(1, float64(r.PromptTokens)+float64(r.OutputTokens)/2, 1)
			step /= perStep
			var f float64
			switch ob.Metric {
			case contract.MetricTTFT:
				f = pre
			case contract.MetricITL, contract.MetricTPOT:
				f = step
			case contract.MetricE2E:
				f = pre + step*math.Max(0, float64(r.OutputTokens-1))
			}
			floors = append(floors, f)
		}
		if len(floors) == 0 {
			continue
		}
		q := ob.Quantile
		if ob.PerRequest() {
			q = 1
		}
		fl := quantile.Of(floors, q)
		if fl <= ob.LimitMs() {
			continue
		}
		over := 0
		for _, f := range floors {
			if f > ob.LimitMs() {
				over++
			}
		}
		basis := "prefill at the compute floor"
		switch ob.Metric {
		case contract.MetricITL, contract.MetricTPOT:
			basis = "a decode step of one sequence at the bandwidth floor"
		case contract.MetricE2E:
			basis = "prefill at the compute floor, then each token at one sequence's decode floor"
		}
		out = append(out, evidence.Infeasible{Objective: ob.Name(), LimitMs: figure.Sig3(ob.LimitMs()), FloorMs: figure.Sig3(fl),
			Tasks: over, Of: len(floors), Basis: basis})
	}
	return out
}
