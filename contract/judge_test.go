package contract

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

const judgeContract = `
name: j
version: 1
arrival: {process: poisson, rate: 1}
requests: 1
tasks:
  - name: plain
    prompt_tokens: 5
    checks:
      - {regex: '^\S'}
      - {contains: "ok"}
      - {min_output_tokens: 2}
      - {max_output_tokens: 10, name: short}
  - name: js
    prompt_tokens: 5
    checks:
      - json: true
      - json_schema:
          type: object
          required: [answer]
          properties:
            answer: {type: string, enum: [yes, no]}
            score: {type: number, minimum: 0, maximum: 1}
    slo: {e2e: {max: 10s}}
slo:
  ttft: {p99: 100ms, max: 1s}
  itl: {max: 50ms}
  tpot: {max: 40ms}
  e2e: {max: 3s}
`

// rec builds an OK record: first token after ttft, then n-1 more tokens every itl.
func rec(task string, ttft, itl time.Duration, n int) *record.Record {
	t0 := time.Unix(1000, 0)
	r := &record.Record{Task: task, Status: record.StatusOK, ScheduledAt: t0, SentAt: t0, OutputTokens: n}
	for i := 0; i < n; i++ {
		at := ttft + time.Duration(i)*itl
		r.ChunkUS = append(r.ChunkUS, at.Microseconds())
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.FirstTokenAt = t0.Add(ttft)
	r.LastTokenAt = t0.Add(ttft + time.Duration(n-1)*itl)
	r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
	return r
}

func TestJudge(t *testing.T) {
	c := mustParse(t, judgeContract)
	fast := func(task string, n int) *record.Record {
		return rec(task, 200*time.Millisecond, 20*time.Millisecond, n)
	}
	cases := []struct {
		name   string
		rec    *record.Record
		output string
		want   []string
	}{
		{"accepted", fast("plain", 5), "ok fine", nil},
		{"http error only reason", func() *record.Record {
			r := fast("plain", 5)
			r.Status, r.HTTPStatus = record.StatusHTTPError, 500
			return r
		}(), "", []string{"error: http 500"}},
		{"timeout", func() *record.Record { r := fast("plain", 5); r.Status = record.StatusTimeout; return r }(), "", []string{"error: timeout"}},
		{"stream", func() *record.Record { r := fast("plain", 5); r.Status = record.StatusStreamError; return r }(), "ok", []string{"error: stream"}},
		{"conn", func() *record.Record { r := fast("plain", 5); r.Status = record.StatusConnError; return r }(), "", []string{"error: conn"}},
		{"cancelled", func() *record.Record { r := fast("plain", 5); r.Status = record.StatusCancelled; return r }(), "", []string{"cancelled"}},
		{"checks", fast("plain", 1), " no", []string{"check regex", "check contains", "check min_output_tokens"}},
		{"named check", fast("plain", 11), "ok", []string{"check short"}},
		{"unknown task", fast("nope", 5), "ok", []string{"unknown task"}},
		{"slo ttft", rec("plain", 1500*time.Millisecond, 20*time.Millisecond, 5), "ok", []string{"slo ttft max 1s"}},
		{"slo tpot and itl", rec("plain", 100*time.Millisecond, 60*time.Millisecond, 5), "ok", []string{"slo itl max 50ms", "slo tpot max 40ms"}},
		{"slo e2e", rec("plain", 900*time.Millisecond, 39*time.Millisecond, 10) /* e2e 1.25s */, "ok", nil},
		{"json ok", fast("js", 5), ` {"answer": "yes", "score": 0.5} `, nil},
		{"json broken", fast("js", 5), `{"answer": "yes"`, []string{"check json", "check json_schema"}},
		{"json schema enum", fast("js", 5), `{"answer": "maybe"}`, []string{"check json_schema"}},
		{"json schema range", fast("js", 5), `{"answer": "no", "score": 2}`, []string{"check json_schema"}},
		{"json schema required", fast("js", 5), `{"score": 0}`, []string{"check json_schema"}},
		// js overrides e2e to 10s: a 5s task passes there and fails under the global 3s.
		{"task slo override", func() *record.Record { r := fast("js", 5); r.DoneAt = r.ScheduledAt.Add(5 * time.Second); return r }(), `{"answer":"no"}`, nil},
		{"global e2e", func() *record.Record { r := fast("plain", 5); r.DoneAt = r.ScheduledAt.Add(5 * time.Second); return r }(), "ok", []string{"slo e2e max 3s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.Reasons = []string{"stale"}
			c.Judge(tc.rec, tc.output)
			if !slices.Equal(tc.rec.Reasons, tc.want) {
				t.Errorf("reasons %q, want %q", tc.rec.Reasons, tc.want)
			}
			if tc.rec.Accepted != (len(tc.want) == 0) {
				t.Errorf("accepted = %v with reasons %q", tc.rec.Accepted, tc.rec.Reasons)
			}
		})
	}
}

func TestJudgeMultiTokenChunkITL(t *testing.T) {
	// One chunk of 4 tokens 120ms after the previous: 30ms per token, under the 50ms ITL max
	// although the chunk gap is over it (ITL is per token).
	c := mustParse(t, judgeContract)
	r := rec("plain", 100*time.Millisecond, 0, 1)
	r.ChunkUS = append(r.ChunkUS, r.ChunkUS[0]+120_000)
	r.ChunkTokens = append(r.ChunkTokens, 4)
	r.OutputTokens = 5
	r.LastTokenAt = r.FirstTokenAt.Add(120 * time.Millisecond)
	r.DoneAt = r.LastTokenAt
	c.Judge(r, "ok")
	if !r.Accepted {
		t.Errorf("rejected: %q", r.Reasons)
	}
}

func TestRetry(t *testing.T) {
	r := Retry{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, On: []string{"429", "5xx", "timeout"}}
	cases := []struct {
		status string
		code   int
		want   bool
	}{
		{record.StatusHTTPError, 429, true},
		{record.StatusHTTPError, 503, true},
		{record.StatusHTTPError, 400, false},
		{record.StatusTimeout, 0, true},
		{record.StatusStreamError, 200, false},
		{record.StatusConnError, 0, false},
		{record.StatusOK, 200, false},
		{record.StatusCancelled, 0, false},
	}
	for _, tc := range cases {
		if got := r.ShouldRetry(tc.status, tc.code); got != tc.want {
			t.Errorf("ShouldRetry(%s, %d) = %v", tc.status, tc.code, got)
		}
	}
	if (Retry{MaxAttempts: 2, On: []string{"503"}}).ShouldRetry(record.StatusHTTPError, 502) {
		t.Error("a listed code must not match another 5xx")
	}
	if !(Retry{MaxAttempts: 2, On: []string{"4xx", "stream", "conn"}}).ShouldRetry(record.StatusHTTPError, 404) {
		t.Error("4xx class")
	}
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for attempt, w := range want {
		if got := r.Backoff(attempt); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", attempt, got, w)
		}
	}
	if got := r.Backoff(1000); got != time.Second {
		t.Errorf("Backoff(1000) = %s (overflow?)", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		if j := r.Jittered(3, rng); j < 200*time.Millisecond || j > 400*time.Millisecond {
			t.Fatalf("Jittered(3) = %s outside [200ms, 400ms]", j)
		}
	}
}
