package compare

import (
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// A caller that reads a run's records itself (a sweep point, as the runner streams it; an
// interleaved canary run, split into its two sides) streams them into a Run with Add: the
// run then holds the bounded summary a comparison reads, never the records.

// NewRun is an empty run of dir under contract c with evidence ev (nil: none) and no
// engine facts, for its caller to stream records into (Add).
func NewRun(dir string, c *contract.Contract, ev *evidence.Evidence) *Run {
	return &Run{Dir: dir, Contract: c, Evidence: ev, sum: newSummary(c)}
}

// OpenHead opens a run directory as Open does and reads its contract, evidence.json and
// engine facts, but none of its records: its caller streams them (rundir.Dir.Each) into
// parts of the run (Part, Add).
func OpenHead(dir string) (*Run, *rundir.Dir, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, nil, err
	}
	r := NewRun(d.Path, d.Contract, d.Evidence)
	if r.engine, err = engineFactsIn(d, rundir.MetricsFile); err != nil {
		return nil, nil, badInput("%v", err)
	}
	return r, d, nil
}

// Add folds one task record into the run's summary. A run that holds its records (Load)
// takes none this way.
func (r *Run) Add(rec *record.Record) error {
	if r.sum == nil || r.Records != nil {
		return badInput("%s: records are added to a run made by NewRun, OpenHead or Part", r.Dir)
	}
	if err := r.sum.add(rec); err != nil {
		return badInput("%s: %v", r.Dir, err)
	}
	return nil
}

// Phases lists the run's phases in the order their first task was read.
func (r *Run) Phases() ([]string, error) {
	s, err := r.summary()
	if err != nil {
		return nil, err
	}
	return append([]string(nil), s.order...), nil
}

// PhaseSpan is the number of tasks of the run's phase and its window, first scheduled to
// last done (the window the phase's goodput is computed over); n is 0 for a phase the run
// does not have.
func (r *Run) PhaseSpan(phase string) (n int, start, end time.Time, err error) {
	s, err := r.summary()
	if err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	ps := s.phases[phase]
	if ps == nil {
		return 0, time.Time{}, time.Time{}, nil
	}
	return ps.all.n, ps.all.start, ps.all.end, nil
}
