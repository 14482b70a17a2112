package loadgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pel-ladder/pel/record"
)

// An answer is complete only when the server said why it ended and something was generated.
// checkFinish reads the first half: a finish_reason that names a normal end passes
// (record.FinishReasonComplete, content_filter included: the contract's judge fails that as
// a check); "error", "abort", none at all, or one no API defines fail the attempt, each in
// its own class.
func checkFinish(fr string) (status, class, msg string) {
	switch {
	case record.FinishReasonComplete(fr):
		return "", "", ""
	case fr == "error":
		return record.StatusStreamError, record.ErrFinishError, `finish_reason "error": the server ended the answer because it failed`
	case fr == "abort":
		return record.StatusStreamError, record.ErrAborted, `finish_reason "abort": the engine aborted the request before it completed`
	case fr == "":
		return record.StatusStreamError, record.ErrNoFinish, "no finish_reason (null or absent): the server did not say the completion ended"
	}
	return record.StatusStreamError, record.ErrNoFinish, fmt.Sprintf("finish_reason %q is none a serving API defines (stop, length, tool_calls, content_filter): the server did not say the completion ended", fr)
}

// streamCount settles a stream's completion-token count when its usage contradicts what
// arrived: a usage that claims tokens when no content event came, a final usage below a
// running one seen earlier in the same stream (counts of generated tokens only grow), or
// fewer completion tokens than content events (every content event carries at least one
// generated token). It returns the count the stream itself supports and whether usage was
// contradicted; byEvents says that count is the content events (no usage figure supports
// it).
func streamCount(st *streamState, events int) (completion int, byEvents, contradicted bool) {
	u := st.last
	if u == nil {
		return 0, false, false
	}
	switch c := u.CompletionTokens; {
	case events == 0 && c > 0:
		return 0, true, true
	case st.usages > 1 && c < st.maxRunning:
		return st.maxRunning, false, true
	case c < events:
		return events, true, true
	}
	return u.CompletionTokens, false, false
}

// deadlineErr reports whether a read failed because the attempt's time ran out (RawTransport
// sets a past deadline on the connection; net/http's Transport returns the context's error)
// or the run stopped; the attempt's fail function then names which.
func deadlineErr(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// settleJSON applies the rules of a streamed answer to one that came as a single body: its
// first usable token arrived with the body (at), so that is its first and last token time,
// and it is flagged not_streamed when pel asked for a stream (streamAsked). Usage that
// contradicts the body is flagged and the body's
// own count kept: none for an answer without content, ~4 characters a token (the usual
// English rule) for text that usage says is no tokens.
func settleJSON(rec *record.Record, out *outputSink, at time.Time, streamAsked bool) {
	if streamAsked {
		rec.AddFlag(record.FlagNotStreamed)
	}
	if out.any {
		rec.FirstTokenAt, rec.LastTokenAt = at, at
		if rec.TokenSource == record.TokensUsage && rec.OutputTokens == 0 && out.chars > 0 {
			rec.AddFlag(record.FlagUsageContradicts)
			rec.OutputTokens = (out.chars + 3) / 4
			rec.TokenSource = record.TokensEstimate
		}
		return
	}
	if rec.OutputTokens > 0 {
		rec.AddFlag(record.FlagUsageContradicts)
		rec.OutputTokens = 0
		rec.TokenSource = record.TokensEstimate
	}
}
