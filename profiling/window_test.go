package profiling

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// The window marks exactly the tasks in flight at some instant of [start, end]: sent
// before its end and done after its start. A window still open holds every task that ends
// after its start; one not started holds none.
func TestWindowMarks(t *testing.T) {
	type win struct{ start, end float64 } // -1: unset
	closed := win{10, 20}
	for _, tc := range []struct {
		name       string
		w          win
		sent, done float64 // -1: no send time (cancelled before sending)
		phase      string
		step       bool
		inWarm     bool
		want       bool
		wantPhase  string
	}{
		{"wholly before", closed, 1, 9, record.PhaseWarm, false, false, false, record.PhaseWarm},
		{"ends at the start", closed, 1, 10, record.PhaseWarm, false, false, false, record.PhaseWarm},
		{"ends inside", closed, 5, 11, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"wholly inside", closed, 12, 18, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"spans the window", closed, 5, 25, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"starts inside", closed, 19, 30, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"sent at the end", closed, 20, 30, record.PhaseWarm, false, false, false, record.PhaseWarm},
		{"wholly after", closed, 21, 30, record.PhaseWarm, false, false, false, record.PhaseWarm},
		{"cold keeps its phase", closed, 5, 11, record.PhaseCold, false, false, true, record.PhaseCold},
		{"kept warm on request", closed, 5, 11, record.PhaseWarm, false, true, true, record.PhaseWarm},
		{"a step keeps its phase", closed, 5, 11, record.PhaseWarm, true, false, true, record.PhaseWarm},
		{"never sent, scheduled inside", closed, -1, 15, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"open window, ends after start", win{10, -1}, 1, 11, record.PhaseWarm, false, false, true, record.PhaseProfiled},
		{"open window, ends before start", win{10, -1}, 1, 9, record.PhaseWarm, false, false, false, record.PhaseWarm},
		{"not started", win{-1, -1}, 1, 30, record.PhaseWarm, false, false, false, record.PhaseWarm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Window{includeWarm: tc.inWarm}
			if tc.w.start >= 0 {
				w.open(at(tc.w.start))
			}
			if tc.w.end >= 0 {
				w.close(at(tc.w.end))
			}
			r := &record.Record{Phase: tc.phase, ScheduledAt: at(tc.done - 1), DoneAt: at(tc.done)}
			if tc.sent >= 0 {
				r.ScheduledAt, r.SentAt, r.FirstSentAt = at(tc.sent), at(tc.sent), at(tc.sent)
			}
			if tc.step {
				r.Step = &record.StepRef{}
			}
			w.Mark(r)
			if r.Profiled != tc.want || r.Phase != tc.wantPhase {
				t.Errorf("profiled %v phase %q, want %v %q", r.Profiled, r.Phase, tc.want, tc.wantPhase)
			}
			wantCount := 0
			if tc.want && !tc.step {
				wantCount = 1
			}
			if w.marked != wantCount {
				t.Errorf("counted %d marked tasks, want %d", w.marked, wantCount)
			}
		})
	}
}

// fakeControl records calls and fails as told.
type fakeControl struct {
	mu               sync.Mutex
	calls            []string
	startErr, stopEr error
}

func (f *fakeControl) Start(ctx context.Context) error {
	f.mu.Lock()
	f.calls = append(f.calls, "start")
	f.mu.Unlock()
	return f.startErr
}
func (f *fakeControl) Stop(ctx context.Context) error {
	f.mu.Lock()
	f.calls = append(f.calls, "stop")
	f.mu.Unlock()
	return f.stopEr
}

func spec(at, dur time.Duration) contract.Profile {
	return contract.Profile{Set: true, At: at, For: dur, Control: contract.ProfileVLLM}
}

// A session calls start then stop; a refused start leaves no window and sends no stop; a
// start without an answer keeps the window and still sends the stop; a failed stop keeps
// the window open to the end of the run. Every failure is in the evidence, none ends it.
func TestSessionOutcomes(t *testing.T) {
	refused404 := refused{errors.New("POST /start_profile: HTTP 404")}
	for _, tc := range []struct {
		name        string
		ctl         *fakeControl
		wantCalls   string
		started     bool
		stopped     bool
		open        bool // the window reaches the end of the run
		errContains string
	}{
		{"ok", &fakeControl{}, "start stop", true, true, false, ""},
		{"start refused", &fakeControl{startErr: refused404}, "start", false, false, false, "profiler start failed: POST /start_profile: HTTP 404"},
		{"start timed out", &fakeControl{startErr: context.DeadlineExceeded, stopEr: refused{errors.New("not running")}}, "start stop", false, false, false, "may have started all the same"},
		{"stop failed", &fakeControl{stopEr: errors.New("connection reset")}, "start stop", true, false, true, "profiler stop failed: connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Now()
			s := Begin(context.Background(), spec(0, time.Millisecond), tc.ctl, base)
			<-s.done // the window's whole life: start, then stop a millisecond later
			p := s.End(context.Background(), base)
			if got := strings.Join(tc.ctl.calls, " "); got != tc.wantCalls {
				t.Errorf("calls %q, want %q", got, tc.wantCalls)
			}
			if p.Started != tc.started || p.Stopped != tc.stopped {
				t.Errorf("started %v stopped %v, want %v %v", p.Started, p.Stopped, tc.started, tc.stopped)
			}
			errs := strings.Join(p.Errors, "\n")
			if tc.errContains == "" && errs != "" || !strings.Contains(errs, tc.errContains) {
				t.Errorf("errors %q, want %q", errs, tc.errContains)
			}
			start, end := s.Window().Span()
			if tc.name == "start refused" && !start.IsZero() {
				t.Errorf("a refused start left a window from %v", start)
			}
			if tc.open {
				// The run ends after the failed stop: End closes the window then.
				if on, off := s.Window().Sure(); on.IsZero() || off.IsZero() || end.Before(off) {
					t.Errorf("window %v–%v, sure %v–%v: want it open past the stop", start, end, on, off)
				}
			}
			if len(Notes(p)) < len(p.Errors) {
				t.Errorf("notes %q miss the errors", Notes(p))
			}
		})
	}
}

// A load that ends (or a Ctrl-C) before the window opens never starts the profiler; one
// that ends inside it stops the profiler at once.
func TestSessionEndsEarly(t *testing.T) {
	ctl := &fakeControl{}
	base := time.Now()
	s := Begin(context.Background(), spec(time.Hour, time.Second), ctl, base)
	p := s.End(context.Background(), base)
	if len(ctl.calls) != 0 || p.Started || !strings.Contains(strings.Join(p.Notes, " "), "before the profiling window") {
		t.Errorf("calls %v, profile %+v", ctl.calls, p)
	}

	ctl = &fakeControl{}
	ctx, cancel := context.WithCancel(context.Background())
	s = Begin(ctx, spec(0, time.Hour), ctl, base)
	for i := 0; ; i++ {
		if on, _ := s.Window().Sure(); !on.IsZero() {
			break
		}
		if i == 10_000 {
			t.Fatal("the profiler was not started within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	cancel() // Ctrl-C inside the window
	p = s.End(ctx, base)
	if got := strings.Join(ctl.calls, " "); got != "start stop" || !p.Stopped || !strings.Contains(strings.Join(p.Notes, " "), "interrupted inside") {
		t.Errorf("calls %q, profile %+v", got, p)
	}
}
