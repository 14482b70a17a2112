package profiling

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// interruptStop bounds the stop call made after Ctrl-C: the run is ending, and a second
// Ctrl-C stops pel at once anyway.
const interruptStop = 10 * time.Second

// Window is the span during which the profiler may have been active: from when the start
// call was sent to when the stop call answered. It is safe for concurrent use.
type Window struct {
	mu          sync.Mutex
	start, end  time.Time // zero: not (yet) started / not (yet) known to be stopped
	includeWarm bool
	marked      int
	// on, off: the span during which the profiler was surely running, from the start
	// call's answer to the sending of the stop call (zero: no such span).
	on, off time.Time
}

// open records that the start call is being sent now.
func (w *Window) open(at time.Time) {
	w.mu.Lock()
	w.start = at
	w.mu.Unlock()
}

// close records that the profiler is known stopped (or that the window is given up) at at.
func (w *Window) close(at time.Time) {
	w.mu.Lock()
	if !w.start.IsZero() && w.end.IsZero() {
		w.end = at
	}
	w.mu.Unlock()
}

// void forgets a window whose start was refused: no profiler ran, nothing more is marked.
func (w *Window) void() {
	w.mu.Lock()
	w.start, w.end = time.Time{}, time.Time{}
	w.mu.Unlock()
}

// Sure returns the span during which the profiler was surely running: from the start
// call's answer to the moment the stop call was sent (zero when it never surely ran).
func (w *Window) Sure() (on, off time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.on, w.off
}

// Span returns the window's bounds (zero when not started; end zero while open).
func (w *Window) Span() (start, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.start, w.end
}

// Overlaps reports whether the task was in flight at some instant of the window, as far as
// the window is known when the record is written (a record is written after its task
// ended, so an unstarted window cannot later reach back to it, and an open one still holds
// every task written now).
func (w *Window) Overlaps(r *record.Record) bool {
	w.mu.Lock()
	start, end := w.start, w.end
	w.mu.Unlock()
	return overlaps(r, start, end)
}

func overlaps(r *record.Record, start, end time.Time) bool {
	if start.IsZero() {
		return false
	}
	from := r.FirstSentAt
	if from.IsZero() {
		from = r.SentAt
	}
	if from.IsZero() {
		from = r.ScheduledAt
	}
	to := r.DoneAt
	if to.IsZero() {
		to = time.Now()
	}
	if !to.After(start) {
		return false
	}
	return end.IsZero() || from.Before(end)
}

// Mark marks a record that overlapped the window (Profiled) and, unless the window keeps
// them in the warm figures, moves a warm one into the phase "profiled". A step of a
// multi-step task is marked but keeps its phase: the task record carries the task's.
func (w *Window) Mark(r *record.Record) {
	if !w.Overlaps(r) {
		return
	}
	r.Profiled = true
	if r.Phase == record.PhaseWarm && !w.includeWarm && r.Step == nil {
		r.Phase = record.PhaseProfiled
	}
	if r.Step == nil {
		w.mu.Lock()
		w.marked++
		w.mu.Unlock()
	}
}

// Sink wraps a record sink with Mark.
func (w *Window) Sink(sink func(*record.Record) error) func(*record.Record) error {
	return func(r *record.Record) error {
		w.Mark(r)
		return sink(r)
	}
}

// Session is one profiling window being run.
type Session struct {
	spec   contract.Profile
	ctl    Control
	win    *Window
	base   time.Time
	cancel context.CancelFunc
	done   chan struct{}
	// fin, set once the session's goroutine returns and read after done.
	started, stopped bool
	errs             []string
	notes            []string
	// now is the clock (tests).
	now func() time.Time
}

// Begin starts the window's clock: the start call AT after base (the load's start), the
// stop call FOR later. ctx is the run's: when it is cancelled (Ctrl-C) the window ends and
// a started profiler is stopped.
func Begin(ctx context.Context, spec contract.Profile, ctl Control, base time.Time) *Session {
	s := &Session{spec: spec, ctl: ctl, win: &Window{includeWarm: spec.IncludeInWarm}, base: base, done: make(chan struct{}), now: time.Now}
	var wctx context.Context
	wctx, s.cancel = context.WithCancel(ctx)
	go s.run(wctx, ctx)
	return s
}

// Window is the session's window (its Sink marks records).
func (s *Session) Window() *Window { return s.win }

func (s *Session) run(ctx, runCtx context.Context) {
	defer close(s.done)
	if !sleepUntil(ctx, s.base.Add(s.spec.At)) {
		if runCtx.Err() != nil {
			s.notes = append(s.notes, "the run was interrupted before the profiling window: the profiler was never started")
		} else {
			s.notes = append(s.notes, "the load ended before the profiling window: the profiler was never started")
		}
		return
	}
	s.win.open(s.now())
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	err := s.ctl.Start(sctx)
	cancel()
	if err != nil {
		s.errs = append(s.errs, "profiler start failed: "+err.Error()+"; the run went on without profiling")
		var no refused
		if errors.As(err, &no) {
			s.win.void()
			return
		}
		// Without a definite answer (a timeout) the engine may have armed its profiler
		// all the same: the window stays open, and a stop is tried at its end.
		s.errs[len(s.errs)-1] = "profiler start failed: " + err.Error() + "; it may have started all the same: the window is kept and a stop is sent"
	} else {
		s.started = true
		s.win.mu.Lock()
		s.win.on = s.now()
		s.win.mu.Unlock()
	}
	interrupted := !sleepUntil(ctx, s.base.Add(s.spec.At+s.spec.For))
	if interrupted {
		if runCtx.Err() != nil {
			s.notes = append(s.notes, "the run was interrupted inside the profiling window: the profiler was stopped early")
		} else {
			s.notes = append(s.notes, "the load ended inside the profiling window: the profiler was stopped early")
		}
	}
	bound := StopTimeout
	if runCtx.Err() != nil {
		bound = interruptStop
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	if s.started {
		s.win.mu.Lock()
		s.win.off = s.now()
		s.win.mu.Unlock()
	}
	err = s.ctl.Stop(stopCtx)
	cancel()
	if err != nil {
		var no refused
		if !s.started && errors.As(err, &no) {
			s.win.close(s.now()) // a start without an answer, a stop refused: nothing ran on
			return
		}
		s.errs = append(s.errs, "profiler stop failed: "+err.Error()+"; the profiler may still be running: every task after the window is marked")
		return
	}
	s.stopped = true
	s.win.close(s.now())
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// End ends the window when the load is over (a stop still pending is waited for, within
// its bound), finds the trace and returns the window as evidence, times relative to
// startedAt (the run's start). ctx bounds the wait for the trace file.
func (s *Session) End(ctx context.Context, startedAt time.Time) *evidence.Profile {
	s.cancel()
	<-s.done
	p := &evidence.Profile{
		Control: s.spec.Control, AtS: s.spec.At.Seconds(), ForS: s.spec.For.Seconds(),
		Started: s.started, Stopped: s.stopped, Errors: s.errs, InWarm: s.spec.IncludeInWarm,
		Notes: s.notes,
	}
	start, end := s.win.Span()
	if !start.IsZero() {
		if end.IsZero() {
			end = s.now()
			s.win.close(end)
		}
		p.StartS, p.EndS = start.Sub(startedAt).Seconds(), end.Sub(startedAt).Seconds()
	}
	if on, off := s.win.Sure(); !on.IsZero() {
		p.OnS, p.OffS = on.Sub(startedAt).Seconds(), off.Sub(startedAt).Seconds()
	}
	s.win.mu.Lock()
	p.Marked = s.win.marked
	s.win.mu.Unlock()
	if s.spec.Trace != "" && s.started {
		p.Trace, p.TraceNote = FindTrace(ctx, s.spec.Trace, start, TraceWait)
	} else if s.spec.Trace != "" {
		p.TraceNote = "no trace read: the profiler did not start"
	}
	return p
}

// Notes are the run notes a profile's outcome calls for (failures first).
func Notes(p *evidence.Profile) []string {
	if p == nil {
		return nil
	}
	var out []string
	out = append(out, p.Errors...)
	out = append(out, p.Notes...)
	if p.Started {
		out = append(out, fmt.Sprintf("profiling window %.1f–%.1f s (%s): %d tasks overlapped it and are marked profiled%s; their latency is profiling overhead, not the system's natural state",
			p.StartS, p.EndS, p.Control, p.Marked, map[bool]string{true: " (kept in the warm figures, --profile-in-warm)", false: " (phase profiled, out of the warm figures)"}[p.InWarm]))
	}
	if p.TraceNote != "" {
		out = append(out, p.TraceNote)
	}
	return out
}
