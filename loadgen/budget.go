package loadgen

import (
	"fmt"
	"time"

	"github.com/pel-ladder/pel/record"
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
// budget is spent.
func retryRefused(rec *record.Record) {
	rec.Error += "; not retried: the run's retry budget is spent"
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
