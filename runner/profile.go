package runner

import (
	"context"
	"net/http"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/profiling"
	"github.com/pel-ladder/pel/record"
)

// profileControl checks a contract's profiling window against the run and builds its
// control; nil without a window.
func profileControl(cfg Config, apiKey string, hc *http.Client) (profiling.Control, error) {
	p := cfg.Contract.Profile
	if !p.Set {
		return nil, nil
	}
	if err := p.Check(); err != nil {
		return nil, badInput("contract %s: %v", cfg.Contract.File(), err)
	}
	if cfg.Canary != nil {
		return nil, badInput("a profiling window (--profile-at) and an interleaved canary (--canary) cannot share a run: the profiler's overhead would fall on one side's tasks")
	}
	if cfg.Shard.Count > 1 {
		return nil, badInput("a profiling window (--profile-at) in a sharded run would start the profiler once per shard: run it in a run of one process")
	}
	if d := cfg.Contract.Duration; d > 0 && p.At >= d {
		return nil, badInput("profile.at %s is not before the schedule's end (duration %s): the window would never open", p.At, d)
	}
	return profiling.NewControl(p, loadgen.BaseURL(cfg.Target), apiKey, hc)
}

// profileRun is a run's profiling window; a nil one does nothing.
type profileRun struct {
	sess *profiling.Session
	ev   *evidence.Profile
	ov   *profiling.Overhead
}

func beginProfile(ctx context.Context, c *contract.Contract, ctl profiling.Control) *profileRun {
	if ctl == nil {
		return nil
	}
	return &profileRun{sess: profiling.Begin(ctx, c.Profile, ctl, time.Now())}
}

func (p *profileRun) sink(s func(*record.Record) error) func(*record.Record) error {
	if p == nil {
		return s
	}
	return p.sess.Window().Sink(s)
}

// end closes the window once the load is over and finds the trace.
func (p *profileRun) end(ctx context.Context, started time.Time) {
	if p == nil {
		return
	}
	p.ev = p.sess.End(ctx, started)
	// Marked tasks stay out of both sides but for their values in the span where the
	// profiler surely ran.
	if on, off := p.sess.Window().Sure(); !on.IsZero() {
		p.ov = profiling.NewOverhead(on, off)
	}
}

func (p *profileRun) observe(r *record.Record) {
	if p == nil || p.ov == nil {
		return
	}
	p.ov.Add(r)
}

// fill puts the window and its overhead into the evidence and returns the run notes.
func (p *profileRun) fill(ev *evidence.Evidence) []string {
	if p == nil {
		return nil
	}
	if p.ov != nil {
		p.ev.Overhead = p.ov.Rows()
	}
	ev.Run.Profile = p.ev
	return profiling.Notes(p.ev)
}
