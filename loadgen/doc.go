// Package loadgen drives an OpenAI-compatible server under a workload schedule and turns
// every task into a record.Record.
//
// It holds three parts that are deliberately separate so each can be tested alone:
//
//   - the SSE parser (sse.go): a small event-stream reader over bufio, fuzzed (FuzzSSE);
//   - the client (client.go): one HTTP attempt of /v1/chat/completions or /v1/completions,
//     streaming or not, timed with an injected Clock, with the OpenAI error shapes decoded;
//   - the driver (driver.go): the pacer that sends on an absolute schedule (open loop) or
//     with N workers (closed loop), the retry loop, the client-side concurrency cap, the
//     acceptance hook, and the record sink.
//
// # Accepted means a valid completion
//
// A completed HTTP exchange is not yet a valid completion. Each attempt is checked, and a
// failure carries a record.Err* class (Record.ErrorClass) and its reason in Record.Error:
//
//   - an error event in a stream of HTTP 200, in either form (an "error:" line, as llama.cpp
//     sends when a prompt exceeds the slot's context; or a data event whose JSON has
//     "error", as vLLM and SGLang send), fails the task (stream_error), classified by its
//     code: 4xx other than 408/429 refused, 429/503 overloaded, 408 timeout, other codes
//     server_error, no code error_event. HTTP error statuses are classified the same way;
//   - an answer is complete only when the server said why it ended (acceptance.go):
//     finish_reason stop, length, tool_calls (content_filter too, which the contract's judge
//     fails as a check); "error" fails as finish_error, "abort" as aborted, and none at all
//     (null or absent, even after [DONE]) or one no API defines as no_finish_reason. A
//     stream cut before any finish_reason or [DONE] fails as incomplete, and an answer whose
//     body did not end within the attempt's timeout, even after [DONE], as timeout;
//   - implausible usage (negative counts, counts past record.MaxTokens, completion_tokens
//     over twice max_tokens plus 16) fails as invalid (StatusInvalid, ErrInvalid), and the
//     counts are clamped and not spread over chunks, so no per-token loop sees them;
//   - a truncated prompt (usage.prompt_tokens below PromptTruncatedRatio, 90%, of the length
//     pel planned: workload.Request.PlannedPromptTokens, known for synthetic prompts and
//     tokenizer-counted datasets) is flagged prompt_truncated AND fails as invalid: the
//     server answered a different, shorter request than the contract's, so neither its
//     latency nor its output may count as the contract's. The 10% tolerance is what the
//     ratio means: chat templates only add tokens, and tokenizers other than GPT's and
//     Llama-3's split pel's one-token words into more tokens, not fewer; a few percent is
//     tokenization, 10% missing is a cut;
//   - no generated text and no tool call fails as invalid ("no output"), whatever usage
//     claims (content_filter excepted: the filter withheld the answer);
//   - usage that contradicts the stream (tokens claimed with no content, a final usage below
//     a running one, fewer tokens than content events) is flagged usage_contradicts_stream
//     and the stream's own count is kept;
//   - an answer that came as one JSON body (the server ignored "stream": true, or the
//     contract asked for none) has its first and last token at the body's arrival: that is
//     when the client could use it. It has no ITL or TPOT, and is flagged not_streamed
//     when pel asked for a stream.
//
// Flags (Record.Flags) mark what the diagnosis should know about a task without failing
// it: context_shift (llama.cpp's "truncated": true: the engine shifted its context while
// generating; the prompt it was given was whole), conn_retried (see below), and
// record_truncated (see Bounds).
//
// Rejection reasons stay short and countable ("invalid: prompt truncated", "invalid: no
// output"); the figures are in Record.Error.
//
// # Keep-alive connections a server closes
//
// Some servers advertise keep-alive and close the connection after each streamed response
// (llama.cpp's llama-server b4750: 22% of tasks failed with EOF under light load). RawTransport
// checks a pooled connection without blocking before reusing it, and when a request still
// fails on a reused connection before a single response byte, it is sent once more on a
// freshly dialled connection (net/http's rule: the server cannot have answered it) and the
// task is flagged conn_retried. It is not a task retry: Attempts does not change.
//
// # Bounds
//
// Nothing a server sends can make pel hold unbounded memory or loop without end; each bound
// is a named constant with its reason (bounds.go, record.MaxTokens, record.MaxChunkTimings):
// response headers (MaxResponseHeaderBytes), bytes per response (MaxStreamBytes: the task
// fails as incomplete, so an endless stream ends), one SSE event (DefaultMaxEvent), timed
// content events per record (record.MaxChunkTimings: later events are counted in
// Record.Chunks, not timed, and the record is flagged record_truncated), a non-streamed body
// (MaxJSONBody), error bodies (MaxErrorBody, gzip decoded), kept output (MaxKeptOutput).
// Redirects are not followed (the task fails as redirect, naming the Location without its
// credentials), and server text is stripped of control characters before it is recorded.
//
// # Multi-step tasks
//
// A request with Steps (workload.StepPlan) starts on the open-loop schedule like any task;
// its calls then follow each other as a client would (driver_steps.go): each is due when
// the previous one ended plus its planned think time and tool latency, encoded before it is
// due, retried per the contract, and recorded with its own due time, so its schedule lag is
// its own. The client (StepDoer) keeps every answer's text for the next turn, assembles tool
// calls from streamed deltas or whole messages (tools.go: bounded by MaxToolCalls and
// MaxKeptOutput; a call without a name or with arguments that are not JSON fails the call
// as invalid), and calls /v1/embeddings (embeddings.go: the response is read as a token
// stream, bounded by MaxEmbeddingsBody; one vector per input, each index once, one
// dimension, or the call fails). A call whose prompt the server counted under
// PromptTruncatedRatio of what pel knows was sent (the previous prompt as the server counted
// it plus the planned new tokens: a lower bound) fails as truncated, as a single request does.
//
// Why open loop: a slow server must never delay the next arrival, or the tool would measure
// its own waiting (coordinated omission) instead of the server. Every task that was due gets
// a record, including those cut by Ctrl-C (status cancelled), so failed work is never dropped
// from a denominator.
package loadgen
