package loadgen

import (
	"fmt"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// The run-wide bounds of a driver: how many retries the whole run may send (RetryPolicy's
// Budget), and how long one multi-step task may live (DriverConfig.TaskBound). Both make a
// run end by its own bounds whatever the server answers: per-task limits alone let a server
// that fails everything multiply the load by MaxAttempts, and a task whose pauses outlast
// its e2e bound would hold the run open for nothing.

// spendRetry takes one retry from the run's budget, reporting whether there was one left.
// Budget(sent) is the retries allowed once sent tasks have started; nil: no run-wide budget.
func (d *Driver) spendRetry() bool {
	b := d.cfg.Retry.Budget
	if b == nil {
		return true
	}
	for {
		used := d.retries.Load()
		if used >= b(d.sent.Load()) {
			return false
		}
		if d.retries.CompareAndSwap(used, used+1) {
			return true
		}
	}
}

// retryRefused notes on rec that the policy would have retried it but the run's retry
// budget is spent: in its message for a reader, and as a flag the diagnosis counts.
func retryRefused(rec *record.Record) {
	rec.Error += "; not retried: the run's retry budget is spent"
	rec.AddFlag(record.FlagRetryDenied)
}

// pastBound reports whether a multi-step task's next call, due at due, would start after
// the task's own bound (DriverConfig.TaskBound from its arrival), and then records why the
// task ends there.
func (r *stepRun) pastBound(due time.Time) bool {
	if r.d.cfg.TaskBound == nil {
		return false
	}
	b := r.d.cfg.TaskBound(r.task.Task)
	if b <= 0 || !due.After(r.task.ScheduledAt.Add(b)) {
		return false
	}
	r.late = fmt.Sprintf("the task's bound (%s from its arrival) passed before its call %d was due", b, len(r.steps)+1)
	return true
}

// appendCarried appends m to the task's conversation, accounting what it adds: the whole
// conversation is bounded by MaxCarriedBytes, and it is held three times (the
// conversation, the next call's body that encodes it, and the transport's copy of that body
// for a resend) against the budget for memory held (held.go). It returns why the task
// cannot go on ("" when it can); the message is not appended then.
func (r *stepRun) appendCarried(m workload.Message) string {
	n := int64(len(m.Content))
	for _, tc := range m.ToolCalls {
		n += int64(len(tc.ID) + len(tc.Type) + len(tc.Function.Name) + len(tc.Function.Arguments))
	}
	if r.convBytes+n > MaxCarriedBytes {
		return fmt.Sprintf("the conversation carried to call %d would be %d KiB, over pel's bound of %d MiB (MaxCarriedBytes)", len(r.steps)+1, (r.convBytes+n)>>10, MaxCarriedBytes>>20)
	}
	if !r.held.grow(3 * n) {
		return fmt.Sprintf("call %d not sent: %v", len(r.steps)+1, errHeld)
	}
	r.convBytes += n
	r.conv = append(r.conv, m)
	return ""
}
