package evidence

// Budget is where the run's time went, per task type: every task's measured time split
// into components, each with its source and uncertainty, next to the contract's bounds and
// the hardware's physical floor, and the excess over the bounds attributed to layers
// (package diagnose computes it; report renders it).
type Budget struct {
	TaskTypes []TaskBudget `json:"task_types"`
	// Floors are the physical floors the budget compares with (nil: the system is unknown).
	Floors *Floors `json:"floors,omitempty"`
	// Excess attributes the time over the contract's bounds, over the tasks that missed
	// them, to layers; nil when no bound is missed and nothing was rejected for latency.
	Excess *Excess `json:"excess,omitempty"`
	// Config is what the engine reported of its configuration and what it left unknown.
	Config []ConfigFact `json:"config,omitempty"`
	// Infeasible lists the objectives no schedule can meet on this hardware: the physical
	// floor of the tasks they govern is past their limit (nil: floors unknown, or none).
	Infeasible []Infeasible `json:"infeasible,omitempty"`
}

// Infeasible is one objective whose limit lies below the physical floor of the work it
// governs: the floor's own quantile (for a max, its worst task) against the limit.
type Infeasible struct {
	Objective string  `json:"objective"` // evidence.Objective.Name
	LimitMs   float64 `json:"limit_ms"`
	FloorMs   float64 `json:"floor_ms"`
	// Tasks is how many governed tasks have a floor past the limit, of Of.
	Tasks int    `json:"tasks"`
	Of    int    `json:"of"`
	Basis string `json:"basis"`
}

// Budget parts: the time to the first token, the time of the decode that follows, the
// time between the calls of a multi-step task, and the tasks lost to errors (their time to
// the error, charged to the layer that owns the error).
const (
	PartTTFT    = "ttft"
	PartDecode  = "decode"
	PartBetween = "between_calls"
	PartErrors  = "errors"
)

// TaskBudget is one task type's budget: the mean of its completed warm tasks, per part.
type TaskBudget struct {
	Task  string `json:"task"`
	Tasks int    `json:"tasks"` // completed warm tasks the means are over
	// Over counts the tasks whose excess Excess attributes (rejected for latency or beyond a
	// missed percentile bound).
	Over int `json:"over"`
	// Failed counts the warm tasks lost to errors; their components (Part errors) are means
	// over them, and each counts in Excess as a task over its bounds.
	Failed int `json:"failed,omitempty"`
	// PerCall: the type's tasks are multi-step, so Tasks counts their completed calls and the
	// means are per call (the time between calls included, Part between_calls).
	PerCall bool `json:"per_call,omitempty"`
	// Mean time to first token (from scheduled) and mean decode time (first → last token),
	// and the mean output tokens after the first.
	TTFTMs    float64 `json:"ttft_ms"`
	DecodeMs  float64 `json:"decode_ms"`
	TokensPer float64 `json:"decode_tokens"`
	// The type's own bounds (its slo block over the contract's), 0 when unset.
	TTFTBoundMs float64 `json:"ttft_bound_ms,omitempty"`
	ITLBoundMs  float64 `json:"itl_bound_ms,omitempty"`
	// Floors of the same work: prefill and the decode's steps at the run's batch.
	TTFTFloorMs   float64      `json:"ttft_floor_ms,omitempty"`
	DecodeFloorMs float64      `json:"decode_floor_ms,omitempty"`
	Components    []BudgetItem `json:"components"`
}

// BudgetItem is one component of a task type's time: its mean per task in ms, which part
// it belongs to, the layer it is charged to (empty: the measuring side or unattributed),
// where the figure comes from and how certain it is. A component no source measured has
// Ms 0 and MeasuredBy naming the source that would.
type BudgetItem struct {
	Name        string  `json:"name"`
	Part        string  `json:"part"`
	Layer       Layer   `json:"layer,omitempty"`
	Ms          float64 `json:"ms"`
	Source      string  `json:"source,omitempty"`
	Uncertainty string  `json:"uncertainty,omitempty"`
	MeasuredBy  string  `json:"measured_by,omitempty"`
}

// Floors are what the hardware could do for the run's work, with every input's source.
type Floors struct {
	GPU string `json:"gpu"`
	// DecodeStepMs is one decode step at the run's mean batch and context: weights (active
	// weights for a mixture of experts) plus the batch's KV over achievable HBM bandwidth,
	// or its FLOPs over achievable tensor throughput when larger; plus the step's
	// all-reduces over the link under tensor parallelism.
	DecodeStepMs float64 `json:"decode_step_ms"`
	// MeasuredStepMs is the median inter-token gap (the engine's, else the client's), and
	// DecodeRatio measured ÷ floor: near 1, the hardware is the limit.
	MeasuredStepMs float64 `json:"measured_step_ms,omitempty"`
	DecodeRatio    float64 `json:"decode_ratio,omitempty"`
	// PrefillMsPerKTok is the compute floor of 1,000 prompt tokens; PrefillRatio is the
	// engine's mean prefill time ÷ the floor of the mean uncached prompt.
	PrefillMsPerKTok float64 `json:"prefill_ms_per_ktok,omitempty"`
	PrefillRatio     float64 `json:"prefill_ratio,omitempty"`
	CommStepMs       float64 `json:"comm_step_ms,omitempty"`
	// FloorLoad is the floor's share of the warm window the offered work needs (prefill
	// and decode FLOPs at achievable throughput): near 1, queueing follows from capacity.
	FloorLoad float64 `json:"floor_load,omitempty"`
	Batch     float64 `json:"batch,omitempty"`
	Context   float64 `json:"context_tokens,omitempty"`
	// Inputs name each figure the floors rest on with its source.
	Inputs []ConfigFact `json:"inputs"`
	// Unknown lists what no source said, and so what the floors leave out.
	Unknown []string `json:"unknown,omitempty"`
}

// ConfigFact is one configuration or system fact with where it came from.
type ConfigFact struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Excess is the time over the contract's bounds attributed to layers.
type Excess struct {
	Tasks int `json:"tasks"` // tasks whose excess is counted
	// Lost of them were lost to errors, each counted as the mean excess of a late one:
	// their layer is the error class's, as the error's own finding attributes it.
	Lost int `json:"lost,omitempty"`
	// TotalMs is their excess over their own task type's bounds, summed.
	TotalMs float64      `json:"total_ms"`
	Shares  []LayerShare `json:"shares"`
	// Owner is the layer whose components explain more than half the excess; empty when
	// none does (then Candidates holds the two leading ones and Probe the one measurement
	// that separates them).
	Owner      Layer    `json:"owner,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
	Probe      string   `json:"probe,omitempty"`
	Basis      string   `json:"basis"`
}

// LayerShare is one layer's part of the excess ("" layer: unattributed or the measuring
// side, named in What).
type LayerShare struct {
	Layer Layer   `json:"layer,omitempty"`
	What  string  `json:"what"`
	Ms    float64 `json:"ms"`
	Share float64 `json:"share"`
}
