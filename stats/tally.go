package stats

import (
	"fmt"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Tally is the headline of stage 1 and nothing more: each phase's window and summary
// (counts, acceptance, rejection reasons, rates, latency and schedule-lag percentiles),
// exact over every task, by the accumulator Stream uses for the same figures. It is what
// a load-only run keeps as it goes, at a few histograms per phase whatever the run's
// length: the figures per task type and per concurrency band, the per-second series, the
// shape signals, the multi-step tables and head-of-line blocking need Stream (pel analyze
// DIR reads the records again for them), and a note in its result says so.
type Tally struct {
	opt    Options
	n      int
	end    time.Time
	phases map[string]*tallyPhase
}

type tallyPhase struct {
	n      int
	win    window
	set    *setAcc
	tokens tokenSources
}

// NewTally starts a tally; opt.Start must be the run's start.
func NewTally(opt Options) *Tally {
	if opt.MinSamples <= 0 {
		opt.MinSamples = 20
	}
	return &Tally{opt: opt, phases: map[string]*tallyPhase{}}
}

// Add takes one task record. An interleaved canary's candidate tasks are not counted: they
// have evidence of their own, as in Stream.
func (t *Tally) Add(r *record.Record) {
	if r.Phase == record.PhaseCanary {
		return
	}
	p := t.phases[r.Phase]
	if p == nil {
		p = &tallyPhase{set: newSetAcc()}
		t.phases[r.Phase] = p
	}
	p.win.add(r, p.n == 0)
	p.n++
	t.n++
	if r.DoneAt.After(t.end) {
		t.end = r.DoneAt
	}
	p.set.add(r, t.opt.Objectives)
	p.tokens.add(r)
}

// N is the number of tasks added.
func (t *Tally) N() int { return t.n }

// Result is the tally as a stage-1 result: phases, the headline summary (the warm phase's,
// else every phase's), each phase's summary, the headline signals those hold, and notes.
func (t *Tally) Result() *Result {
	if t.n == 0 {
		return &Result{Start: t.opt.Start, Notes: []Note{{NoteNoRecords, "no task records: nothing was measured"}}}
	}
	names := sortedKeys(t.phases)
	ex := &exactResult{start: t.opt.Start, end: t.end}
	for _, p := range orderPhases(names) {
		ex.phases = append(ex.phases, t.phases[p].win.phase(p, ex.start))
	}
	clipPhases(ex.phases)
	head, headPhase := t.phases[record.PhaseWarm], record.PhaseWarm
	if head == nil || head.n == 0 {
		head, headPhase = &tallyPhase{set: newSetAcc()}, ""
		for _, p := range names {
			o := t.phases[p]
			head.win.merge(o.win, head.n == 0)
			head.n += o.n
			head.set.merge(o.set)
			head.tokens.merge(o.tokens)
		}
		ex.notes = append(ex.notes, Note{NoteNoWarm, "no warm-phase tasks: the headline summary covers all tasks"})
	}
	hw := head.win
	ex.headPhase = headPhase
	ex.win = &evidence.Window{StartS: secs(hw.start.Sub(ex.start)), EndS: secs(hw.end.Sub(ex.start))}
	w := &ex.workload
	w.Summary = head.set.summary(hw.dur(), t.opt.CostPerHourUSD)
	w.TokenSource = head.tokens.source()
	ex.notes = append(ex.notes, head.tokens.notes()...)
	w.ByPhase = map[string]evidence.Summary{}
	for _, p := range names {
		w.ByPhase[p] = t.phases[p].set.summary(t.phases[p].win.dur(), t.opt.CostPerHourUSD)
	}
	ex.setSignals(head.set, hw, t.opt, nil)
	if lag := head.set.lag; lag.N() > 0 {
		ex.add(evidence.SigScheduleLagP99, lag.QuantileMs(99), "ms", nil, fewNote(t.opt.MinSamples)(lag.N()))
	}
	ex.notes = append(ex.notes, headlineCountNotes(head.n, w.Summary, t.opt.MinSamples)...)
	ex.notes = append(ex.notes, Note{NoteHeadlineOnly, fmt.Sprintf("load only: stage 1 here is each phase's counts, acceptance, rates and latency percentiles over all %d tasks; "+
		"the figures per task type, per concurrency band and per second, the shape signals and the multi-step tables are computed by pel analyze DIR", t.n)})
	return &Result{Start: ex.start, End: ex.end, Phases: ex.phases, Workload: ex.workload, Signals: ex.signals, Notes: ex.notes}
}
