package evidence

import (
	"time"
)

// SchemaVersion of evidence.json. Bump on incompatible changes.
const SchemaVersion = 1

// Framework is the fixed value of the "framework" field.
const Framework = "Performance Evidence Ladder"

// AcceptanceUnit is the unit every figure is tied to.
const AcceptanceUnit = "cost_per_accepted_task_under_workload_contract"

// Stage numbers (kinds of evidence).
const (
	StageRequestTrace   = 1
	StageGPUExecution   = 2
	StageKernelOperator = 3
	StageServingCache   = 4
	StageDistributed    = 5
)

// StageNames maps a stage number to its machine name.
var StageNames = map[int]string{
	StageRequestTrace:   "request_trace",
	StageGPUExecution:   "gpu_execution_memory",
	StageKernelOperator: "kernel_operator",
	StageServingCache:   "serving_scheduler_cache",
	StageDistributed:    "distributed_capacity",
}

// Stage statuses.
const (
	StatusCollected = "collected"
	StatusPartial   = "partial"
	StatusMissing   = "missing"
)

// Layer is where a bottleneck lives.
type Layer string

const (
	LayerHardware    Layer = "hardware"
	LayerKernel      Layer = "kernel"
	LayerMemory      Layer = "memory" // KV cache
	LayerScheduling  Layer = "scheduling"
	LayerParallelism Layer = "parallelism"
	LayerSpeculative Layer = "speculative"
	LayerApplication Layer = "application"
)

// Layers lists every layer in ladder order.
var Layers = []Layer{LayerHardware, LayerKernel, LayerMemory, LayerScheduling, LayerParallelism, LayerSpeculative, LayerApplication}

// Severities of a finding.
const (
	SeverityInfo     = "info"
	SeverityWarn     = "warn"
	SeverityCritical = "critical"
)

// Stop condition names.
const (
	StopReproduced       = "reproduced_bottleneck"
	StopOwnerLayer       = "owner_layer_identified"
	StopAcceptanceImpact = "acceptance_impact_visible"
	StopRollbackDefined  = "rollback_threshold_defined"
)

// Evidence is the whole evidence package of one run (evidence.json).
type Evidence struct {
	Framework     string `json:"framework"`
	SchemaVersion int    `json:"schema_version"`
	// PelVersion is the pel build that wrote the file ("v0.4.0", "(devel) commit …"):
	// a figure that changes between builds can be traced to the one that wrote it.
	PelVersion string      `json:"pel_version,omitempty"`
	Contract   ContractRef `json:"contract"`
	Run        Run         `json:"run"`
	Workload   Workload    `json:"workload"`
	Stages     []Stage     `json:"stages"`
	Findings   []Finding   `json:"findings"`
	OwnerLayer *Layer      `json:"owner_layer"`
	Verdict    string      `json:"verdict,omitempty"` // one-line conclusion, written from Decision
	// Decision is the diagnosis's decision as data (objective.go).
	Decision *Decision  `json:"decision,omitempty"`
	Headroom []Headroom `json:"headroom,omitempty"`
	// Budget is where each task type's time went, against its bounds and floors (budget.go).
	Budget         *Budget                  `json:"budget,omitempty"`
	StopConditions map[string]StopCondition `json:"stop_conditions"`
	Rollback       Rollback                 `json:"rollback"`
	AcceptanceUnit string                   `json:"acceptance_unit"`
	// Missing lists evidence sources that were not available and what each would settle.
	Missing []MissingSource `json:"missing,omitempty"`
}

// ContractRef ties the evidence to the exact contract.
type ContractRef struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	SHA256  string `json:"sha256"`
}

// Run describes the run the evidence came from.
type Run struct {
	Target string `json:"target"`
	Engine string `json:"engine,omitempty"` // vllm, sglang, tgi, triton, trtllm, llamacpp, sim...
	// EngineForm is how the engine's server is built: "one" process (HTTP front end and the
	// engine loop together) or "two" (an API server apart from the engine core, so a
	// frontend's per-token cost delays tokens without stalling the engine's steps).
	EngineForm string    `json:"engine_form,omitempty"`
	Model      string    `json:"model,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationS  float64   `json:"duration_s"`
	Phases     []Phase   `json:"phases"`
	Scenario   string    `json:"scenario,omitempty"` // set by pel demo only; never read by diagnose
	// ImportedFrom names the tool whose result file pel import read (vllm bench serve,
	// AIPerf...): the run holds only that client's account of each request, no request id
	// pel sent and no server-side source.
	ImportedFrom string `json:"imported_from,omitempty"`

	// RetentionS is the contract's retention period in seconds (0: none set): pel prune
	// removes the run directory once StartedAt is older than it.
	RetentionS int64 `json:"retention_s,omitempty"`

	// EngineConfig is the configuration the engine exposed over HTTP at the start of the run
	// (llama.cpp /props: slots, slot_context, build); other engines expose theirs as *_info
	// metrics in metrics.jsonl.
	EngineConfig map[string]string `json:"engine_config,omitempty"`
	Notes        []string          `json:"notes,omitempty"`
	// Shard is set on one shard of a sharded run (pel run --shard i/n); Shards on a run
	// merged from shards (pel merge), one entry per shard.
	Shard  *Shard  `json:"shard,omitempty"`
	Shards []Shard `json:"shards,omitempty"`
	// Completeness says whether the run holds its contract's whole schedule (nil: not
	// recorded, a run written before pel recorded it).
	Completeness *Completeness `json:"completeness,omitempty"`
	// Profile is set on a run with a profiling window (pel run --profile-at; profile.go).
	Profile *Profile `json:"profile,omitempty"`
}

// Shard describes one shard of a sharded run: which part of the one schedule it ran, from
// when, and how its clock compared with the target's.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// StartAt is the wall-clock instant every shard's schedule counts from.
	StartAt time.Time `json:"start_at"`
	// Clock is the target's clock against the shard machine's, measured before the start
	// (nil: the target sends no Date header).
	Clock *ClockOffset `json:"clock,omitempty"`
	// Set on a merged run's entries: the shard's directory, tasks and schedule lag (a late
	// shard, a starved or distant machine, shows here).
	Dir              string  `json:"dir,omitempty"`
	Tasks            int     `json:"tasks,omitempty"`
	ScheduleLagP50Ms float64 `json:"schedule_lag_p50_ms,omitempty"`
	ScheduleLagP99Ms float64 `json:"schedule_lag_p99_ms,omitempty"`
	Note             string  `json:"note,omitempty"`
}

// ClockOffset is a clock comparison stated as a bound: the target's clock minus this
// machine's is within OffsetMs ± BoundMs.
type ClockOffset struct {
	OffsetMs float64 `json:"offset_ms"`
	BoundMs  float64 `json:"bound_ms"`
	Via      string  `json:"via"`
}

// Phase is a time range of a run with one phase label (cold, warm, canary).
type Phase struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"` // seconds since Run.StartedAt
	EndS   float64 `json:"end_s"`
	// ArrivalsEndS is when the phase's last task was scheduled; the phase runs on to EndS
	// while its tasks drain (0: not recorded).
	ArrivalsEndS float64 `json:"arrivals_end_s,omitempty"`
}

// Quantiles summarise one latency distribution in milliseconds (or the stated unit).
type Quantiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max,omitempty"`
}

// Latency groups the client-side latency distributions (ms).
type Latency struct {
	TTFTms         Quantiles `json:"ttft_ms"`
	TTFTFromSentMs Quantiles `json:"ttft_from_sent_ms"`
	ITLms          Quantiles `json:"itl_ms"`
	TPOTms         Quantiles `json:"tpot_ms"`
	E2Ems          Quantiles `json:"e2e_ms"`
	ScheduleLagMs  Quantiles `json:"schedule_lag_ms"`
}

// Summary is the stage-1 summary of a set of tasks (all, one task type, one band, one phase).
type Summary struct {
	Requests            int      `json:"requests"`
	Accepted            int      `json:"accepted"`
	Failed              int      `json:"failed"`
	Cancelled           int      `json:"cancelled,omitempty"`
	AcceptanceRate      float64  `json:"acceptance_rate"`
	ErrorRate           float64  `json:"error_rate"`
	RetryRate           float64  `json:"retry_rate"`
	GoodputRPS          float64  `json:"goodput_rps"`
	ThroughputRPS       float64  `json:"throughput_rps"`
	OutputTokensPerS    float64  `json:"output_tokens_per_s"`
	CostPerAcceptedTask *float64 `json:"cost_per_accepted_task"` // null without a cost block or with 0 accepted
	Latency             Latency  `json:"latency"`
	// RejectReasons counts why tasks were not accepted ("error: http 500", "slo ttft max", ...).
	RejectReasons map[string]int `json:"reject_reasons,omitempty"`
}

// Workload is stage 1's headline: the whole warm window plus its splits.
type Workload struct {
	Summary
	TokenSource string               `json:"token_source,omitempty"` // usage | estimate | mixed
	ByPhase     map[string]Summary   `json:"by_phase,omitempty"`
	ByTaskType  map[string]Summary   `json:"by_task_type,omitempty"`
	ByBand      []BandSummary        `json:"by_band,omitempty"`
	Histograms  map[string]Histogram `json:"histograms,omitempty"` // ttft_ms, itl_ms, e2e_ms for charts
	// Steps splits multi-step task types by call position (signals_steps.go); absent when
	// every task is a single request.
	Steps []StepSummary `json:"steps,omitempty"`
	// Objectives are the contract's objectives judged on this phase's tasks (objective.go).
	Objectives []Objective `json:"objectives,omitempty"`
}

// BandSummary is a Summary for one concurrency band (in-flight count at send).
type BandSummary struct {
	Band string `json:"band"` // e.g. "1-4"
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
	Summary
}

// Histogram is a pre-computed distribution for rendering (bucket upper bounds and counts).
type Histogram struct {
	Unit   string    `json:"unit"`
	Bounds []float64 `json:"bounds"`
	Counts []int64   `json:"counts"`
}

// Stage is one stage's evidence.
type Stage struct {
	Stage   int      `json:"stage"`
	Name    string   `json:"name"`
	Status  string   `json:"status"`
	Sources []string `json:"sources,omitempty"`
	Signals []Signal `json:"signals"`
	Series  []Series `json:"series,omitempty"`
	Notes   []string `json:"notes,omitempty"` // gaps, parse problems, interpolation caveats
}

// Signal is one measured value.
type Signal struct {
	Name   string            `json:"name"` // from the vocabulary in signals.go
	Value  float64           `json:"value"`
	Unit   string            `json:"unit"`
	Stage  int               `json:"stage"`
	Source string            `json:"source"` // client, "vllm /metrics", dcgm, kineto:FILE, nsys:FILE, otlp
	Phase  string            `json:"phase,omitempty"`
	Window *Window           `json:"window,omitempty"`
	Labels map[string]string `json:"labels,omitempty"` // engine, gpu, task, stream, rank...
	Note   string            `json:"note,omitempty"`   // e.g. "bucket-interpolated"
}

// Window is a time range in seconds since Run.StartedAt.
type Window struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// Series is a time series for charts and for time-window correlation (acceptance impact).
type Series struct {
	Name   string            `json:"name"`
	Unit   string            `json:"unit"`
	Source string            `json:"source"`
	Labels map[string]string `json:"labels,omitempty"`
	T      []float64         `json:"t"` // seconds since Run.StartedAt
	V      []float64         `json:"v"`
	// Min and Max are set when the series is downsampled (each point a bucket of
	// consecutive samples, V their mean): the extremes of each bucket.
	Min []float64 `json:"min,omitempty"`
	Max []float64 `json:"max,omitempty"`
}

// EvidenceItem is one signal as cited by a finding, with the threshold it was judged by.
type EvidenceItem struct {
	Signal    string  `json:"signal"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"` // ">", ">=", "<", "<="
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit"`
	Source    string  `json:"source"`
	Stage     int     `json:"stage"`
	Phase     string  `json:"phase,omitempty"`
}

// Impact is the acceptance impact of a finding: how many of the rejected (not accepted)
// tasks coincide with the symptom, by time window and task type.
type Impact struct {
	Rejected  int     `json:"rejected"`
	Explained int     `json:"explained"`
	Share     float64 `json:"share"` // Explained / Rejected
	Basis     string  `json:"basis"`
	// ByTaskType splits Rejected and Explained by the contract's task types.
	ByTaskType map[string]TaskImpact `json:"by_task_type,omitempty"`
}

// TaskImpact is one task type's share of a finding's acceptance impact.
type TaskImpact struct {
	Rejected  int `json:"rejected"`
	Explained int `json:"explained"`
}

// Finding is a falsifiable hypothesis about where the bottleneck lives.
type Finding struct {
	ID         string         `json:"id"`
	Layer      Layer          `json:"layer"`
	Severity   string         `json:"severity"`
	Symptom    string         `json:"symptom"`
	Hypothesis string         `json:"hypothesis"`
	Evidence   []EvidenceItem `json:"evidence"`
	Prediction string         `json:"prediction"`
	// Predicted is the prediction as data (Prediction is rendered from it); nil for a
	// finding that cannot be falsified yet.
	Predicted        *Predicted `json:"predicted,omitempty"`
	NextProbe        string     `json:"next_probe"`
	Confidence       float64    `json:"confidence"` // 0..1
	ConfidenceNote   string     `json:"confidence_note,omitempty"`
	AcceptanceImpact *Impact    `json:"acceptance_impact,omitempty"`
	Missing          []string   `json:"missing,omitempty"` // evidence that would settle it
	// Reproduced says whether the symptom held in each half of the warm window on its own.
	Reproduced *StopCondition `json:"reproduced,omitempty"`
}

// StopCondition is computed, never asserted.
type StopCondition struct {
	Met    bool   `json:"met"`
	Reason string `json:"reason"`
}

// Rollback holds the thresholds a change must respect.
type Rollback struct {
	Triggers []Trigger `json:"triggers"`
}

// Trigger is one rollback threshold derived from the baseline.
type Trigger struct {
	Signal string  `json:"signal"`
	Op     string  `json:"op"`
	Bound  float64 `json:"bound"`
	Unit   string  `json:"unit"`
	Basis  string  `json:"basis"` // e.g. "baseline warm p99 TTFT 412 ms, 95% CI [398, 430] + 10%"
}

// Headroom states how far a measured value is from its bound when nothing exceeds it.
type Headroom struct {
	Signal string  `json:"signal"`
	Value  float64 `json:"value"`
	Bound  float64 `json:"bound"`
	Unit   string  `json:"unit"`
	// Pct is the room left, 100 × (1 − value/bound); negative when the bound is exceeded.
	Pct  float64 `json:"headroom_pct"`
	Note string  `json:"note,omitempty"`
}

// MissingSource names an absent evidence source and what it would settle.
type MissingSource struct {
	Source  string `json:"source"`  // e.g. "dcgm"
	Flag    string `json:"flag"`    // e.g. "--dcgm URL"
	Settles string `json:"settles"` // e.g. "bandwidth-bound vs launch-bound"
}
