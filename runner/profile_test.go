package runner

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// profiledServer is a scriptable OpenAI server that also serves vLLM's profiler control,
// counting the calls.
func profiledServer(t *testing.T) (*httptest.Server, *atomic.Int32, *atomic.Int32, chan struct{}) {
	var starts, stops atomic.Int32
	started := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) {
		if starts.Add(1) == 1 {
			close(started)
		}
	})
	mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, r *http.Request) { stops.Add(1) })
	mux.Handle("/", &loadgentest.Handler{})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &starts, &stops, started
}

// Ctrl-C inside a profiling window ends it at once: the profiler is stopped, the run
// writes what finished, and the evidence says the window was cut short.
func TestRunInterruptedInProfilingWindow(t *testing.T) {
	srv, starts, stops, started := profiledServer(t)
	c := writeContract(t, "name: p\nversion: 1\narrival: {process: constant, rate: 50}\nrequests: 10000\ntasks:\n  - {name: t, prompt_tokens: {dist: fixed, value: 8}}\nprofile: {at: 100ms, for: 1h}\n")
	dir := filepath.Join(t.TempDir(), "r")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-started:
			time.Sleep(200 * time.Millisecond) // a few tasks under the profiler
		case <-time.After(time.Minute): // safety net only: the test then fails on its counts
		}
		cancel()
	}()
	ev, err := Run(ctx, Config{Target: srv.URL, Contract: c, OutDir: dir, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := ev.Run.Profile
	if starts.Load() != 1 || stops.Load() != 1 || p == nil || !p.Started || !p.Stopped {
		t.Fatalf("%d starts, %d stops, profile %+v", starts.Load(), stops.Load(), p)
	}
	if !strings.Contains(strings.Join(ev.Run.Notes, "\n"), "interrupted inside the profiling window") {
		t.Errorf("notes %q", ev.Run.Notes)
	}
	recs, err := record.ReadFile(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, r := range recs {
		if r.Profiled {
			marked++
		}
	}
	if len(recs) != ev.Workload.Requests+ev.Workload.ByPhase[record.PhaseProfiled].Requests || marked == 0 || marked != p.Marked {
		t.Errorf("%d records (%d marked, evidence %d), workload %d warm + %d profiled", len(recs), marked, p.Marked,
			ev.Workload.Requests, ev.Workload.ByPhase[record.PhaseProfiled].Requests)
	}
}

// A window that cannot be run is bad input before anything is sent.
func TestProfileWindowRefused(t *testing.T) {
	srv, starts, _, _ := profiledServer(t)
	for _, tc := range []struct {
		name, block string
		canary      bool
		want        string
	}{
		{"after the schedule", "duration: 2s\nprofile: {at: 2s, for: 1s}\n", false, "is not before the schedule's end"},
		{"with a canary", "requests: 5\nprofile: {at: 0s, for: 1s}\n", true, "cannot share a run"},
	} {
		c := writeContract(t, "name: p\nversion: 1\narrival: {process: constant, rate: 5}\n"+tc.block+"tasks:\n  - {name: t, prompt_tokens: {dist: fixed, value: 8}}\n")
		cfg := Config{Target: srv.URL, Contract: c, OutDir: filepath.Join(t.TempDir(), "r")}
		if tc.canary {
			cfg.Canary = &Canary{Target: srv.URL}
		}
		_, err := Run(context.Background(), cfg)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input %q", tc.name, err, tc.want)
		}
	}
	if starts.Load() != 0 {
		t.Errorf("the profiler was started %d times", starts.Load())
	}
}
