package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// TestRetryBudgetSpansTheRun: against a server that fails everything, retries stop when the
// run's budget is spent, whatever each task's own maximum, and the records say why.
func TestRetryBudgetSpansTheRun(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 10, 20, 30, 40, 50)
	doer := &fakeDoer{clk: clk, def: attempt{dur: ms(1), code: 503}}
	cfg := DriverConfig{Retry: RetryPolicy{
		MaxAttempts: 5,
		ShouldRetry: func(st string, code int) bool { return code >= 500 },
		Budget:      func(sent int64) int64 { return 3 },
	}}
	h := newHarness(t, cfg, doer)
	h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	if len(h.recs) != 6 {
		t.Fatalf("%d records, want 6", len(h.recs))
	}
	attempts, refused := 0, 0
	for _, r := range h.recs {
		attempts += r.Attempts
		if strings.Contains(r.Error, "retry budget is spent") != r.HasFlag(record.FlagRetryDenied) {
			t.Errorf("record %s: message %q and flags %v disagree", r.ID, r.Error, r.Flags)
		}
		if r.HasFlag(record.FlagRetryDenied) {
			refused++
		}
	}
	// 6 first attempts and the budget's 3 retries; every task past the budget says so.
	if attempts != 9 || refused < 3 {
		t.Errorf("%d attempts (want 9), %d records naming the budget", attempts, refused)
	}
}

// TestStepTaskEndsAtItsBound: a multi-step task whose next call would be due after its
// bound is not sent and ends unfinished, naming the bound; the calls before it are kept.
func TestStepTaskEndsAtItsBound(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	doer := &fakeStepDoer{fakeDoer: fakeDoer{clk: clk}, dur: ms(100), toolRounds: 2, failAt: -1}
	h := newHarness(t, DriverConfig{TaskBound: func(string) time.Duration { return ms(200) }}, &doer.fakeDoer)
	h.d.cfg.Doer = doer
	sched := stepsSchedule()
	h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	// Calls due at 0 and 150 ms run; the tools call due at 250 ms is past the 200 ms bound.
	if len(h.recs) != 3 {
		t.Fatalf("%d records, want 2 calls + the task", len(h.recs))
	}
	task := h.recs[2]
	if task.Step != nil || task.Accepted || task.Steps != 2 || !strings.Contains(strings.Join(task.Reasons, ";"), "bound (200ms from its arrival) passed before its call 3") {
		t.Errorf("task: steps %d accepted %v reasons %v", task.Steps, task.Accepted, task.Reasons)
	}
	if task.Status != record.StatusOK {
		t.Errorf("task status %s, want ok (no call failed)", task.Status)
	}
}
