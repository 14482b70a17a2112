package loadgen

import (
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// A process that must exit at once (a second Ctrl-C) cannot wait for its tasks in flight to
// end, yet every task it sent must keep a record: the run's denominators count them, and a
// directory that lost them reads as a cleaner run than the one that happened. The driver
// therefore knows every task it has started and not yet recorded, and Abandon records them
// all as cancelled with the times they reached.

// pendingTask is a started, unrecorded task: what Abandon writes for it. Only fields the
// task's own goroutine never writes after track are copied, so Abandon reads no field that
// goroutine is still filling.
type pendingTask struct {
	rec    record.Record
	req    *workload.Request
	sentAt time.Time // when its first attempt started (zero: still waiting for a slot)
}

// track registers a task as started and not yet recorded.
func (d *Driver) track(rec *record.Record, req *workload.Request) {
	d.pendMu.Lock()
	defer d.pendMu.Unlock()
	if d.pend == nil {
		d.pend = map[*record.Record]*pendingTask{}
	}
	d.pend[rec] = &pendingTask{
		rec: record.Record{Seq: rec.Seq, ID: rec.ID, TraceID: rec.TraceID, Task: rec.Task, Phase: rec.Phase, ScheduledAt: rec.ScheduledAt},
		req: req,
	}
}

// sending notes that a tracked task's first attempt starts now.
func (d *Driver) sending(rec *record.Record, at time.Time) {
	d.pendMu.Lock()
	defer d.pendMu.Unlock()
	if p := d.pend[rec]; p != nil && p.sentAt.IsZero() {
		p.sentAt = at
	}
}

// claim removes a finished task from the pending set; false when Abandon has already
// recorded it (its own record is then dropped: every task has exactly one).
func (d *Driver) claim(rec *record.Record) bool {
	d.pendMu.Lock()
	defer d.pendMu.Unlock()
	if d.abandoned {
		return false
	}
	delete(d.pend, rec)
	return true
}

func (d *Driver) isAbandoned() bool {
	d.pendMu.Lock()
	defer d.pendMu.Unlock()
	return d.abandoned
}

// Abandon records every task started and not yet recorded as cancelled now (scheduled and
// first-sent times kept) and drops whatever those tasks finish afterwards. It returns how
// many it recorded. It is for a process about to exit without waiting for its tasks; the
// driver records nothing after it.
func (d *Driver) Abandon() int {
	d.pendMu.Lock()
	if d.abandoned {
		d.pendMu.Unlock()
		return 0
	}
	d.abandoned = true
	pend := d.pend
	d.pend = nil
	d.pendMu.Unlock()
	now := d.cfg.Clock.Now()
	n := 0
	for _, p := range pend {
		r := p.rec
		r.Status = record.StatusCancelled
		r.Error = "pel stopped at once (a second Ctrl-C or SIGTERM) before the task ended"
		r.FirstSentAt, r.SentAt = p.sentAt, p.sentAt
		r.DoneAt = now
		r.Reasons = append(r.Reasons, "error: "+r.Status)
		r.PromptChars = utf8.RuneCountInString(PromptText(p.req))
		d.done.Add(1)
		d.sink(&r)
		n++
	}
	return n
}
