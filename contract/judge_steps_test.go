package contract

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

const stepsJudgeContract = `
name: js
version: 1
arrival: {process: poisson, rate: 1}
requests: 1
tasks:
  - name: chat
    checks: [{contains: "ok"}]
    steps:
      - chat: {prompt_tokens: 10, repeat: 3}
  - name: agent
    steps:
      - tools: {prompt_tokens: 10, max_calls: 4}
    slo: {max_steps: 2}
slo:
  ttft: {max: 1s}
  e2e: {max: 5s}
`

// TestJudgeSteps: a call is judged on its own bounds (TTFT from its own due time, no e2e),
// the task on all of its calls plus its own e2e and step count; reasons name the call.
func TestJudgeSteps(t *testing.T) {
	c := mustParse(t, stepsJudgeContract)
	step := func(task string, i int, ttft time.Duration, status string) *record.Record {
		r := rec(task, ttft, 10*time.Millisecond, 5)
		r.Status = status
		r.Step = &record.StepRef{Index: i, Kind: record.StepChat}
		return r
	}
	for _, tc := range []struct {
		name       string
		task       string
		ttfts      []time.Duration
		failAt     int // -1: none
		outputs    []string
		e2e        time.Duration
		unfinished string
		want       []string
	}{
		{"all good", "chat", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, -1, []string{"ok", "ok", "ok"}, 4 * time.Second, "", nil},
		{"a later turn slow", "chat", []time.Duration{100 * time.Millisecond, 2 * time.Second, 300 * time.Millisecond}, -1, []string{"ok", "ok", "ok"}, 4 * time.Second, "",
			[]string{"slo ttft max 1s (step 2)"}},
		{"check fails on one answer", "chat", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, -1, []string{"ok", "no", "ok"}, time.Second, "",
			[]string{"check contains (step 2)"}},
		{"whole task too long", "chat", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, -1, []string{"ok", "ok", "ok"}, 6 * time.Second, "",
			[]string{"slo e2e max 5s"}},
		{"a call failed", "chat", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, 1, []string{"ok", ""}, time.Second, "",
			[]string{"error: http 500"}},
		{"agent over its steps", "agent", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, -1, []string{"", "", "x"}, time.Second, "",
			[]string{"slo steps max 2"}},
		{"agent never answered", "agent", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, -1, []string{"", ""}, time.Second, "tools: no answer after 2 calls",
			[]string{"tools: no answer after 2 calls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []*record.Record
			for i, d := range tc.ttfts {
				st := step(tc.task, i, d, record.StatusOK)
				if i == tc.failAt {
					st.Status, st.HTTPStatus = record.StatusHTTPError, 500
				}
				c.JudgeStep(st, tc.outputs[i], tc.task == "chat")
				steps = append(steps, st)
			}
			t0 := steps[0].ScheduledAt
			task := &record.Record{Task: tc.task, Status: record.StatusOK, ScheduledAt: t0, DoneAt: t0.Add(tc.e2e), Steps: len(steps)}
			if tc.failAt >= 0 {
				task.Status, task.HTTPStatus = record.StatusHTTPError, 500
			}
			c.JudgeTask(task, steps, tc.unfinished)
			if task.Accepted != (len(tc.want) == 0) || !slices.Equal(task.Reasons, tc.want) {
				t.Errorf("accepted %v reasons %q, want %q", task.Accepted, task.Reasons, tc.want)
			}
		})
	}
}

// TestStepsKeepOldHashes: a contract without steps hashes as before (the new fields are
// omitted when unset), and repeat: 1 is the default spelled out.
func TestStepsKeepOldHashes(t *testing.T) {
	plain := mustParse(t, "name: a\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\ntasks: [{name: t, prompt_tokens: 5}]\n")
	for _, k := range []string{`"steps"`, `"max_steps"`} {
		if strings.Contains(string(plain.Canonical()), k) {
			t.Errorf("canonical form of a plain contract mentions %s", k)
		}
	}
	a := mustParse(t, "name: a\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\ntasks: [{name: t, steps: [{chat: {prompt_tokens: 5}}]}]\n")
	b := mustParse(t, "name: a\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 1\ntasks: [{name: t, steps: [{chat: {prompt_tokens: 5, repeat: 1}}]}]\n")
	if a.SHA256() != b.SHA256() {
		t.Error("repeat: 1 changed the hash")
	}
}
