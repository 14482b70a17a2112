package hostile

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// Runs that would never end: a chat step with think: 1000h under e2e: {max: 10s} holds a
// run open for nothing, and retry.max_attempts: 2000000000 with backoff: 0s turns a
// 2-request contract into hundreds of thousands of requests. contract check and run refuse
// both (exit 2, file:line) and send nothing.
func TestContractThatCouldNotEnd(t *testing.T) {
	for _, c := range []struct{ name, body, errHas string }{
		{"think 1000h under e2e max 10s", `name: h
version: 1
arrival: {process: constant, rate: 1}
requests: 2
slo: {e2e: {max: 10s}}
tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8, output_tokens: 4}
      - chat: {prompt_tokens: 8, output_tokens: 4, think: 1000h}
`, "c.yaml:9: tasks[0].steps: the steps plan 1000h0m0s of think and tool time"},
		{"max_attempts 2e9 with backoff 0s", contractYAML(1, 2*time.Second, 5*time.Second,
			"retry: {max_attempts: 2000000000, backoff: 0s, on: [5xx]}"), "retry.max_attempts: 2000000000 attempts per task is over pel's bound of 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hits atomic.Int64
			target := api(t, func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				okStream(w, r)
			})
			dir := t.TempDir()
			cf := writeFile(t, dir, "c.yaml", c.body)
			res := pel(t, time.Minute, nil, "contract", "check", cf)
			if res.code != 2 || !strings.Contains(res.stderr+res.stdout, c.errHas) {
				t.Errorf("contract check: exit %d, want 2 naming %q; output %s", res.code, c.errHas, tail(res.stdout+res.stderr))
			}
			out := filepath.Join(dir, "run")
			res = pel(t, time.Minute, nil, "run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String())
			if res.code != 2 || !strings.Contains(res.stderr, c.errHas) {
				t.Errorf("run: exit %d, want 2 naming %q; stderr %s", res.code, c.errHas, tail(res.stderr))
			}
			if _, err := os.Stat(out); err == nil || hits.Load() != 0 {
				t.Errorf("a refused contract created %s (%v) or sent %d requests", out, err, hits.Load())
			}
		})
	}
}

// A server that answers every request 503, under the largest retry policy pel accepts
// (5 attempts, no backoff): tasks retry until the run's retry budget (20% of tasks, at least
// 10 retries) is spent, then no more; every task keeps its record.
func TestRetryStormBounded(t *testing.T) {
	var hits atomic.Int64
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	})
	d, to := 2*time.Second, 5*time.Second
	const rate = 50 // 100 tasks: a budget of max(20, 10) retries
	res, dir := run(t, target, contractYAML(rate, d, to, "retry: {max_attempts: 5, backoff: 0s, on: [5xx]}"), d, to)
	if res.code != 1 {
		t.Errorf("exit %d, want 1 (every request failed); stderr %s", res.code, tail(res.stderr))
	}
	recs := records(t, dir)
	tasks, attempts := len(recs), 0
	for _, r := range recs {
		attempts += r.Attempts
	}
	budget := max(tasks/5, 10)
	t.Logf("%d tasks, %d attempts, %d requests served", tasks, attempts, hits.Load())
	if tasks < 90 || attempts > tasks+budget || hits.Load() > int64(tasks+budget) {
		t.Errorf("%d tasks sent %d attempts (%d served): want every task once plus at most %d retries", tasks, attempts, hits.Load(), budget)
	}
	every(t, recs, "an http 503", func(r *record.Record) bool { return r.Status == record.StatusHTTPError && r.HTTPStatus == 503 })
}

// A task whose calls are slow ends at its e2e max bound: the server takes 2 s per answer,
// the next turn is due after 2 s + 4 s of think, past the task's 5 s bound, so it is not
// sent; the run ends by itself with the first call's record and the task's, not accepted.
func TestStepTaskEndsAtItsBound(t *testing.T) {
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
			return
		}
		okStream(w, r)
	})
	d, to := time.Second, 10*time.Second
	c := `name: hostile
version: 1
model: m
arrival: {process: constant, rate: 2}
duration: 1s
timeout: 10s
slo: {e2e: {max: 5s}}
tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8, output_tokens: 8}
      - chat: {prompt_tokens: 8, output_tokens: 8, think: 4s}
`
	res, dir := run(t, target, c, d+6*time.Second, to)
	if res.code != 0 {
		t.Errorf("exit %d; stderr %s", res.code, tail(res.stderr))
	}
	recs := records(t, dir) // the task records (record.ReadFile leaves out the calls')
	for _, r := range recs {
		if r.Accepted || r.Steps != 1 || !strings.Contains(strings.Join(r.Reasons, ";"), "passed before its call 2 was due") {
			t.Errorf("task %d: accepted %v, %d calls, reasons %v", r.Seq, r.Accepted, r.Steps, r.Reasons)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, calls := len(recs), strings.Count(string(b), `"step":{"task":`)
	if tasks != 2 || calls != 2 {
		t.Errorf("%d tasks and %d calls, want 2 and 2", tasks, calls)
	}
}
