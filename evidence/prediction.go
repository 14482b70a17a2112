package evidence

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Predicted is a finding's prediction as data (evidence.json "predicted"): the change that
// tests the hypothesis and, for each signal it should move, the direction and bound. pel
// compare checks it against a candidate run (held, failed, not testable), and pel demo
// --verify applies the change to the simulated engine. The prose in Finding.Prediction is
// rendered from it (Render), plus an optional note.
type Predicted struct {
	Change Change        `json:"change"`
	Expect []Expectation `json:"expect"`
	// Note is prose the data cannot carry (an alternative change with the same effect).
	Note string `json:"note,omitempty"`
}

// Change is what to do to test a hypothesis, as an action pel knows how to recognise and
// (on its simulator) apply, with the detected engine's own knob for it.
type Change struct {
	Action Action `json:"action"`
	// Knob is the action in the engine's own terms ("-np (parallel slots)", "--max-num-seqs").
	Knob string `json:"knob"`
	// To is the suggested value when the finding can size it ("8", "about 23"); From the
	// current one when the engine exposed it.
	To   string `json:"to,omitempty"`
	From string `json:"from,omitempty"`
	// Config names the run.engine_config key (or *_info label) whose change shows the change
	// was made; empty when the engine exposes nothing that would show it.
	Config string `json:"config,omitempty"`
}

// Action is a change pel can name on any engine.
type Action string

// Actions.
const (
	ActRaiseSeqs        Action = "raise_concurrent_sequences" // more slots / max-num-seqs
	ActCapSeqs          Action = "cap_concurrent_sequences"   // fewer, so the KV cache fits them
	ActMoreKV           Action = "more_kv_memory"             // a larger KV cache
	ActMoreContext      Action = "more_context_per_sequence"  // -c / --max-model-len
	ActChunkPrefill     Action = "chunk_prefill"              // chunked prefill, smaller prefill budget
	ActCUDAGraphs       Action = "cuda_graphs"                // capture decode in CUDA graphs
	ActAsyncScheduling  Action = "async_scheduling"           // overlap host scheduling with the GPU
	ActFewerBytes       Action = "fewer_bytes_per_token"      // FP8/INT8 weights or KV cache
	ActHalveTP          Action = "halve_tensor_parallel"      // TP/2, the freed GPUs as replicas
	ActBalanceRouting   Action = "least_loaded_routing"       // route to the least-loaded replica
	ActNoSpeculation    Action = "disable_speculation"        // speculative decoding off
	ActNoProxyBuffering Action = "disable_proxy_buffering"    // stream through the proxy
	ActBypassFront      Action = "bypass_front"               // no hold or refusal in front of the engine
	ActPrewarm          Action = "prewarm"                    // warm up before admitting traffic
	ActShorterPrompts   Action = "shorter_prompts"            // or a faster prefill
	ActFixErrors        Action = "fix_error_cause"            // what the error message names
	ActLessLoad         Action = "less_load"                  // offer less load
)

// Expectation is one signal a change should move.
type Expectation struct {
	Signal string `json:"signal"`
	// Op is how the candidate's value must compare: "<=" or ">=" Bound (absolute), or, with
	// Relative, the change from the baseline: "<=" −0.3 means it falls by at least 30%,
	// ">=" 0.5 rises by at least 50%, "within" ±Bound.
	Op       string  `json:"op"`
	Bound    float64 `json:"bound"`
	Relative bool    `json:"relative,omitempty"`
	Unit     string  `json:"unit,omitempty"`
	Phase    string  `json:"phase,omitempty"` // default warm
	// Task scopes the signal to one task type (its signal labelled task=NAME).
	Task string `json:"task,omitempty"`
	// AbsentIsZero: the signal is only reported when something happened (error and flag
	// rates), so a candidate without it measured 0.
	AbsentIsZero bool `json:"absent_is_zero,omitempty"`
}

// Render writes the prediction as one sentence: "If <if>, <change> <expectations>."
func (p *Predicted) Render(cond string) string {
	var parts []string
	for _, e := range p.Expect {
		parts = append(parts, e.Render())
	}
	change := p.Change.Knob
	if p.Change.To != "" {
		change += " to " + p.Change.To
	}
	if p.Change.From != "" {
		change += " (now " + p.Change.From + ")"
	}
	s := fmt.Sprintf("If %s, %s: %s.", cond, change, joinAnd(parts))
	if p.Note != "" {
		s += " " + p.Note
	}
	return s
}

// Render writes one expectation: "client.ttft_p99_ms falls by at least 30%".
func (e Expectation) Render() string {
	unit := e.Unit
	if unit == "ratio" || unit == "pct" {
		unit = ""
	}
	num := func(v float64) string {
		s := fmt.Sprintf("%.3g", v)
		if unit != "" {
			s += " " + unit
		}
		return s
	}
	phase := ""
	if e.Phase != "" && e.Phase != PhaseWarm {
		phase = " (" + e.Phase + " phase)"
	}
	if e.Task != "" {
		phase += " for " + strconv.Quote(e.Task)
	}
	switch {
	case e.Relative && e.Op == "within":
		return fmt.Sprintf("%s stays within ±%.0f%%%s", e.Signal, e.Bound*100, phase)
	case e.Relative && e.Op == "<=" && e.Bound < 0:
		return fmt.Sprintf("%s falls by at least %.0f%%%s", e.Signal, -e.Bound*100, phase)
	case e.Relative && e.Op == "<=":
		return fmt.Sprintf("%s rises by at most %.0f%%%s", e.Signal, e.Bound*100, phase)
	case e.Relative && e.Op == ">=" && e.Bound >= 0:
		return fmt.Sprintf("%s rises by at least %.0f%%%s", e.Signal, e.Bound*100, phase)
	case e.Relative:
		return fmt.Sprintf("%s falls by at most %.0f%%%s", e.Signal, -e.Bound*100, phase)
	case e.Op == "<=" && e.Bound == 0:
		return fmt.Sprintf("%s falls to 0%s", e.Signal, phase)
	case e.Op == "<=":
		return fmt.Sprintf("%s falls to %s or less%s", e.Signal, num(e.Bound), phase)
	}
	return fmt.Sprintf("%s reaches %s or more%s", e.Signal, num(e.Bound), phase)
}

// Holds judges an observed candidate value (and the baseline's, for relative bounds).
func (e Expectation) Holds(base, cand float64) bool {
	if !e.Relative {
		switch e.Op {
		case "<=":
			return cand <= e.Bound
		case ">=":
			return cand >= e.Bound
		}
		return false
	}
	if base == 0 || math.IsNaN(base) {
		return false
	}
	d := (cand - base) / math.Abs(base)
	switch e.Op {
	case "<=":
		return d <= e.Bound
	case ">=":
		return d >= e.Bound
	case "within":
		return math.Abs(d) <= e.Bound
	}
	return false
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return "nothing measurable moves"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
