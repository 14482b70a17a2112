// Package record holds the one-record-per-task type that every stage-1 measurement is
// derived from, and its JSONL codec. A run's requests.jsonl is a stream of these records,
// appended and flushed as each task ends, so summaries can always be rebuilt from it.
//
// Timing names: ScheduledAt is when the arrival process said the task
// should start (the absolute schedule), SentAt when its request bytes were written. TTFT and
// E2E are measured from ScheduledAt so coordinated omission is never hidden; the *FromSent
// variants exist for comparison with tools that measure from the send.
//
// # Multi-step tasks
//
// A task whose contract type has steps (chat turns, a tool loop, embeddings calls) writes
// one step record per call, each appended and flushed as the call ends (a crash loses no
// finished call), then its task record. A step record is an ordinary Record of that one
// HTTP exchange, plus "step" (StepRef): the task's seq, the call's index, its kind, its turn
// in the conversation, the planned think and tool time before it, the prompt tokens it
// carried over from the previous call, its tool calls or embeddings batch. Its ScheduledAt
// is when the call was due (the previous call's end plus the planned waits: the calls of a
// task are closed-loop), so its TTFT, E2E and ScheduleLag are the call's own. Each call has
// its own trace id (an engine exports one span per request, and pel joins spans to requests
// by trace id) and its own request id, the task's id and "-N".
//
//	{"seq":7,"id":"9f…-2","trace_id":"c4…","task":"chat","scheduled_at":…,"first_token_at":…,
//	 "prompt_tokens":612,"accepted":false,"reasons":["slo ttft max 150ms"],
//	 "step":{"task":7,"index":1,"kind":"chat","turn":1,"think_us":3000000,"carried_tokens":2031,"answer":true}}
//	{"seq":7,"id":"9f…","trace_id":"9f…","task":"chat","steps":4,"scheduled_at":…,"done_at":…,
//	 "accepted":false,"reasons":["slo ttft max 150ms (step 2)"]}
//
// The task record ("steps": N, the calls taken) decides acceptance: every call completed,
// passed the task's checks (those that are answers) and its per-call bounds, the task met
// its e2e bound and max_steps, and a tool loop answered within max_calls. It carries the
// task's schedule (ScheduledAt: the arrival), its first send and first token, its end, the
// summed token counts, the first failed call's status (Error names the call) and every
// call's flags; it has no chunk timings and no TPOT of its own. ReadFile returns task
// records only, each with its step records attached (StepRecords); ITLs and ChunkGaps of a
// task record run over its calls, so every consumer of task records sees per-token figures
// and never a gap between two calls. Step records whose task record is missing (the run was
// killed mid-task) stay in the file and are left out (Group counts them).
//
// # Phases and targets
//
// Phases (Record.Phase) are never mixed in one statistic: cold (the contract's warm-up),
// warm, and canary. An interleaved canary run (pel run --canary URL) sends each arrival of
// one seeded schedule either to the baseline target (phase cold or warm, as in any run) or
// to the candidate (phase canary, whatever its time: the candidate's own warm-up is told
// apart by its schedule offset, see package canary), and records on every task, and every
// call of a multi-step task, the target it went to (Record.Target, the base URL without
// credentials; omitted by every other run):
//
//	{"seq":12,"id":"…","task":"chat","phase":"canary","target":"http://10.0.0.7:8000",…}
package record
