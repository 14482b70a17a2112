// Package contract loads and checks pel's workload contract: the versioned YAML that says
// what load to send (arrival process, weighted task mix, length distributions, datasets),
// what counts as an accepted task (acceptance checks and per-request SLO bounds), how to
// retry and what the accelerators cost. Its canonical SHA-256 travels with
// every result, so two runs are comparable only when they ran the same workload.
//
// # Strictness
//
// Parse walks the YAML node tree and reports every problem with file, line and key path:
//
//	contract.yaml:14: tasks[1].prompt_tokens.dist: unknown distribution "lognorm" (want fixed|uniform|normal|lognormal|empirical)
//
// Unknown and duplicate keys, durations without a unit, zero or negative rates, weights
// summing to 0, min > max, unknown processes, distributions or checks, bad regexes and
// JSON schemas, and missing required keys are errors. A bare number is a fixed length
// (output_tokens: 64); durations are Go durations (500ms, 2s, 1m30s).
//
// Ranges (ranges.go, each bound named once with its reason): a rate is at most MaxRate
// (20,000/s), a concurrency or max_in_flight at most MaxConcurrency (100,000), a schedule
// plans at most MaxPlannedRequests (1,000,000: requests, rate × duration, or a ramp's
// integral), and a length in tokens is a whole number up to MaxTokens (2^24). version is a
// version number (1, 2.1). A contract holds at most MaxYAMLValues (100,000) YAML values,
// counted before its tree is built (size.go). The contract, its dataset and its replay
// trace must be regular files (OpenFile): a FIFO would block.
//
// # Required keys and defaults
//
// Required: name, version, arrival.process (and its parameters), duration or requests
// (a replay trace may bound itself), tasks (at least one, each with a name and
// prompt_tokens or a dataset). Defaults:
//
//	api: chat            seed: 1             timeout: 60s (per attempt)
//	warmup: 0            max_in_flight: 0 (no client-side cap)
//	tasks[].weight: 1    tasks[].output_tokens: {dist: fixed, value: 128}
//	tasks[].dataset.format: prompts          arrival.speed (replay): 1
//	steps: tools: 1, max_calls: 4, tool_choice: auto, result_tokens: 100;
//	       embeddings: inputs: 1; repeat: 1; think, tool_latency: 0
//	retry: none (max_attempts 1); with a retry block: max_attempts 3, backoff 200ms,
//	       max_backoff 10s (or backoff, if larger), on [429, 5xx, timeout, stream, conn],
//	       budget 0.2 (retries across the run per task, at least MinRetryBudget)
//	cost.accelerators: 1
//	prompts.reuse_across_runs: false (a per-run nonce starts every prompt; see Prompts)
//
// A task's slo block replaces the global bound of each metric it names (SLOFor).
//
// # Multi-step tasks
//
// A task with `steps` is a sequence of calls instead of one request: chat turns of one
// conversation, a tool-using agent loop, embeddings calls (steps.go). Each step names one
// kind:
//
//	steps:
//	  - embeddings: {inputs: 4, input_tokens: 32}            # a retrieval query, batch of 4
//	  - chat: {prompt_tokens: 400, output_tokens: 96}        # a turn: user message, answer
//	  - chat: {prompt_tokens: 60, think: 1s, repeat: 3}      # three more, 1 s after each answer
//	  - tools: {prompt_tokens: 300, tools: 2, max_calls: 3, tool_choice: auto,
//	           result_tokens: 200, tool_latency: 150ms, no_stream: false}
//	  - chat: {from_dataset: true, think: 2s, max_turns: 6}  # a ShareGPT conversation, turn by turn
//
// The conversation is carried forward (the server's own answers, tool calls and tool
// results); embeddings calls leave it alone. A tools step asks the model with `tools` and,
// while it answers with tool calls, appends each call's result (result_tokens words, after
// tool_latency) and asks again, up to max_calls; with tool_choice: required, tool use is
// forced on every call but the last, which asks for the answer. output_tokens defaults to
// the task's; think and tool_latency are planned waits, never lateness. Tasks with steps take
// no prompt_tokens of their own; a dataset is read only by a from_dataset chat step; chat and
// tools steps need api: chat. A task plans at most MaxStepsPerTask calls. Its planned
// pauses must end inside its e2e max bound (all of them together), or, without one, each
// inside the contract's timeout; a running task ends when its e2e max bound passes
// (checkTaskTimes, TaskBound): every task ends by its own bounds.
//
// A multi-step task is accepted when every call completed, passed the task's checks (answers
// only: chat turns and a tool loop's final answer) and the per-call max bounds of TTFT (from
// the call's own due time), ITL and TPOT; when the task as a whole met slo.e2e.max and
// slo.max_steps (the calls it took); and when its tool loops answered within max_calls
// (JudgeStep, JudgeTask). Goodput and cost per accepted task count whole tasks.
//
// # The hash
//
// SHA256 is the hex SHA-256 of the bytes "pel-contract/v1\n" followed by Canonical(): the
// parsed, defaulted Contract as encoding/json writes it (fixed field order, sorted map keys,
// durations as integer nanoseconds). So comments, key order, whitespace, equivalent
// spellings (1s = 1000ms; {regex: X} = {type: regex, pattern: X}) and written-out defaults
// do not change the hash; any value that changes the workload does. Files named by the
// contract (dataset, replay trace) are hashed by the path as written, not by content.
// Raw keeps the exact bytes, to copy into a run directory.
//
// # Judging
//
// Judge sets record.Accepted and record.Reasons for a finished task. Percentile SLO bounds
// are aggregate properties, judged by stats/diagnose from SLOFor.
package contract
