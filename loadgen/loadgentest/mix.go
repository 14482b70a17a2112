package loadgentest

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// The mixed-behaviour fixture: a contract whose task types each meet one server behaviour
// (multi-token chunks, a 500 then success, persistent 429s, a stream cut mid-way, an error
// event mid-stream, no usage block, a failed acceptance check, a timeout, an error body that
// quotes the credential), and the record each task type must produce. The runner's and the
// `pel run` command's integration tests share it.

// MixContract draws every task type (seed 7) in 48 requests.
const MixContract = `name: it-mix
version: 3
api: chat
arrival: {process: constant, rate: 200}
requests: 48
seed: 7
timeout: 2s
tasks:
  - {name: plain, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 8}
  - {name: multi, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 12}
  - {name: flaky, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 9}
  - {name: ratelimit, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 10}
  - {name: cut, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 11}
  - {name: errevent, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 13}
  - {name: nousage, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 14}
  - name: check
    prompt_tokens: {dist: fixed, value: 16}
    output_tokens: 15
    checks: [{type: regex, pattern: '\d'}]
  - {name: slow, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 16}
  - {name: echo, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 17}
retry: {max_attempts: 3, backoff: 5ms, on: [429, 5xx], budget: 2}
cost: {accelerator_hour_usd: 3.6, accelerators: 1}
`

// MixPlan keys each behaviour on max_tokens, which the contract fixes per task type.
func MixPlan(r Request) Behavior {
	switch r.MaxTokens {
	case 12:
		return Behavior{TokensPerChunk: 3}
	case 9:
		if r.Attempt == 1 {
			return Behavior{Status: 500}
		}
	case 10:
		return Behavior{Status: 429}
	case 11:
		return Behavior{CutAfter: 2}
	case 13:
		return Behavior{ErrorEventAfter: 2}
	case 14:
		return Behavior{NoUsage: true}
	case 16: // past the contract's 2 s timeout
		return Behavior{FirstTokenDelay: time.Minute}
	case 17: // a server that quotes the credential it was sent in its error body
		return Behavior{Status: 400, ErrorBody: `{"error":{"message":"bad request from ` + r.Auth + `"}}`}
	}
	return Behavior{}
}

// MixWant is what one task type's records must hold.
type MixWant struct {
	Status   string
	Attempts int
	HTTP     int
	Tokens   int
	Source   string
	Accepted bool
	Reason   string
	Chunk    int // tokens in every chunk; 0: don't check
}

// MixWants maps each task type of MixContract to its expected record.
var MixWants = map[string]MixWant{
	"plain":     {record.StatusOK, 1, 200, 8, "usage", true, "", 1},
	"multi":     {record.StatusOK, 1, 200, 12, "usage", true, "", 3},
	"flaky":     {record.StatusOK, 2, 200, 9, "usage", true, "", 1},
	"ratelimit": {record.StatusHTTPError, 3, 429, 0, "", false, "error: http 429", 0},
	"cut":       {record.StatusStreamError, 1, 200, 2, "estimate", false, "error: stream", 1},
	"errevent":  {record.StatusStreamError, 1, 200, 2, "estimate", false, "error: stream", 1},
	"nousage":   {record.StatusOK, 1, 200, 14, "estimate", true, "", 1},
	"check":     {record.StatusOK, 1, 200, 15, "usage", false, "check regex", 1},
	"slow":      {record.StatusTimeout, 1, 200, 0, "estimate", false, "error: timeout", 0},
	"echo":      {record.StatusHTTPError, 1, 400, 0, "", false, "error: http 400", 0},
}

// CheckMix checks every record of a MixContract run against MixWants (status, attempts,
// HTTP status, token counts and their source, acceptance and reason, chunking, and that no
// text was kept) and that every task type was drawn. It returns the accepted and failed
// counts for the caller's denominator checks.
func CheckMix(t testing.TB, recs []record.Record) (accepted, failed int) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range recs {
		w, ok := MixWants[r.Task]
		if !ok {
			t.Fatalf("unknown task %q", r.Task)
		}
		seen[r.Task]++
		got := MixWant{r.Status, r.Attempts, r.HTTPStatus, r.OutputTokens, r.TokenSource, r.Accepted, strings.Join(r.Reasons, ","), w.Chunk}
		if got != w {
			t.Errorf("seq %d %s: got %+v\nwant %+v (error %q)", r.Seq, r.Task, got, w, r.Error)
		}
		for _, k := range r.ChunkTokens {
			if w.Chunk != 0 && k != w.Chunk {
				t.Errorf("seq %d %s: chunk tokens %v", r.Seq, r.Task, r.ChunkTokens)
				break
			}
		}
		if r.Accepted {
			accepted++
		}
		if r.Failed() {
			failed++
		}
		if r.PromptHash == "" || r.Prompt != "" || r.Output != "" || r.ScheduledAt.IsZero() || r.DoneAt.IsZero() || r.ID == "" {
			t.Errorf("seq %d: privacy/timing fields %+v", r.Seq, r)
		}
	}
	if len(seen) != len(MixWants) {
		t.Errorf("task types seen %v: the seed should draw every type", seen)
	}
	return accepted, failed
}
