package rundir

import (
	"fmt"
	"sync"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// Online is stage 1's headline computed while a run's records are written, for a run
// whose analysis is left for later (pel run --no-analysis): a stats.Tally given each
// record as it reaches requests.jsonl, instead of decoding the file again at the end.
// Records pass through the same task-name bound and step joiner as a read of the file, in
// the order they are written (Sink). The rest of stage 1 (per task type, per band, per second,
// the shape signals) is pel analyze DIR's, which reads the file whole; the tally's note in
// evidence.json says so.
type Online struct {
	mu      sync.Mutex
	d       *Dir
	tally   *stats.Tally
	names   *taskNames
	steps   *record.Joiner
	observe func(*record.Record)
}

// Online starts the headline of stage 1 for records about to be written: start is the
// run's start, and observe (when set) sees every task record, steps attached.
func (d *Dir) Online(start time.Time, observe func(*record.Record)) *Online {
	return &Online{
		d: d, tally: stats.NewTally(StatsOptions(d.Contract, start)),
		names: d.taskNames(), steps: record.NewJoiner(), observe: observe,
	}
}

// Sink returns write followed by the record's part in the headline, both under one lock,
// so that records are counted in the order they are written: a task's steps before it,
// and names folded as a read of the file folds them. The caller's record is not changed
// (nor kept).
func (on *Online) Sink(write func(*record.Record) error) func(*record.Record) error {
	return func(r *record.Record) error {
		on.mu.Lock()
		defer on.mu.Unlock()
		if err := write(r); err != nil {
			return err
		}
		on.add(r)
		return nil
	}
}

func (on *Online) add(r *record.Record) {
	t := r
	if r.Step != nil || r.Steps > 0 || !on.names.kept[r.Task] {
		// Folding a name or joining steps changes the record: that is done to a copy.
		c := *r
		on.names.fold(&c)
		if t = on.steps.Add(&c); t == nil {
			return
		}
	}
	on.tally.Add(t)
	if on.observe != nil {
		on.observe(t)
	}
}

// Stage1 writes the headline of every record added so far into ev, with the contract
// reference, as Stage1 writes the whole of stage 1. It fails when the step joiner gave up
// (steps whose task record never came, over its bound).
func (on *Online) Stage1(ev *evidence.Evidence) error {
	on.mu.Lock()
	defer on.mu.Unlock()
	if err := on.steps.Err(); err != nil {
		return bad(fmt.Errorf("%s: %w", on.d.File(RequestsFile), err))
	}
	on.d.Orphans, on.d.FoldedTasks = on.steps.Orphans(), on.names.folded
	on.d.noteFolded(ev)
	ApplyStage1(ev, on.d.Contract, on.tally.Result())
	return nil
}
