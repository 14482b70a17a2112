package workload

import "time"

// Message is one chat message sent to /v1/chat/completions. ToolCalls (an assistant's tool
// calls) and ToolCallID (a role "tool" result) are set only in multi-step tasks.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Request is one planned task: what to send and when. It is what the load driver consumes;
// it carries no network or timing state of its own.
type Request struct {
	Seq  int           // position in the schedule, from 0
	At   time.Duration // offset from run start on the absolute schedule (ignored in closed loop)
	Task string        // task type name from the contract
	// Phase is "cold" while At < warmup, else "warm" (closed loop: by start time, set by the driver).
	Phase string

	PromptTokens int // requested prompt length in tokens (approximate without a tokenizer)
	// PlannedPromptTokens is PromptTokens when pel trusts it: a synthetic prompt (words that
	// are one token each) or a tokenizer count; 0 when it is a characters-based estimate.
	// The load generator compares it with usage.prompt_tokens to detect a truncated prompt.
	PlannedPromptTokens int
	PrefixTokens        int // leading tokens shared with other requests of the task (prefix caching)
	MaxTokens           int
	IgnoreEOS           bool

	Prompt   string    // for the completions API
	Messages []Message // for the chat API

	// Steps, when set, make this a multi-step task: the calls to make in order (steps.go).
	// Messages then holds the conversation's opening messages before the first step's user
	// message (a dataset's system turn), and Prompt the first user message (for its hash).
	Steps []StepPlan
}

// Schedule yields planned requests in order of At. Implementations are deterministic for a
// given contract and seed, and never read a clock: the driver owns time.
type Schedule interface {
	// Next returns the next request; ok is false when the schedule is exhausted
	// (request count reached, or At would pass the contract's duration).
	Next() (r Request, ok bool)
	// Closed returns the concurrency of a closed-loop arrival process, or 0 for an open-loop
	// one. In closed loop the driver ignores At and sends the next request when a slot frees.
	Closed() int
}
