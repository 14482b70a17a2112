package record

import (
	"strings"
	"time"
)

// Status values of a finished task. A task that completed its HTTP exchange without error
// is StatusOK even when it failed an acceptance check or an SLO: acceptance is separate.
const (
	StatusOK          = "ok"           // response completed
	StatusHTTPError   = "http_error"   // non-2xx after all allowed retries
	StatusTimeout     = "timeout"      // request or stream deadline passed
	StatusStreamError = "stream_error" // stream cut, malformed, an error event, or no normal finish_reason
	StatusConnError   = "conn_error"   // could not connect / connection reset before headers
	StatusCancelled   = "cancelled"    // run stopped (Ctrl-C) before the task ended
	// StatusInvalid: the exchange completed but the completion contradicts the request (no
	// output, a truncated prompt, implausible usage); ErrorClass says which kind, Error the
	// details. It is a failed task: it counts as an error, not as latency.
	StatusInvalid = "invalid"
)

// MaxTokens bounds every token count pel believes: 2^24 = 16,777,216, above the longest
// context any served model has (10M). A usage figure beyond it is not a count (a server
// bug or a hostile server), so the task fails as ErrInvalid instead of pel looping over
// 2^63 tokens; per-token loops (ITLs) never run past it either. Contracts are held to it.
const MaxTokens = 1 << 24

// MaxChunkTimings bounds the per-chunk timings one record keeps (ChunkUS, ChunkTokens):
// 65,536 content events, ~1 MiB in memory and in its JSONL line. A longer stream keeps its
// counts (OutputTokens, Chunks) and is flagged FlagTruncatedRecord: its ITLs cover the first
// MaxChunkTimings events only.
const MaxChunkTimings = 1 << 16

// Error classes say what kind of failure ended a task (Record.ErrorClass), so the diagnosis
// can count each class, name its cause and owner, and tell refusals from overload from a
// broken path. Set on every failed task; empty on an ok one.
const (
	// ErrRefused: the server rejected the request as given (HTTP 4xx other than 408/429, or an
	// error event with such a code): prompt longer than the context, unknown model, bad field.
	ErrRefused = "refused"
	// ErrOverloaded: the server shed load (HTTP 429 or 503, or an error event with that code).
	ErrOverloaded = "overloaded"
	// ErrServer: any other 5xx, or an error event without a 4xx code.
	ErrServer = "server_error"
	// ErrStreamEvent: an error event inside a stream that began with HTTP 200 (either form:
	// an "error:" SSE line, or a data event whose JSON carries "error"), with no usable code.
	ErrStreamEvent = "error_event"
	// ErrIncomplete: the response ended before any finish_reason or [DONE], or was cut mid-body.
	ErrIncomplete = "incomplete"
	// ErrConn: could not connect, or the connection was reset/closed before a response.
	ErrConn = "connection"
	// ErrTimeout: no complete response within the attempt's timeout.
	ErrTimeout = "timeout"
	// ErrInvalid: the exchange completed but the completion contradicts the request: no
	// output when output was requested, usage below what was sent (a truncated prompt),
	// or implausible usage (negative, far beyond max_tokens or any context).
	ErrInvalid = "invalid_completion"
	// ErrRedirect: the server answered with a redirect, which pel does not follow.
	ErrRedirect = "redirect"
)

// Flags mark a completed task whose response shows something the diagnosis should know
// without failing it (Record.Flags).
const (
	// FlagPromptTruncated: usage.prompt_tokens is well below the prompt pel sent.
	FlagPromptTruncated = "prompt_truncated"
	// FlagContextShift: the engine reported that it shifted or truncated the context while
	// generating (llama.cpp "truncated": true), so the output did not see the whole prompt.
	FlagContextShift = "context_shift"
	// FlagConnRetried: the first attempt failed on a reused keep-alive connection before any
	// response byte and was resent once on a fresh connection (the server cannot have seen it).
	FlagConnRetried = "conn_retried"
	// FlagRetryDenied: the task's last attempt failed in a way the contract retries, with
	// attempts left, but the run's retry budget was spent: the task got no retry.
	FlagRetryDenied = "retry_denied"
	// FlagTruncatedRecord: the stream exceeded pel's per-stream bounds; chunk timings past the
	// bound were not kept (counts still are).
	FlagTruncatedRecord = "record_truncated"
	// FlagTextCut: the prompt or output kept (--keep-text) was cut to fit one line of
	// requests.jsonl (MaxLine); prompt_chars, output_chars and prompt_sha256 are the whole's.
	FlagTextCut = "text_cut"
	// FlagEventsSummarized: the record was imported from a tool that kept only the first and
	// last token's times, so its content events (the first token, then the rest at the last
	// token's time) are not the events the stream carried. Its TTFT, E2E and TPOT are the
	// tool's own, its ITLs each token's mean gap between the two; the shape of its events
	// (tokens per event, gaps between events) is not known and is not read from it.
	FlagEventsSummarized = "events_summarized"
)

// Phases are never mixed in one statistic.
const (
	PhaseCold   = "cold"
	PhaseWarm   = "warm"
	PhaseCanary = "canary"
	// PhaseProfiled: a warm task that overlapped a profiling window (pel run --profile-at),
	// kept out of the warm figures because the profiler slowed it (Profiled marks it too).
	PhaseProfiled = "profiled"
)

// Token count sources.
const (
	TokensUsage    = "usage"    // server-reported usage block
	TokensEstimate = "estimate" // client-side fallback (chunk count or a local tokenizer)
)

// Record is one task: one logical request under the contract, including its retries.
// Zero times mean "did not happen" (no headers, no first token...).
type Record struct {
	Seq int    `json:"seq"` // position in the schedule, from 0
	ID  string `json:"id"`  // X-Request-Id sent with every attempt
	// TraceID is the W3C trace id (32 hex digits) of the traceparent sent with every attempt;
	// an engine's OTLP spans carry it, so server timings join to this record (package otlp).
	TraceID string `json:"trace_id,omitempty"`
	Task    string `json:"task"` // task type name from the contract
	Phase   string `json:"phase"`
	// Target is the base URL (without credentials) the task was sent to. Only an interleaved
	// canary run (pel run --canary URL) sets it, on every record: that run has two targets,
	// and its candidate's tasks are the ones with phase canary.
	Target string `json:"target,omitempty"`
	// Shard is "i/n" on every record of shard i of a sharded run (pel run --shard i/n),
	// whose Seq is then the task's position in the one schedule all shards share; empty for
	// a run of one process.
	Shard string `json:"shard,omitempty"`
	// Profiled: the task overlapped a profiling window (it was in flight between the
	// profiler's start call and its stop call's answer), whatever its phase.
	Profiled bool `json:"profiled,omitempty"`
	// InFlight is the number of tasks in flight (sent, not done) when this one was sent,
	// itself excluded; concurrency bands are derived from it.
	InFlight int `json:"in_flight"`

	ScheduledAt  time.Time `json:"scheduled_at"`
	SentAt       time.Time `json:"sent_at,omitzero"` // first byte of the final attempt written
	HeadersAt    time.Time `json:"headers_at,omitzero"`
	FirstTokenAt time.Time `json:"first_token_at,omitzero"` // first SSE event with generated content
	LastTokenAt  time.Time `json:"last_token_at,omitzero"`
	DoneAt       time.Time `json:"done_at,omitzero"`
	// FirstSentAt is when the first attempt was sent; equals SentAt without retries.
	FirstSentAt time.Time `json:"first_sent_at,omitzero"`
	// ClientQueueUS is time spent waiting for a client-side concurrency slot (contract cap),
	// counted, never hidden: it lies between ScheduledAt and FirstSentAt.
	ClientQueueUS int64 `json:"client_queue_us,omitempty"`

	// ChunkUS[i] is the arrival of the i-th content-carrying SSE event, in µs after SentAt;
	// ChunkTokens[i] the tokens it carried (server delta count when known, else 1).
	ChunkUS     []int64 `json:"chunk_us,omitempty"`
	ChunkTokens []int   `json:"chunk_tokens,omitempty"`
	// Chunks counts every content event, also those past MaxChunkTimings whose timings were
	// not kept (set only when it differs from len(ChunkUS)).
	Chunks int `json:"chunks,omitempty"`

	PromptTokens int    `json:"prompt_tokens"`
	OutputTokens int    `json:"output_tokens"`
	TokenSource  string `json:"token_source,omitempty"`
	// CachedPromptTokens as reported by usage.prompt_tokens_details, when present.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`

	Attempts   int    `json:"attempts"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Error      string `json:"error,omitempty"`
	// FinishReason from the last choice (stop, length...).
	FinishReason string `json:"finish_reason,omitempty"`
	// ErrorClass is one of the Err* classes for a failed task; empty when Status is ok.
	ErrorClass string `json:"error_class,omitempty"`
	// SentPromptTokens is the prompt length pel planned (synthetic length including any shared
	// prefix; 0 when unknown, e.g. dataset text without a tokenizer). Compared with usage to
	// detect truncation.
	SentPromptTokens int `json:"sent_prompt_tokens,omitempty"`
	// Server holds the engine's own per-request timings when the response carried them.
	Server *ServerTimings `json:"server,omitempty"`
	// Flags are Flag* marks of a completed task (context shift, truncated prompt, a retried
	// keep-alive connection...).
	Flags []string `json:"flags,omitempty"`

	Accepted bool     `json:"accepted"`
	Reasons  []string `json:"reasons,omitempty"` // why not accepted: "error: ...", "check regex", "slo ttft max"

	// Step is set on the record of one call of a multi-step task (see StepRef); Steps on
	// the task record of a multi-step task: how many calls it took. A single-request task
	// has neither.
	Step  *StepRef `json:"step,omitempty"`
	Steps int      `json:"steps,omitempty"`

	// Privacy: text is kept only on request (--keep-text); otherwise its length and hash.
	PromptHash  string `json:"prompt_sha256,omitempty"`
	PromptChars int    `json:"prompt_chars,omitempty"`
	OutputChars int    `json:"output_chars,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	Output      string `json:"output,omitempty"`

	// steps are the step records of a multi-step task record, attached by ReadFile (never
	// encoded: each step is its own line).
	steps []Record
	// line is the line of the file it was read from (0 when it was not read from one).
	line int
}

// Line is the 1-based line of the file the record was read from, 0 when it was not read.
func (r *Record) Line() int { return r.line }

// AddFlag adds flag f once.
func (r *Record) AddFlag(f string) {
	if !r.HasFlag(f) {
		r.Flags = append(r.Flags, f)
	}
}

// HasFlag reports whether the record carries flag f.
func (r *Record) HasFlag(f string) bool {
	for _, x := range r.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// InvalidReason is the stable rejection reason of a StatusInvalid record: "invalid: " and
// the kind its Error starts with ("prompt truncated", "no output", "implausible usage"...),
// without the figures, so reasons count across tasks and runs.
func (r *Record) InvalidReason() string {
	kind := r.Error
	if i := strings.IndexAny(kind, "(:"); i >= 0 {
		kind = kind[:i]
	}
	kind = strings.TrimSpace(kind)
	if kind == "" {
		kind = "completion"
	}
	return "invalid: " + kind
}

// OK reports whether the exchange completed without error.
func (r *Record) OK() bool { return r.Status == StatusOK }

// Failed reports whether the task ended in an error of any kind other than cancellation.
func (r *Record) Failed() bool { return r.Status != StatusOK && r.Status != StatusCancelled }

// TTFT is first content event − scheduled time, so coordinated omission shows. ok is false without a token.
func (r *Record) TTFT() (time.Duration, bool) {
	if r.FirstTokenAt.IsZero() {
		return 0, false
	}
	return r.FirstTokenAt.Sub(r.ScheduledAt), true
}

// TTFTFromSent is first content event − send time of the final attempt.
func (r *Record) TTFTFromSent() (time.Duration, bool) {
	if r.FirstTokenAt.IsZero() || r.SentAt.IsZero() {
		return 0, false
	}
	return r.FirstTokenAt.Sub(r.SentAt), true
}

// TimeToHeaders is response headers − send time of the final attempt.
func (r *Record) TimeToHeaders() (time.Duration, bool) {
	if r.HeadersAt.IsZero() || r.SentAt.IsZero() {
		return 0, false
	}
	return r.HeadersAt.Sub(r.SentAt), true
}

// E2E is done − scheduled.
func (r *Record) E2E() (time.Duration, bool) {
	if r.DoneAt.IsZero() {
		return 0, false
	}
	return r.DoneAt.Sub(r.ScheduledAt), true
}

// ScheduleLag is first send − scheduled, less any client queue time the contract's
// concurrency cap imposed: the load generator's own lateness.
func (r *Record) ScheduleLag() (time.Duration, bool) {
	s := r.FirstSentAt
	if s.IsZero() {
		s = r.SentAt
	}
	if s.IsZero() {
		return 0, false
	}
	return s.Sub(r.ScheduledAt) - time.Duration(r.ClientQueueUS)*time.Microsecond, true
}

// TPOT is (last token − first token) / (output_tokens − 1). A multi-step task has none:
// its tokens span several calls and the waits between them (its steps have their own). Nor
// has an answer whose tokens all arrived at once (one JSON body, or one event): no time
// between them was observed.
func (r *Record) TPOT() (time.Duration, bool) {
	if r.MultiStep() || r.FirstTokenAt.IsZero() || !r.LastTokenAt.After(r.FirstTokenAt) || r.OutputTokens < 2 {
		return 0, false
	}
	return r.LastTokenAt.Sub(r.FirstTokenAt) / time.Duration(r.OutputTokens-1), true
}

// ITLs calls f once per generated token after the first with that token's inter-token
// latency: the gap before each content event is spread evenly over the tokens it carried.
// The first event's tokens have no gap (their latency is TTFT). A multi-step task's are its
// attached steps' (a gap between two calls is not a token's latency). Its cost grows with
// the tokens (up to MaxTokens calls per record): analyses read ITLRuns, whose cost grows
// with the events.
func (r *Record) ITLs(f func(time.Duration)) {
	r.ITLRuns(func(d time.Duration, n int) {
		for range n {
			f(d)
		}
	})
}

// ITLRuns is ITLs one content event at a time: f(d, n) for the n tokens an event carried,
// each of latency d, so a consumer that counts values pays per event, not per token. The
// counts sum to at most MaxTokens per record, whatever the record says (a requests.jsonl is
// outside input too).
func (r *Record) ITLRuns(f func(d time.Duration, n int)) {
	r.ITLRunsAt(func(_, _ time.Time, d time.Duration, n int) { f(d, n) })
}

// ITLRunsAt is ITLRuns with the content event each run of latencies ends at, and the one
// before it: from and to are their arrivals (SentAt plus the event's offset).
func (r *Record) ITLRunsAt(f func(from, to time.Time, d time.Duration, n int)) {
	for i := range r.steps {
		r.steps[i].ITLRunsAt(f)
	}
	budget := MaxTokens
	for i := 1; i < len(r.ChunkUS) && i < len(r.ChunkTokens) && budget > 0; i++ {
		k := r.ChunkTokens[i]
		if k <= 0 {
			continue
		}
		gap := time.Duration(r.ChunkUS[i]-r.ChunkUS[i-1]) * time.Microsecond
		per := gap / time.Duration(k)
		k = min(k, budget)
		budget -= k
		from := r.SentAt.Add(time.Duration(r.ChunkUS[i-1]) * time.Microsecond)
		to := r.SentAt.Add(time.Duration(r.ChunkUS[i]) * time.Microsecond)
		f(from, to, per, k)
	}
}

// ChunkGaps calls f with the gap between consecutive content events (not per token); a
// multi-step task's are those within each of its attached steps.
func (r *Record) ChunkGaps(f func(time.Duration)) {
	for i := range r.steps {
		r.steps[i].ChunkGaps(f)
	}
	for i := 1; i < len(r.ChunkUS); i++ {
		f(time.Duration(r.ChunkUS[i]-r.ChunkUS[i-1]) * time.Microsecond)
	}
}
