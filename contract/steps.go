package contract

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Step kinds of a multi-step task (Task.Steps).
const (
	// StepChat is one conversation turn: a user message is appended to the task's
	// conversation, the model answers (/v1/chat/completions), and its answer is appended.
	StepChat = "chat"
	// StepTools is an agent loop: the model is asked with `tools`; while it answers with
	// tool calls, each call's result (a text of result_tokens, after tool_latency) is
	// appended as a role "tool" message and the model is asked again, up to max_calls calls.
	StepTools = "tools"
	// StepEmbeddings is one /v1/embeddings call with a batch of inputs (a retrieval query);
	// it does not touch the conversation.
	StepEmbeddings = "embeddings"
)

// Tool choice values of a tools step (OpenAI's tool_choice).
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
)

// Bounds of a multi-step task, each a plain sanity limit on what one task may plan.
const (
	// MaxStepsPerTask bounds the model and embeddings calls one task plans (steps × repeat,
	// tool loops counted at max_calls): a conversation of 1,024 turns is already far past
	// any context window.
	MaxStepsPerTask = 1024
	// MaxToolsOffered bounds the tool definitions offered in one call: each is rendered into
	// the prompt by the chat template, and 128 is OpenAI's own limit per request.
	MaxToolsOffered = 128
	// MaxEmbeddingInputs bounds one embeddings call's batch (OpenAI accepts up to 2,048).
	MaxEmbeddingInputs = 2048
	// DefaultMaxCalls is a tools step's max_calls when it gives none.
	DefaultMaxCalls = 4
	// DefaultResultTokens is a tool result's length when a tools step gives none.
	DefaultResultTokens = 100
)

// Step is one step of a multi-step task. Only the fields of its Kind are set. A task with
// steps is accepted when every step completed and passed its checks and per-call SLO
// bounds, and the task met its task-level bounds (e2e, max_steps).
type Step struct {
	Kind string `json:"kind"`
	// PromptTokens is the user message a chat or tools step appends (synthetic words); for a
	// tools step after other steps it may be omitted (the loop continues the conversation).
	PromptTokens *Dist `json:"prompt_tokens,omitempty"`
	// OutputTokens is max_tokens of each model call (default: the task's output_tokens).
	OutputTokens *Dist `json:"output_tokens,omitempty"`
	// Think is the wait after the previous step ended before this one is sent (a user
	// reading and typing). It is planned, so it is never counted as lateness.
	Think time.Duration `json:"think,omitempty"`
	// Repeat runs this step that many times in a row (turns of a conversation); 0 means 1.
	Repeat int `json:"repeat,omitempty"`
	// NoStream sends "stream": false (llama.cpp b4750 refuses tools with stream); TTFT and
	// ITL of the call are then not measurable.
	NoStream bool `json:"no_stream,omitempty"`
	// FromDataset: each human turn of a conversation drawn from the task's ShareGPT dataset
	// is one chat turn, up to MaxTurns (0: all).
	FromDataset bool `json:"from_dataset,omitempty"`
	MaxTurns    int  `json:"max_turns,omitempty"`

	// Tools (StepTools): how many tool definitions are offered, the most model calls in the
	// loop, tool_choice, each tool result's length and the time a tool takes.
	Tools        int           `json:"tools,omitempty"`
	MaxCalls     int           `json:"max_calls,omitempty"`
	ToolChoice   string        `json:"tool_choice,omitempty"`
	ResultTokens *Dist         `json:"result_tokens,omitempty"`
	ToolLatency  time.Duration `json:"tool_latency,omitempty"`

	// Embeddings (StepEmbeddings): the batch size and each input's length.
	Inputs      int   `json:"inputs,omitempty"`
	InputTokens *Dist `json:"input_tokens,omitempty"`
}

// Times is how many calls the step plans at most (repeat, or max_calls of a tool loop).
func (s *Step) Times() int {
	switch {
	case s.Kind == StepTools:
		return s.MaxCalls
	case s.FromDataset && s.MaxTurns > 0:
		return s.MaxTurns
	case s.FromDataset:
		return MaxStepsPerTask
	}
	return max(s.Repeat, 1)
}

// MultiStep reports whether the task is a sequence of steps.
func (t *Task) MultiStep() bool { return len(t.Steps) > 0 }

var stepKinds = []string{StepChat, StepTools, StepEmbeddings}

// steps reads a task's steps: a list whose items each name one kind with its settings,
// e.g. `- chat: {prompt_tokens: 200, output_tokens: 64, think: 2s, repeat: 3}`.
func (d *decoder) steps(items []*yaml.Node, tm *mapping, path string, t *Task, api string) {
	if len(items) == 0 {
		tm.errf("steps", "want at least one step")
		return
	}
	total := 0
	generating := false // a chat or tools step came before (so a tools step may continue it)
	for i, n := range items {
		p := index(path, i)
		m := d.mapping(n, p)
		if m == nil {
			continue
		}
		var st Step
		for _, k := range stepKinds {
			if !m.has(k) {
				continue
			}
			if st.Kind != "" {
				m.get(k)
				m.errf(k, "one kind per step (this one already is %s)", st.Kind)
				continue
			}
			st.Kind = k
		}
		if st.Kind == "" {
			for _, k := range stepKinds {
				m.get(k)
			}
			m.errf("", "want a step: {chat: {...}}, {tools: {...}} or {embeddings: {...}}")
			m.finish()
			continue
		}
		body := m.get(st.Kind)
		m.finish()
		bp := join(p, st.Kind)
		if body == nil {
			d.errf(n, bp, "want the step's settings, e.g. {prompt_tokens: 100}")
			continue
		}
		d.step(body, bp, &st, t, generating)
		if (st.Kind == StepChat || st.Kind == StepTools) && api != APIChat {
			d.errf(body, bp, "a %s step needs api: chat (a conversation, tools)", st.Kind)
		}
		if st.Kind != StepEmbeddings {
			generating = true
		}
		total += st.Times()
		t.Steps = append(t.Steps, st)
	}
	if total > MaxStepsPerTask && len(t.Steps) == len(items) {
		tm.errf("steps", "the steps plan %d calls per task, over pel's bound of %d", total, MaxStepsPerTask)
	}
}

func (d *decoder) step(n *yaml.Node, path string, st *Step, t *Task, generating bool) {
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	lengths := func(key string, required bool) *Dist {
		if vn := m.get(key); vn != nil {
			var dist Dist
			d.dist(vn, join(path, key), &dist)
			return &dist
		}
		if required && !m.has(key) {
			m.missing(key)
		}
		return nil
	}
	m.duration("think", &st.Think)
	switch st.Kind {
	case StepChat:
		m.bool("from_dataset", &st.FromDataset)
		if st.FromDataset {
			if t.Dataset == nil || t.Dataset.Format != FormatShareGPT {
				m.errf("from_dataset", "needs the task's dataset in format sharegpt (its conversations' human turns are the turns)")
			}
			if m.int("max_turns", &st.MaxTurns) && (st.MaxTurns < 1 || st.MaxTurns > MaxStepsPerTask) {
				m.errf("max_turns", "want 1..%d, got %d", MaxStepsPerTask, st.MaxTurns)
			}
			if m.has("prompt_tokens") {
				m.get("prompt_tokens")
				m.errf("prompt_tokens", "not used with from_dataset (the conversation's turns are the prompts)")
			}
			if m.has("repeat") {
				m.get("repeat")
				m.errf("repeat", "not used with from_dataset (the conversation sets the turns; see max_turns)")
			}
		} else {
			st.PromptTokens = lengths("prompt_tokens", true)
			m.get("max_turns")
			if m.has("max_turns") {
				m.errf("max_turns", "only with from_dataset: true")
			}
		}
		st.OutputTokens = lengths("output_tokens", false)
		d.repeat(m, st)
		m.bool("no_stream", &st.NoStream)
	case StepTools:
		st.PromptTokens = lengths("prompt_tokens", !generating)
		st.OutputTokens = lengths("output_tokens", false)
		st.Tools = 1
		if m.int("tools", &st.Tools) && (st.Tools < 1 || st.Tools > MaxToolsOffered) {
			m.errf("tools", "want 1..%d tool definitions, got %d", MaxToolsOffered, st.Tools)
		}
		st.MaxCalls = DefaultMaxCalls
		if m.int("max_calls", &st.MaxCalls) && (st.MaxCalls < 1 || st.MaxCalls > MaxStepsPerTask) {
			m.errf("max_calls", "want 1..%d, got %d", MaxStepsPerTask, st.MaxCalls)
		}
		st.ToolChoice = ToolChoiceAuto
		if m.str("tool_choice", &st.ToolChoice) && st.ToolChoice != ToolChoiceAuto && st.ToolChoice != ToolChoiceRequired {
			m.errf("tool_choice", "unknown tool_choice %q (want auto|required)", st.ToolChoice)
		}
		st.ResultTokens = lengths("result_tokens", false)
		if st.ResultTokens == nil {
			st.ResultTokens = &Dist{Kind: DistFixed, Value: DefaultResultTokens}
		}
		m.duration("tool_latency", &st.ToolLatency)
		m.bool("no_stream", &st.NoStream)
	case StepEmbeddings:
		st.InputTokens = lengths("input_tokens", true)
		st.Inputs = 1
		if m.int("inputs", &st.Inputs) && (st.Inputs < 1 || st.Inputs > MaxEmbeddingInputs) {
			m.errf("inputs", "want 1..%d inputs per call, got %d", MaxEmbeddingInputs, st.Inputs)
		}
		d.repeat(m, st)
	}
	m.finish()
}

func (d *decoder) repeat(m *mapping, st *Step) {
	if m.int("repeat", &st.Repeat) && (st.Repeat < 1 || st.Repeat > MaxStepsPerTask) {
		m.errf("repeat", "want 1..%d, got %d", MaxStepsPerTask, st.Repeat)
	}
	if st.Repeat == 1 {
		st.Repeat = 0 // the default, spelled out: the same contract, the same hash
	}
}

// stepsOnly lists the task keys a multi-step task takes its lengths from its steps instead.
func stepsConflict(m *mapping) {
	for _, k := range []string{"prompt_tokens"} {
		if m.has(k) {
			m.get(k)
			m.errf(k, "not used with steps (each chat, tools or embeddings step gives its own lengths)")
		}
	}
}

// StepLabel names the i-th call (0-based) of a multi-step task in rejection reasons.
func StepLabel(i int) string { return fmt.Sprintf("(step %d)", i+1) }

// describeSteps is a short description of a task's steps (for pel contract check).
func describeSteps(t *Task) string {
	var parts []string
	for _, s := range t.Steps {
		x := s.Kind
		switch {
		case s.FromDataset:
			x = "chat turns from the dataset"
		case s.Kind == StepTools:
			x = fmt.Sprintf("tools (≤%d calls)", s.MaxCalls)
		case s.Kind == StepEmbeddings:
			x = fmt.Sprintf("embeddings ×%d", s.Inputs)
		}
		if s.Repeat > 1 {
			x += fmt.Sprintf(" ×%d", s.Repeat)
		}
		parts = append(parts, x)
	}
	return strings.Join(parts, " → ")
}

// stepsUseTaskOutput reports whether the task's own output_tokens is used: always for a
// single request, and for a multi-step task when a model call's step gives none.
func (t *Task) stepsUseTaskOutput() bool {
	if !t.MultiStep() {
		return true
	}
	for _, s := range t.Steps {
		if s.Kind != StepEmbeddings && s.OutputTokens == nil {
			return true
		}
	}
	return false
}
