package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pel-ladder/pel/contract"
)

//go:embed scenarios/*.yaml
var scenarioFS embed.FS

// Layers a scenario's fault may live in (pel's seven); "none" for the healthy baseline.
var ownerLayers = []string{"hardware", "kernel", "memory", "scheduling", "parallelism", "speculative", "application", "none"}

// Evidence kinds a scenario needs for its diagnosis.
var evidenceKinds = []string{"metrics", "dcgm", "trace"}

// Scenario is a simulated deployment with one injected fault (or none) and the workload
// contract that exposes it.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	OwnerLayer  string `yaml:"owner_layer"`
	// AlsoReported lists layers of a second fault that must still be reported (at warn or
	// above) next to the owner.
	AlsoReported []string `yaml:"also_reported"`
	Evidence     []string `yaml:"evidence"`
	// Symptom says what an outside observer should see; Why justifies the owner layer.
	Symptom string     `yaml:"symptom"`
	Why     string     `yaml:"why"`
	Engine  EngineSpec `yaml:"engine"`
	// Contract is the workload contract (package contract's YAML): the nested `contract:` string,
	// or the sibling file NAME.contract.yaml.
	Contract []byte `yaml:"-"`

	ContractText string `yaml:"contract"`
}

// EngineSpec is a scenario's simulated deployment.
type EngineSpec struct {
	GPU             string `yaml:"gpu"`
	Model           string `yaml:"model"`
	ServedModelName string `yaml:"served_model_name"`
	TensorParallel  int    `yaml:"tensor_parallel"`
	Replicas        int    `yaml:"replicas"`
	Router          string `yaml:"router"` // round_robin | least_loaded

	MaxNumSeqs           int   `yaml:"max_num_seqs"`
	MaxNumBatchedTokens  int   `yaml:"max_num_batched_tokens"`
	MaxModelLen          int   `yaml:"max_model_len"`
	EnableChunkedPrefill *bool `yaml:"enable_chunked_prefill"`
	LongPrefillThreshold int   `yaml:"long_prefill_token_threshold"`
	// MaxNumPartialPrefills and MaxLongPartialPrefills bound the prompts prefilled across
	// steps at once, and the long ones among them (vLLM's --max-num-partial-prefills and
	// --max-long-partial-prefills; EngineConfig.MaxPartialPrefills). 0: no bound.
	MaxNumPartialPrefills  int     `yaml:"max_num_partial_prefills"`
	MaxLongPartialPrefills int     `yaml:"max_long_partial_prefills"`
	BlockSize              int     `yaml:"block_size"`
	KVCacheTokens          int     `yaml:"kv_cache_tokens"` // overrides sizing from memory
	EnablePrefixCaching    *bool   `yaml:"enable_prefix_caching"`
	GPUMemoryUtilization   float64 `yaml:"gpu_memory_utilization"`
	// ReservedGiB is GPU memory held for everything but weights and KV cache when the block
	// pool is sized (activations, CUDA graphs, NCCL buffers, other processes), per GPU;
	// unset: 2 GB.
	ReservedGiB float64 `yaml:"reserved_gib"`
	// KVDTypeBytes is the KV cache's bytes per element when it differs from the weights'
	// (1: vLLM's --kv-cache-dtype fp8 beside bf16 weights); 0: the weights' dtype.
	KVDTypeBytes float64 `yaml:"kv_dtype_bytes"`

	CUDAGraphs     *bool    `yaml:"cuda_graphs"`
	GraphMaxTokens int      `yaml:"graph_max_tokens"`
	LaunchUS       *float64 `yaml:"launch_us"`
	GraphLaunchUS  *float64 `yaml:"graph_launch_us"`
	MinKernelUS    *float64 `yaml:"min_kernel_us"`
	MemEfficiency  float64  `yaml:"mem_efficiency"`
	// DTypeBytes overrides the model's bytes per weight and KV element (1: FP8 weights and
	// KV cache; 0: the model's own, bf16).
	DTypeBytes     float64  `yaml:"dtype_bytes"`
	FLOPSEfficency float64  `yaml:"flops_efficiency"`
	AllReduceUS    *float64 `yaml:"all_reduce_us"`
	// LinkGBps is the bus bandwidth a tensor-parallel all-reduce reaches, in gigabytes per
	// second per direction (what nccl-tests reports as busbw; e.g. ~20 over PCIe Gen4 x16
	// with peer-to-peer, less when traffic is staged through host memory); 0: the GPU's
	// link figure from the catalog.
	LinkGBps float64 `yaml:"link_gbps"`
	// ServeMetrics false makes the server answer 404 on /metrics (an engine behind a gateway
	// that does not expose it); pel demo then does not scrape it.
	ServeMetrics *bool `yaml:"serve_metrics"`

	Scheduler struct {
		StepUS *float64 `yaml:"step_us"`
		SeqUS  *float64 `yaml:"seq_us"`
		// Async overlaps the host loop with the GPU (vLLM's --async-scheduling, on by default
		// since v0.14). Scenarios run without it unless they say so: the host loop's cost is
		// then visible, as it is for engines that schedule synchronously.
		Async bool `yaml:"async"`
	} `yaml:"scheduler"`
	// Frontend is the API-server process's CPU per streamed token and per engine step.
	// Decoupled runs it as vLLM V1's separate API-server processes, APIServers of them
	// (--api-server-count): the engine core never waits for them, and their backlog delays
	// only what clients see (CostParams.FrontendDecoupled).
	Frontend struct {
		TokenUS    *float64 `yaml:"token_us"`
		StepUS     *float64 `yaml:"step_us"`
		Decoupled  bool     `yaml:"decoupled"`
		APIServers int      `yaml:"api_servers"`
	} `yaml:"frontend"`
	// StructuredOutput is guided decoding's cost on the engine core: TokenUS of host time per
	// structured request per sampled position, serial with the step. It applies to requests
	// that ask for it (response_format json_object/json_schema, vLLM's guided_* parameters)
	// and to a Share of all other requests, drawn per request from the simulator's seed.
	StructuredOutput struct {
		TokenUS float64 `yaml:"token_us"`
		Share   float64 `yaml:"share"`
	} `yaml:"structured_output"`
	Speculative struct {
		NumTokens  int     `yaml:"num_tokens"`
		Acceptance float64 `yaml:"acceptance"`
		DraftCost  float64 `yaml:"draft_cost"`
	} `yaml:"speculative"`
	StreamInterval int `yaml:"stream_interval"`
	Proxy          struct {
		BufferBytes   int      `yaml:"buffer_bytes"`
		FlushInterval Duration `yaml:"flush_interval"`
	} `yaml:"proxy"`
	ColdStart struct {
		Startup Duration `yaml:"startup"`
		Compile Duration `yaml:"compile"`
		Shapes  int      `yaml:"shapes"`
	} `yaml:"cold_start"`
	// EOS, when set, samples where the model would stop on its own; without it (or with
	// ignore_eos) every request generates exactly max_tokens.
	EOS *LengthDist `yaml:"eos"`
}

// Duration is a YAML duration written like "300ms" or "2s".
type Duration time.Duration

// UnmarshalYAML accepts Go duration strings.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 300ms, 2s)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Seconds is the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// LengthDist is a token-length distribution: fixed{value}, uniform{min,max},
// normal{mean,sd}, lognormal{mean,sd} (of the length itself), clipped to [min, max].
type LengthDist struct {
	Dist  string  `yaml:"dist"`
	Value float64 `yaml:"value"`
	Mean  float64 `yaml:"mean"`
	SD    float64 `yaml:"sd"`
	Min   float64 `yaml:"min"`
	Max   float64 `yaml:"max"`
}

func (d *LengthDist) validate() error {
	switch d.Dist {
	case "fixed":
		if d.Value < 1 {
			return errors.New("fixed: value must be >= 1")
		}
	case "uniform":
		if d.Min < 1 || d.Max < d.Min {
			return errors.New("uniform: need 1 <= min <= max")
		}
	case "normal", "lognormal":
		if d.Mean <= 0 || d.SD < 0 {
			return fmt.Errorf("%s: need mean > 0 and sd >= 0", d.Dist)
		}
	default:
		return fmt.Errorf("unknown dist %q (fixed|uniform|normal|lognormal)", d.Dist)
	}
	return nil
}

// Sample draws one length (>= 1).
func (d *LengthDist) Sample(r *rand.Rand) int {
	var v float64
	switch d.Dist {
	case "fixed":
		v = d.Value
	case "uniform":
		v = d.Min + r.Float64()*(d.Max-d.Min+1)
	case "normal":
		v = d.Mean + d.SD*r.NormFloat64()
	case "lognormal":
		// Parameters of the underlying normal from the length's own mean and sd.
		s2 := math.Log(1 + d.SD*d.SD/(d.Mean*d.Mean))
		v = math.Exp(math.Log(d.Mean) - s2/2 + math.Sqrt(s2)*r.NormFloat64())
	}
	if d.Min > 0 {
		v = math.Max(v, d.Min)
	}
	if d.Max > 0 {
		v = math.Min(v, d.Max)
	}
	return max(1, int(v))
}

// Scenarios lists the embedded scenario names, sorted.
func Scenarios() []string {
	ents, _ := fs.ReadDir(scenarioFS, "scenarios")
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".contract.yaml") {
			out = append(out, strings.TrimSuffix(n, ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// LoadScenario loads an embedded scenario by name, or a scenario file by path (a name with a
// path separator or a .yaml/.yml suffix). A file's contract is its nested `contract:` string
// or the sibling NAME.contract.yaml.
func LoadScenario(nameOrFile string) (*Scenario, error) {
	if nameOrFile == "" {
		nameOrFile = "healthy"
	}
	isFile := strings.ContainsRune(nameOrFile, os.PathSeparator) || strings.ContainsRune(nameOrFile, '/') ||
		strings.HasSuffix(nameOrFile, ".yaml") || strings.HasSuffix(nameOrFile, ".yml")
	if !isFile {
		data, err := scenarioFS.ReadFile("scenarios/" + nameOrFile + ".yaml")
		if err != nil {
			if near := contract.Closest(nameOrFile, Scenarios()); near != "" {
				return nil, fmt.Errorf("unknown scenario %q (did you mean %q? known: %s)", nameOrFile, near, strings.Join(Scenarios(), ", "))
			}
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", nameOrFile, strings.Join(Scenarios(), ", "))
		}
		contract, _ := scenarioFS.ReadFile("scenarios/" + nameOrFile + ".contract.yaml")
		return ParseScenario(data, contract, "scenarios/"+nameOrFile+".yaml")
	}
	data, err := os.ReadFile(nameOrFile)
	if err != nil {
		return nil, err
	}
	ext := filepath.Ext(nameOrFile)
	contract, err := os.ReadFile(strings.TrimSuffix(nameOrFile, ext) + ".contract.yaml")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return ParseScenario(data, contract, nameOrFile)
}

// ParseScenario decodes and validates scenario YAML; contract (may be nil) is used when the
// scenario has no nested contract. file names the source in errors.
func ParseScenario(data, contract []byte, file string) (*Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if s.ContractText != "" {
		s.Contract = []byte(s.ContractText)
	} else {
		s.Contract = contract
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &s, nil
}

func (s *Scenario) validate() error {
	if s.Name == "" {
		return errors.New("name: required")
	}
	if !slices.Contains(ownerLayers, s.OwnerLayer) {
		return fmt.Errorf("owner_layer: %q is not one of %s", s.OwnerLayer, strings.Join(ownerLayers, "|"))
	}
	for _, l := range s.AlsoReported {
		if l == "none" || !slices.Contains(ownerLayers, l) {
			return fmt.Errorf("also_reported: %q is not a layer (%s)", l, strings.Join(ownerLayers[:len(ownerLayers)-1], "|"))
		}
	}
	for _, e := range s.Evidence {
		if !slices.Contains(evidenceKinds, e) {
			return fmt.Errorf("evidence: %q is not one of %s", e, strings.Join(evidenceKinds, "|"))
		}
	}
	e := &s.Engine
	if e.GPU == "" {
		e.GPU = "h100-sxm"
	}
	if e.Model == "" {
		e.Model = "llama-3-8b"
	}
	if _, err := LookupGPU(e.GPU); err != nil {
		return fmt.Errorf("engine.gpu: %w", err)
	}
	m, err := LookupModel(e.Model)
	if err != nil {
		return fmt.Errorf("engine.model: %w", err)
	}
	if e.ServedModelName == "" {
		e.ServedModelName = m.Name
	}
	switch {
	case e.TensorParallel < 0 || e.TensorParallel > 8:
		return errors.New("engine.tensor_parallel: must be 1..8")
	case e.Replicas < 0 || e.Replicas > 16:
		return errors.New("engine.replicas: must be 1..16")
	case e.Router != "" && e.Router != "round_robin" && e.Router != "least_loaded":
		return fmt.Errorf("engine.router: %q is not round_robin|least_loaded", e.Router)
	case e.MaxModelLen < 0 || e.MaxNumSeqs < 0 || e.MaxNumBatchedTokens < 0 || e.KVCacheTokens < 0:
		return errors.New("engine: sizes must not be negative")
	case e.MaxNumSeqs > 65536 || e.MaxNumBatchedTokens > 1<<20 || e.KVCacheTokens > maxKVBlocks*16:
		return errors.New("engine: max_num_seqs ≤ 65536, max_num_batched_tokens ≤ 1M, kv_cache_tokens ≤ 4M")
	case e.GraphMaxTokens < 0 || e.GraphMaxTokens > 1<<20 || e.LongPrefillThreshold < 0:
		return errors.New("engine: graph_max_tokens and long_prefill_token_threshold must be in [0, 1M]")
	case e.ColdStart.Shapes < 0 || e.ColdStart.Shapes > 64:
		return errors.New("engine.cold_start.shapes: must be 0..64")
	case e.BlockSize < 0 || e.BlockSize > 1024:
		return errors.New("engine.block_size: must be 1..1024")
	case e.GPUMemoryUtilization < 0 || e.GPUMemoryUtilization > 1:
		return errors.New("engine.gpu_memory_utilization: must be in (0, 1]")
	case e.Speculative.NumTokens < 0 || e.Speculative.NumTokens > 16:
		return errors.New("engine.speculative.num_tokens: must be 0..16")
	case e.Speculative.Acceptance < 0 || e.Speculative.Acceptance > 1:
		return errors.New("engine.speculative.acceptance: must be in [0, 1]")
	case e.Speculative.DraftCost < 0 || e.Speculative.DraftCost > 4:
		return errors.New("engine.speculative.draft_cost: must be in [0, 4]")
	case e.StreamInterval < 0:
		return errors.New("engine.stream_interval: must be >= 1")
	case e.DTypeBytes < 0 || e.DTypeBytes > 4:
		return errors.New("engine.dtype_bytes: must be in [0, 4] (1 for FP8, 2 for bf16)")
	case e.Proxy.BufferBytes < 0:
		return errors.New("engine.proxy.buffer_bytes: must be >= 0")
	case e.MaxNumPartialPrefills < 0 || e.MaxNumPartialPrefills > 1024:
		return errors.New("engine.max_num_partial_prefills: must be 0..1024")
	case e.MaxLongPartialPrefills < 0 || e.MaxLongPartialPrefills > max(1, e.MaxNumPartialPrefills):
		return errors.New("engine.max_long_partial_prefills: must be at least 1 and at most max_num_partial_prefills")
	case e.MaxLongPartialPrefills > 0 && e.MaxNumPartialPrefills == 0:
		return errors.New("engine.max_long_partial_prefills: needs max_num_partial_prefills")
	case e.MaxNumPartialPrefills > 0 && e.EnableChunkedPrefill != nil && !*e.EnableChunkedPrefill:
		return errors.New("engine.max_num_partial_prefills: needs chunked prefill")
	case e.ReservedGiB < 0 || e.ReservedGiB > 1024:
		return errors.New("engine.reserved_gib: must be in [0, 1024]")
	case e.KVDTypeBytes != 0 && e.KVDTypeBytes != 1 && e.KVDTypeBytes != 2:
		return errors.New("engine.kv_dtype_bytes: must be 1 (fp8) or 2 (bf16)")
	case e.LinkGBps < 0 || e.LinkGBps > 10000:
		return errors.New("engine.link_gbps: must be in (0, 10000] GB/s")
	case e.Frontend.APIServers < 0 || e.Frontend.APIServers > 64:
		return errors.New("engine.frontend.api_servers: must be 1..64")
	case e.Frontend.APIServers > 1 && !e.Frontend.Decoupled:
		return errors.New("engine.frontend.api_servers: needs decoupled: true (API-server processes run apart from the engine core)")
	case e.StructuredOutput.TokenUS < 0 || e.StructuredOutput.TokenUS > 1e6:
		return errors.New("engine.structured_output.token_us: must be in [0, 1e6] microseconds")
	case e.StructuredOutput.Share < 0 || e.StructuredOutput.Share > 1:
		return errors.New("engine.structured_output.share: must be in [0, 1]")
	case e.ServeMetrics != nil && !*e.ServeMetrics && slices.Contains(s.Evidence, "metrics"):
		return errors.New("engine.serve_metrics: false, but evidence lists metrics")
	}
	for name, v := range map[string]*float64{"launch_us": e.LaunchUS, "graph_launch_us": e.GraphLaunchUS,
		"min_kernel_us": e.MinKernelUS, "all_reduce_us": e.AllReduceUS, "scheduler.step_us": e.Scheduler.StepUS,
		"scheduler.seq_us": e.Scheduler.SeqUS, "frontend.token_us": e.Frontend.TokenUS, "frontend.step_us": e.Frontend.StepUS} {
		if v != nil && !(*v >= 0 && *v <= 1e6) {
			return fmt.Errorf("engine.%s: must be in [0, 1e6] microseconds", name)
		}
	}
	if e.MemEfficiency < 0 || e.MemEfficiency > 1 || e.FLOPSEfficency < 0 || e.FLOPSEfficency > 1 {
		return errors.New("engine.mem_efficiency and flops_efficiency: must be in (0, 1]")
	}
	if e.ColdStart.Startup.Seconds() > 600 || e.ColdStart.Compile.Seconds() > 600 || e.Proxy.FlushInterval.Seconds() > 600 {
		return errors.New("engine: cold_start and proxy durations must be at most 10m")
	}
	if e.MaxModelLen > m.MaxModelLen {
		return fmt.Errorf("engine.max_model_len: %d exceeds %s's %d", e.MaxModelLen, m.Name, m.MaxModelLen)
	}
	if e.EOS != nil {
		if err := e.EOS.validate(); err != nil {
			return fmt.Errorf("engine.eos: %w", err)
		}
	}
	return nil
}

// ServesMetrics reports whether the deployment answers GET /metrics.
func (e *EngineSpec) ServesMetrics() bool { return e.ServeMetrics == nil || *e.ServeMetrics }

// costParams resolves the scenario's cost-model knobs over the defaults.
func (s *Scenario) costParams() CostParams {
	e := &s.Engine
	p := DefaultCostParams()
	p.TP = max(1, e.TensorParallel)
	if e.CUDAGraphs != nil {
		p.CUDAGraphs = *e.CUDAGraphs
	}
	if e.GraphMaxTokens > 0 {
		p.GraphMaxTokens = e.GraphMaxTokens
	}
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setF(&p.LaunchUS, e.LaunchUS)
	setF(&p.GraphLaunchUS, e.GraphLaunchUS)
	setF(&p.MinKernelUS, e.MinKernelUS)
	setF(&p.AllReduceUS, e.AllReduceUS)
	setF(&p.SchedStepUS, e.Scheduler.StepUS)
	setF(&p.SchedSeqUS, e.Scheduler.SeqUS)
	p.Overlap = e.Scheduler.Async
	setF(&p.FrontendTokenUS, e.Frontend.TokenUS)
	setF(&p.FrontendStepUS, e.Frontend.StepUS)
	p.FrontendDecoupled = e.Frontend.Decoupled
	p.APIServers = max(1, e.Frontend.APIServers)
	p.GrammarTokenUS = e.StructuredOutput.TokenUS
	p.LinkBW = e.LinkGBps * 1e9
	if e.MemEfficiency > 0 {
		p.MemEff = e.MemEfficiency
	}
	if e.FLOPSEfficency > 0 {
		p.FLOPSEff = e.FLOPSEfficency
	}
	return p
}

// engineConfig resolves the scheduler knobs.
func (s *Scenario) engineConfig() EngineConfig {
	e := &s.Engine
	c := EngineConfig{MaxNumSeqs: e.MaxNumSeqs, MaxBatchedTokens: e.MaxNumBatchedTokens,
		MaxModelLen: e.MaxModelLen, ChunkedPrefill: true, BlockSize: e.BlockSize, PrefixCaching: true,
		GPUMemoryFraction: e.GPUMemoryUtilization, SpecK: e.Speculative.NumTokens,
		SpecAcceptance: e.Speculative.Acceptance, SpecDraftFrac: e.Speculative.DraftCost,
		ColdStartup: e.ColdStart.Startup.Seconds(), ColdCompile: e.ColdStart.Compile.Seconds(),
		ColdShapes: e.ColdStart.Shapes, LongPrefillThreshold: e.LongPrefillThreshold,
		MaxPartialPrefills: e.MaxNumPartialPrefills, MaxLongPartialPrefills: e.MaxLongPartialPrefills,
		ActivationReserveGB: e.ReservedGiB * (1 << 30) / 1e9}
	if c.BlockSize == 0 {
		c.BlockSize = 16
	}
	if e.EnableChunkedPrefill != nil {
		c.ChunkedPrefill = *e.EnableChunkedPrefill
	}
	if e.EnablePrefixCaching != nil {
		c.PrefixCaching = *e.EnablePrefixCaching
	}
	if e.KVCacheTokens > 0 {
		c.KVBlocks = (e.KVCacheTokens + c.BlockSize - 1) / c.BlockSize
	}
	if c.ColdCompile > 0 && c.ColdShapes == 0 {
		c.ColdShapes = 8
	}
	return c
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)) }
