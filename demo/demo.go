// Package demo runs the whole ladder against pel's simulated engine: it starts a scenario's
// server on loopback, drives the scenario's workload contract through the runner with the
// engine's /metrics and the virtual GPU's DCGM page sampled (and a profiler trace captured
// when the scenario needs one), diagnoses the evidence, and writes the run directory with
// evidence.json and report.html.
//
// The diagnosis sees only what a real deployment would expose (HTTP responses, /metrics,
// DCGM, a Kineto trace); the scenario's owner layer is recorded in the evidence for the
// reader and the tests, never read by diagnose.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/trace"
)

// DefaultScenario has a real bottleneck that takes several stages of evidence to pin down.
const DefaultScenario = "kv-thrash"

// File names the demo adds to a run directory.
const (
	ReportFile = "report.html"
	TraceFile  = "trace.json"
)

// Options for one demo run.
type Options struct {
	Scenario  string // name or file; default DefaultScenario
	OutDir    string // run directory; must be absent or empty
	NoMetrics bool   // do not sample the engine's /metrics (shows how the diagnosis degrades)
	NoDCGM    bool   // do not sample the virtual GPU's DCGM page
	NoTrace   bool   // do not capture a trace even when the scenario lists one
	Seed      uint64 // simulator seed (default 1)
	Progress  io.Writer
	IsTTY     bool
}

// Result is a finished demo.
type Result struct {
	Dir      string
	Scenario *sim.Scenario
	Evidence *evidence.Evidence
	Wall     time.Duration // start of the server to the written report
}

// Run performs one demo. The returned evidence is diagnosed and already written to
// OutDir/evidence.json, with OutDir/report.html next to it.
func Run(ctx context.Context, o Options) (*Result, error) {
	begin := time.Now()
	if o.Scenario == "" {
		o.Scenario = DefaultScenario
	}
	if o.OutDir == "" {
		return nil, errors.New("demo: no output directory")
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	sc, err := sim.LoadScenario(o.Scenario)
	if err != nil {
		return nil, err
	}
	c, err := contract.Parse(sc.Contract, "scenario "+sc.Name+" contract")
	if err != nil {
		return nil, err
	}
	srv, err := sim.NewServer(sc, sim.Options{Speed: 1, Seed: o.Seed, Hostname: "pel-demo"})
	if err != nil {
		return nil, err
	}
	dcgmAddr := ""
	if !o.NoDCGM {
		dcgmAddr = "127.0.0.1:0"
	}
	if err := srv.Start("127.0.0.1:0", dcgmAddr); err != nil {
		return nil, err
	}
	defer srv.Close()

	var cols []runner.Collector
	sc2 := scrape.Config{}
	if !o.NoMetrics {
		sc2.Engine = []string{srv.URL() + "/metrics"}
	}
	if !o.NoDCGM {
		sc2.DCGM = []string{srv.DCGMURL() + "/metrics"}
	}
	if len(sc2.Engine)+len(sc2.DCGM) > 0 {
		col, err := scrape.NewCollector(sc2)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}

	// A trace covers a window of the warm phase, captured while the load runs.
	var traceDone chan error
	tracePath := ""
	if slices.Contains(sc.Evidence, "trace") && !o.NoTrace {
		tmp, err := os.CreateTemp("", "pel-demo-trace-*.json")
		if err != nil {
			return nil, err
		}
		tracePath = tmp.Name()
		defer os.Remove(tracePath)
		traceDone = make(chan error, 1)
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { traceDone <- captureTrace(tctx, srv, c, tmp) }()
	}

	ev, err := runner.Run(ctx, runner.Config{
		Target: srv.URL(), Contract: c, OutDir: o.OutDir, Collectors: cols, Engine: "sim",
		Progress: o.Progress, IsTTY: o.IsTTY,
	})
	if ev == nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, runner.ErrRunFailed) {
		return nil, err
	}
	ev.Run.Scenario = sc.Name
	ev.Run.Notes = append(ev.Run.Notes, fmt.Sprintf("pel demo: simulated %s serving %s (scenario %s); the diagnosis reads only its HTTP, /metrics, DCGM and trace outputs", sc.Engine.GPU, sc.Engine.Model, sc.Name))
	if traceDone != nil {
		if terr := <-traceDone; terr != nil {
			ev.Run.Notes = append(ev.Run.Notes, "trace capture: "+terr.Error())
		} else if terr := addTrace(ev, tracePath, filepath.Join(o.OutDir, TraceFile)); terr != nil {
			ev.Run.Notes = append(ev.Run.Notes, "trace analysis: "+terr.Error())
		}
	}
	recs, rerr := record.ReadFile(filepath.Join(o.OutDir, runner.RequestsFile))
	if rerr != nil {
		return nil, rerr
	}
	diagnose.Diagnose(ev, recs, diagnose.Options{SLO: diagnose.SLOBounds(c.SLO), Seed: o.Seed})
	if err := WriteRun(o.OutDir, ev); err != nil {
		return nil, err
	}
	return &Result{Dir: o.OutDir, Scenario: sc, Evidence: ev, Wall: time.Since(begin)}, nil
}

// captureTrace waits until a third of the way into the warm phase, then records two virtual
// seconds of the first replica in Kineto format.
func captureTrace(ctx context.Context, srv *sim.Server, c *contract.Contract, f *os.File) error {
	defer f.Close()
	warm := c.Duration - c.Warmup
	if warm <= 0 {
		warm = 10 * time.Second
	}
	wait := c.Warmup + warm/3
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	window := min(2*time.Second, warm/3)
	return srv.CaptureTrace(ctx, window, 0, f)
}

// addTrace analyses the captured trace, keeps a copy in the run directory and adds its
// stage 2/3/5 evidence.
func addTrace(ev *evidence.Evidence, tmp, dst string) error {
	data, err := os.ReadFile(tmp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return err
	}
	res, err := trace.Analyze(dst, trace.DefaultOptions())
	if err != nil {
		return err
	}
	trace.FillEvidence(ev, res)
	return nil
}

// WriteRun writes evidence.json and report.html into dir (0600, atomically).
func WriteRun(dir string, ev *evidence.Evidence) error {
	if err := ev.WriteFile(filepath.Join(dir, runner.EvidenceFile)); err != nil {
		return err
	}
	path := filepath.Join(dir, ReportFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := report.HTML(f, ev); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
