package contract

import (
	"path/filepath"
	"regexp"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Contract is a parsed, validated and defaulted workload contract. Its exported fields are
// what the canonical hash covers (see SHA256); unexported fields are bookkeeping.
// A Contract is read-only after Parse and safe for concurrent use.
type Contract struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// API is "chat" (/v1/chat/completions) or "completions" (/v1/completions). Default chat.
	API string `json:"api"`
	// Model is sent as "model"; empty means the server's first /v1/models entry.
	Model   string  `json:"model,omitempty"`
	Arrival Arrival `json:"arrival"`
	// Duration bounds the schedule (At < Duration); 0 when only Requests bounds it.
	Duration time.Duration `json:"duration,omitempty"`
	// Requests bounds the number of tasks; 0 when only Duration (or a replay trace) bounds it.
	Requests int `json:"requests,omitempty"`
	// Warmup is the cold phase at the start of the schedule, reported apart.
	Warmup time.Duration `json:"warmup,omitempty"`
	// MaxInFlight caps tasks in flight on the client (0 = unbounded: open loop). Waiting for a
	// slot is counted as client queue time by the driver, never hidden.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// Seed drives every random choice of the workload (default 1).
	Seed uint64 `json:"seed"`
	// Timeout is the per-request deadline, from send to done, per attempt (default 60s).
	Timeout time.Duration `json:"timeout"`
	Tasks   []Task        `json:"tasks"`
	SLO     SLO           `json:"slo"`
	Retry   Retry         `json:"retry"`
	Cost    Cost          `json:"cost"`
	// Prompts says how prompt text relates across runs (omitted from the hash when unset,
	// so contracts written before it keep their sha256).
	Prompts Prompts `json:"prompts,omitzero"`
	// Canary scopes an interleaved canary run (canary.go). Not hashed: it splits the
	// workload between two targets without changing it.
	Canary Canary `json:"-"`
	// Percentiles are the latency percentiles reports list besides the summary's p50, p95
	// and p99 (percentiles.go). Not hashed: they change what is printed, not the workload.
	Percentiles []float64 `json:"-"`
	// System describes the deployment for pel's physical floors (system.go). Not hashed.
	System System `json:"-"`
	// Profile is a profiling window inside the run (profile.go). Not hashed.
	Profile Profile `json:"-"`
	// Retention is how long the run directory is kept (retention.go; pel prune removes it
	// after that); 0: no period set. Not hashed: it governs the files, not the workload.
	Retention time.Duration `json:"-"`

	raw    []byte
	file   string
	sha    string
	byName map[string]int
}

// Arrival processes.
const (
	Poisson  = "poisson"
	Gamma    = "gamma"
	Constant = "constant"
	Closed   = "closed"
	Ramp     = "ramp"
	Replay   = "replay"
	// Burst: every task is due at once (vllm bench serve's --request-rate inf); the
	// contract's requests bounds it, and max_in_flight, when set, is how many go at a time.
	Burst = "burst"
)

// API values.
const (
	APIChat        = "chat"
	APICompletions = "completions"
)

// Arrival is the arrival process. Only the fields of Process are set.
type Arrival struct {
	Process string `json:"process"`
	// Rate in requests/s (poisson, gamma, constant).
	Rate float64 `json:"rate,omitempty"`
	// CV is the coefficient of variation of gamma inter-arrival times (1 = poisson, >1 bursty).
	CV float64 `json:"cv,omitempty"`
	// Concurrency of a closed loop: that many tasks always in flight.
	Concurrency int `json:"concurrency,omitempty"`
	// Ramp: the rate goes linearly From -> To (req/s) over Over, then holds To.
	From float64       `json:"from,omitempty"`
	To   float64       `json:"to,omitempty"`
	Over time.Duration `json:"over,omitempty"`
	// File is a replay trace (JSONL), as written in the contract; see Contract.Path.
	File string `json:"file,omitempty"`
	// Speed divides replay timestamps (2 = twice as fast). Default 1.
	Speed float64 `json:"speed,omitempty"`
}

// Task is one task type of the weighted mix.
type Task struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	// PromptTokens is the synthetic prompt length; nil when the prompts come from Dataset.
	PromptTokens *Dist `json:"prompt_tokens,omitempty"`
	// OutputTokens is the max_tokens distribution (default fixed 128).
	OutputTokens Dist `json:"output_tokens"`
	IgnoreEOS    bool `json:"ignore_eos,omitempty"`
	// SharedPrefixTokens leading tokens are identical in every prompt of the task.
	SharedPrefixTokens int      `json:"shared_prefix_tokens,omitempty"`
	Dataset            *Dataset `json:"dataset,omitempty"`
	Checks             []Check  `json:"checks,omitempty"`
	// SLO overrides the global SLO metric by metric (a metric given here replaces the
	// global bound of that metric entirely). Use Contract.SLOFor for the merged view.
	SLO *SLO `json:"slo,omitempty"`
	// Steps makes the task a sequence of calls (chat turns, a tool loop, embeddings); nil
	// for a single-request task. See steps.go.
	Steps []Step `json:"steps,omitempty"`
}

// Dataset formats.
const (
	FormatPrompts  = "prompts"
	FormatShareGPT = "sharegpt"
	// FormatShareGPTVLLM reads a ShareGPT file as vllm bench serve --dataset-name sharegpt
	// samples it: single-turn prompts, filtered by its length rules (package workload).
	FormatShareGPTVLLM = "sharegpt-vllm"
)

// Dataset is a JSONL file of prompts (see package workload for the formats).
type Dataset struct {
	File   string `json:"file"` // as written; see Contract.Path
	Format string `json:"format"`
}

// Distribution kinds.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistNormal    = "normal"
	DistLognormal = "lognormal"
	DistEmpirical = "empirical"
)

// Dist is a length distribution in tokens. Draws are rounded, clamped to [Min, Max] when
// set, and never below 1 (package workload samples it).
type Dist struct {
	Kind  string  `json:"dist"`
	Value float64 `json:"value,omitempty"` // fixed
	// Mean and SD of the distribution itself (for lognormal too: not of its logarithm).
	Mean    float64   `json:"mean,omitempty"`
	SD      float64   `json:"sd,omitempty"`
	Values  []float64 `json:"values,omitempty"`  // empirical
	Weights []float64 `json:"weights,omitempty"` // empirical, same length as Values
	// Min and Max clamp every draw (uniform: they are its range).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Check kinds.
const (
	CheckRegex      = "regex"
	CheckContains   = "contains"
	CheckJSON       = "json"
	CheckJSONSchema = "json_schema"
	CheckMinTokens  = "min_output_tokens"
	CheckMaxTokens  = "max_output_tokens"
)

// Check is one acceptance check on a completed task's output.
type Check struct {
	Type string `json:"type"`
	// Name, when given, is used in the rejection reason ("check NAME") instead of Type.
	Name    string `json:"name,omitempty"`
	Pattern string `json:"pattern,omitempty"` // regex (RE2 syntax), matched anywhere
	Text    string `json:"text,omitempty"`    // contains
	// Schema is a JSON Schema (draft 2020-12 unless it says otherwise), as JSON values.
	Schema any `json:"schema,omitempty"`
	Value  int `json:"value,omitempty"` // min/max output tokens

	re     *regexp.Regexp
	schema *jsonschema.Schema
}

// Bound is an SLO bound on one latency metric: percentile bounds are judged over the
// aggregate (stats/diagnose), Max per request (Judge). Zero means unset.
type Bound struct {
	P50 time.Duration `json:"p50,omitempty"`
	P90 time.Duration `json:"p90,omitempty"`
	P95 time.Duration `json:"p95,omitempty"`
	P99 time.Duration `json:"p99,omitempty"`
	Max time.Duration `json:"max,omitempty"`
}

// IsZero reports whether no bound is set.
func (b Bound) IsZero() bool { return b == Bound{} }

// Percentiles returns the percentile bounds that are set, keyed by percentile (50, 90...).
func (b Bound) Percentiles() map[float64]time.Duration {
	m := map[float64]time.Duration{}
	for _, p := range []struct {
		q float64
		d time.Duration
	}{{50, b.P50}, {90, b.P90}, {95, b.P95}, {99, b.P99}} {
		if p.d > 0 {
			m[p.q] = p.d
		}
	}
	return m
}

// SLO holds the latency bounds. TTFT and E2E are measured from scheduled_at, ITL per token,
// TPOT per request: the definitions the whole of pel measures by.
type SLO struct {
	TTFT Bound `json:"ttft,omitzero"`
	ITL  Bound `json:"itl,omitzero"`
	TPOT Bound `json:"tpot,omitzero"`
	E2E  Bound `json:"e2e,omitzero"`
	// MaxSteps bounds the model and embeddings calls a multi-step task may take (an agent
	// that needs more calls is not accepted); 0: unbounded.
	MaxSteps int `json:"max_steps,omitempty"`
}

// Prompts is the prompts block. By default every run starts each prompt with a per-run
// nonce (package workload), so two runs of one contract share no prompt prefix and an
// engine's prefix cache cannot carry over from one run to the next; the seed still fixes
// the schedule, the task mix and every length, and a task's shared_prefix_tokens stay
// shared within the run.
type Prompts struct {
	// ReuseAcrossRuns sends the same prompt text in every run of the contract (no nonce),
	// for measuring a server whose prefix cache is meant to be warm from earlier traffic.
	ReuseAcrossRuns bool `json:"reuse_across_runs,omitempty"`
}

// Cost prices the accelerators, to turn a run into cost per accepted task.
type Cost struct {
	AcceleratorHourUSD float64 `json:"accelerator_hour_usd,omitempty"`
	Accelerators       int     `json:"accelerators,omitempty"`
}

// Known reports whether a price was given.
func (c Cost) Known() bool { return c.AcceleratorHourUSD > 0 && c.Accelerators > 0 }

// USD is the cost of the accelerators over d.
func (c Cost) USD(d time.Duration) float64 {
	return c.AcceleratorHourUSD * float64(c.Accelerators) * d.Hours()
}

// Raw returns the exact bytes the contract was parsed from (to copy into a run directory).
func (c *Contract) Raw() []byte { return append([]byte(nil), c.raw...) }

// File is the file name given to Parse or Load.
func (c *Contract) File() string { return c.file }

// Path resolves a file named in the contract (dataset, replay trace): absolute paths stay,
// relative ones are relative to the contract file's directory.
func (c *Contract) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.file == "" || c.file == "-" {
		return p
	}
	return filepath.Join(filepath.Dir(c.file), p)
}

// Files lists the files the contract names (datasets, replay trace), resolved with Path,
// each once: a run can record or copy them next to the contract.
func (c *Contract) Files() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, c.Path(p))
		}
	}
	if c.Arrival.Process == Replay {
		add(c.Arrival.File)
	}
	for _, t := range c.Tasks {
		if t.Dataset != nil {
			add(t.Dataset.File)
		}
	}
	return out
}

// Task returns the task named name, or nil.
func (c *Contract) Task(name string) *Task {
	i, ok := c.byName[name]
	if !ok {
		return nil
	}
	return &c.Tasks[i]
}

// SLOFor returns the SLO of task name: the global bounds, with each metric the task's own
// slo block names replaced by the task's bound. An unknown task gets the global SLO.
func (c *Contract) SLOFor(task string) SLO {
	s := c.SLO
	t := c.Task(task)
	if t == nil || t.SLO == nil {
		return s
	}
	if !t.SLO.TTFT.IsZero() {
		s.TTFT = t.SLO.TTFT
	}
	if !t.SLO.ITL.IsZero() {
		s.ITL = t.SLO.ITL
	}
	if !t.SLO.TPOT.IsZero() {
		s.TPOT = t.SLO.TPOT
	}
	if !t.SLO.E2E.IsZero() {
		s.E2E = t.SLO.E2E
	}
	if t.SLO.MaxSteps > 0 {
		s.MaxSteps = t.SLO.MaxSteps
	}
	return s
}
