package record

import "time"

// Step kinds (StepRef.Kind), as the contract names them.
const (
	StepChat       = "chat"
	StepTools      = "tools"
	StepEmbeddings = "embeddings"
)

// StepRef links a step record to its task: the record of one call (a chat turn, one model
// call of a tool loop, one embeddings batch) of a multi-step task. Step records carry the
// call's own timings in the ordinary fields: ScheduledAt is when the call was due (the
// previous call's end plus the planned think time and tool latency), so TTFT and
// ScheduleLag are the call's own. The task record (Steps > 0) decides acceptance.
type StepRef struct {
	Task  int    `json:"task"`  // the task's Seq (the step record's Seq is the same)
	Index int    `json:"index"` // 0-based position among the task's calls
	Kind  string `json:"kind"`  // chat | tools | embeddings
	// Turn counts the conversation's model calls before this one (0: its first), so "a
	// later turn" is Turn ≥ 1; -1 for an embeddings call.
	Turn int `json:"turn"`
	// ThinkUS and ToolUS are the waits the contract planned before this call (user think
	// time, tool latency): planned, never lateness.
	ThinkUS int64 `json:"think_us,omitempty"`
	ToolUS  int64 `json:"tool_us,omitempty"`
	// CarriedTokens is how many of this call's prompt tokens the server has seen before in
	// this task: the previous model call's prompt as the server counted it. A cache that
	// kept the conversation would not compute them again.
	CarriedTokens int `json:"carried_tokens,omitempty"`
	// ToolCalls the model made in this call (a tools step).
	ToolCalls int `json:"tool_calls,omitempty"`
	// Inputs of an embeddings call and the dimension of the vectors returned.
	Inputs int `json:"inputs,omitempty"`
	Dims   int `json:"dims,omitempty"`
	// Answer marks a call whose output is an answer for the user (a chat turn, the last call
	// of a tool loop): the task's checks judge it.
	Answer bool `json:"answer,omitempty"`
}

// IsStep reports whether r is the record of one call of a multi-step task.
func (r *Record) IsStep() bool { return r.Step != nil }

// MultiStep reports whether r is the task record of a multi-step task.
func (r *Record) MultiStep() bool { return r.Steps > 0 && r.Step == nil }

// StepRecords returns the step records attached to a multi-step task record (ReadFile
// attaches them; nil otherwise).
func (r *Record) StepRecords() []Record { return r.steps }

// AttachSteps attaches step records to a multi-step task record, in order of their index.
func (r *Record) AttachSteps(steps []Record) { r.steps = steps }

// Requests returns the HTTP exchanges a task record stands for: its attached steps, or the
// record itself for a single-request task (per-request statistics use these).
func (r *Record) Requests() []*Record {
	if len(r.steps) == 0 {
		return []*Record{r}
	}
	out := make([]*Record, len(r.steps))
	for i := range r.steps {
		out[i] = &r.steps[i]
	}
	return out
}

// CachedTokens is how many prompt tokens the server says it did not compute: usage's
// cached_tokens, or prompt_tokens − llama.cpp's timings.prompt_n. ok is false when the
// response said neither.
func (r *Record) CachedTokens() (n int, ok bool) {
	if r.CachedPromptTokens > 0 {
		return r.CachedPromptTokens, true
	}
	if r.Server != nil && r.PromptTokens > 0 {
		return max(0, r.PromptTokens-r.Server.PromptN), true
	}
	return 0, false
}

// WaitBefore is the time between the end of the previous call and this step's first send:
// planned think time and tool latency plus the client's own lateness. ok is false for the
// first call of a task or an unsent step.
func (r *Record) WaitBefore(prev *Record) (time.Duration, bool) {
	s := r.FirstSentAt
	if s.IsZero() {
		s = r.SentAt
	}
	if prev == nil || s.IsZero() || prev.DoneAt.IsZero() {
		return 0, false
	}
	return s.Sub(prev.DoneAt), true
}
