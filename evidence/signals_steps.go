package evidence

// Stage 1 signals of multi-step tasks (package stats, steps.go): what a task's later calls
// cost because of what came before them, and how much of a task is spent between calls.
// Each is reported only when the run had multi-step tasks.
const (
	// SigStepsReprefillShare is the share of the context later model calls carried over
	// (each call's previous call's prompt, as the server counted it) that the server computed
	// again: Σ max(0, carried − cached) / Σ carried over later turns, where cached is what the
	// server says it did not compute (usage.prompt_tokens_details.cached_tokens, or
	// prompt_tokens − llama.cpp's timings.prompt_n). 0 when a prefix cache kept every
	// conversation between its turns; 1 when every turn re-prefilled its whole history.
	// Reported only when the server reported cached tokens.
	SigStepsReprefillShare = "client.steps.reprefill_share"
	// SigStepsCacheableShare is Σ carried tokens / Σ prompt tokens over every call of the
	// window (single tasks and embeddings included): the prefix-cache hit rate an engine
	// that kept every conversation between its turns would report for this traffic (shared
	// prefixes aside). Against the engine's own hit rate (SigPrefixHitRate) it says how much
	// of the carried context the cache kept.
	SigStepsCacheableShare = "client.steps.cacheable_share"
	// SigStepsFirstTTFTP50 and SigStepsLaterTTFTP50 are TTFT from send (queue and prefill,
	// no client lateness) of the first model call of a conversation and of its later calls;
	// SigStepsLaterTTFTRatio is later ÷ first. A later call sends everything before it again:
	// with the context cached it prefills only what was added since, so the ratio stays
	// near or below 1 unless each turn adds more than the first prompt held.
	SigStepsFirstTTFTP50   = "client.steps.first_ttft_p50_ms"
	SigStepsLaterTTFTP50   = "client.steps.later_ttft_p50_ms"
	SigStepsLaterTTFTRatio = "client.steps.later_first_ttft_ratio"
	// SigStepsLaterTTFTP99 is TTFT of later model calls from their own due time (what a
	// per-call TTFT bound judges).
	SigStepsLaterTTFTP99 = "client.steps.later_ttft_p99_ms"
	// SigStepsWaitShare is the median, over the multi-step tasks of the task type that waits
	// most, of the share of the task's own time spent between calls outside the server: (Σ time from a call's end to the next
	// call's send − Σ planned think time) ÷ (E2E − Σ planned think time). What it holds: tool
	// latency and the client's own delay in sending the next call; the user's think time is
	// nobody's layer and is left out of both sides.
	SigStepsWaitShare = "client.steps.wait_share"
	// SigStepsLagP99 is the 99th percentile of later calls' schedule lag (send − due, due =
	// the previous call's end + planned think and tool time): the client's own delay between
	// calls, recorded apart from the arrival schedule's (SigScheduleLagP99).
	SigStepsLagP99 = "client.steps.schedule_lag_p99_ms"
)

// ActShorterStepWaits: shorten what a task waits for between its calls (faster tools,
// independent tool calls run concurrently, no pause in the agent loop).
const ActShorterStepWaits Action = "shorter_waits_between_steps"

// StepSummary is stage 1's summary of one call position of one multi-step task type
// (workload.steps): every warm task of the type that reached that call, judged per call
// (a call's acceptance is its own bounds and checks; the task's is in by_task_type).
type StepSummary struct {
	Task  string `json:"task"`
	Index int    `json:"index"` // the call's position in its task, from 0
	Kind  string `json:"kind"`  // chat | tools | embeddings (the first task's, when they differ)
	Summary
	PromptTokensMean  float64 `json:"prompt_tokens_mean"`
	CarriedTokensMean float64 `json:"carried_tokens_mean,omitempty"`
	// CachedShare is the share of its prompt tokens the server did not compute, when the
	// server said so (usage cached_tokens, llama.cpp timings.prompt_n).
	CachedShare *float64 `json:"cached_prompt_share,omitempty"`
	// WaitMs is the time from the previous call's end to this call's send (think time, tool
	// latency and the client's delay).
	WaitMs Quantiles `json:"wait_ms,omitzero"`
	// ToolCallsMean is the tool calls per call of a tools step.
	ToolCallsMean float64 `json:"tool_calls_mean,omitempty"`
}
