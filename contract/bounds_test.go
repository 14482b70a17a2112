package contract

import (
	"strings"
	"testing"
	"time"
)

func TestTaskTimeAndRetryBounds(t *testing.T) {
	head := "name: b\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 2\ntimeout: 30s\n"
	for _, c := range []struct {
		name, body, errHas string // errHas "": the contract parses
	}{
		{"think beyond the e2e max bound", `tasks:
  - name: chat
    slo: {e2e: {max: 10s}}
    steps:
      - chat: {prompt_tokens: 8}
      - chat: {prompt_tokens: 8, think: 1000h}
`, "not less than the task's e2e max bound 10s"},
		{"repeats add up past the bound", `slo: {e2e: {max: 10s}}
tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8, think: 3s, repeat: 5}
`, "12s of think and tool time"},
		{"tool latency counts per call after the first", `slo: {e2e: {max: 10s}}
tasks:
  - name: agent
    steps:
      - tools: {prompt_tokens: 8, max_calls: 6, tool_latency: 2s}
`, "10s of think and tool time"},
		{"inside the bound", `slo: {e2e: {max: 10s}}
tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8, think: 2s, repeat: 5}
`, ""},
		{"no e2e bound: each pause within the timeout", `tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8}
      - chat: {prompt_tokens: 8, think: 31s}
`, "longer than the contract's timeout 30s"},
		{"no e2e bound, pause at the timeout", `tasks:
  - name: chat
    steps:
      - chat: {prompt_tokens: 8, think: 30s, repeat: 3}
`, ""},
		{"max_attempts 2e9", "tasks: [{name: a, prompt_tokens: 8}]\nretry: {max_attempts: 2000000000, backoff: 0s}\n", "over pel's bound of 5"},
		{"max_attempts at the bound", "tasks: [{name: a, prompt_tokens: 8}]\nretry: {max_attempts: 5, backoff: 0s}\n", ""},
		{"negative budget", "tasks: [{name: a, prompt_tokens: 8}]\nretry: {budget: -1}\n", "want 0..4 retries per task"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(head+c.body), "c.yaml")
			switch {
			case c.errHas == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
				t.Fatalf("error %v, want one with %q", err, c.errHas)
			case c.errHas != "" && !strings.Contains(err.Error(), "c.yaml:"):
				t.Fatalf("error %v names no line", err)
			}
		})
	}
}

func TestRunBudgetAndTaskBound(t *testing.T) {
	c := mustParse(t, "name: b\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 2\nslo: {e2e: {max: 7s}}\ntasks: [{name: a, prompt_tokens: 8}, {name: b, prompt_tokens: 8, slo: {e2e: {max: 3s}}}]\nretry: {max_attempts: 3}\n")
	for _, x := range []struct{ tasks, want int64 }{{0, MinRetryBudget}, {10, MinRetryBudget}, {1000, 200}} {
		if got := c.Retry.RunBudget(x.tasks); got != x.want {
			t.Errorf("RunBudget(%d) = %d, want %d", x.tasks, got, x.want)
		}
	}
	two := mustParse(t, "name: b\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 2\ntasks: [{name: a, prompt_tokens: 8}]\nretry: {budget: 2}\n")
	if got := two.Retry.RunBudget(1000); got != 2000 {
		t.Errorf("budget 2: RunBudget(1000) = %d", got)
	}
	if c.TaskBound("a") != 7*time.Second || c.TaskBound("b") != 3*time.Second {
		t.Errorf("task bounds %v %v", c.TaskBound("a"), c.TaskBound("b"))
	}
}
