package sim

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultProfileSlowdown is the step-time factor while pel sim profiles: a quarter longer,
// within the range torch.profiler's CPU+CUDA activity tracing costs a serving step (each
// op and launch gets host-side callbacks), and far enough from 1 for a test to see.
const DefaultProfileSlowdown = 1.25

// profiler is the simulated engine's profiler: while on, steps are slowed and replica 0's
// are captured.
type profiler struct {
	mu   sync.Mutex
	on   atomic.Bool
	slow float64
	cap  *traceCapture
}

func (p *profiler) factor() float64 {
	if p.on.Load() {
		return p.slow
	}
	return 1
}

func checkProfileOptions(o *Options) error {
	if o.ProfileSlowdown == 0 {
		o.ProfileSlowdown = DefaultProfileSlowdown
	}
	if math.IsNaN(o.ProfileSlowdown) || o.ProfileSlowdown < 1 || o.ProfileSlowdown > 10 {
		return fmt.Errorf("sim: profile slowdown %g is outside [1, 10]", o.ProfileSlowdown)
	}
	if o.ProfileDir != "" {
		fi, err := os.Stat(o.ProfileDir)
		if err != nil {
			return fmt.Errorf("sim: profile directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("sim: profile directory %s is not a directory", o.ProfileDir)
		}
	}
	return nil
}

// StartProfile turns the profiler on (vLLM's POST /start_profile).
func (s *Server) StartProfile() error {
	p := &s.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on.Load() {
		return errors.New("the profiler is already running")
	}
	c := &traceCapture{}
	if !s.replicas[0].cap.CompareAndSwap(nil, c) {
		return errors.New("a trace capture (/debug/trace) is running on replica 0")
	}
	p.cap, p.slow = c, s.opts.ProfileSlowdown
	p.on.Store(true)
	return nil
}

// StopProfile writes the trace of the profiled steps into Options.ProfileDir and then
// turns the profiler off (vLLM's POST /stop_profile); it returns the file's path. The file is
// written under a temporary name and renamed, so a reader never sees half of it.
func (s *Server) StopProfile() (string, error) {
	p := &s.prof
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on.Load() {
		return "", errors.New("the profiler is not running")
	}
	s.replicas[0].cap.CompareAndSwap(p.cap, nil)
	c := p.cap
	p.cap = nil
	// Writing the trace is part of profiling, as vLLM's workers export theirs before its
	// /stop_profile answers: the steps stay slow until the file is written.
	defer p.on.Store(false)
	name := fmt.Sprintf("pel-sim-%s.%d.pt.trace.json", s.sc.Name, time.Now().UnixNano())
	final := filepath.Join(s.opts.ProfileDir, name)
	f, err := os.CreateTemp(s.opts.ProfileDir, ".pel-sim-trace-*")
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	err = s.writeKineto(f, c)
	c.mu.Unlock()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return final, nil
}

func (s *Server) serveStartProfile(w http.ResponseWriter, r *http.Request) {
	if err := s.StartProfile(); err != nil {
		writeAPIError(w, &apiError{Status: http.StatusConflict, Type: "Conflict", Message: err.Error()})
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) serveStopProfile(w http.ResponseWriter, r *http.Request) {
	if _, err := s.StopProfile(); err != nil {
		writeAPIError(w, &apiError{Status: http.StatusConflict, Type: "Conflict", Message: err.Error()})
		return
	}
	w.WriteHeader(http.StatusOK)
}
