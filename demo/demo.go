package demo

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/sim"
)

// DefaultScenario has a real bottleneck that takes several stages of evidence to pin down.
const DefaultScenario = "kv-thrash"

// TraceFile is the captured trace's name in the run directory: gzip-compressed Kineto JSON,
// as torch.profiler writes with a .json.gz name (an eager-launch second is ~80 MB of JSON).
const TraceFile = "trace.json.gz"

// traceWindow is how much virtual time the trace covers: a few hundred decode steps, enough
// for every per-step ratio, little enough to stay a few MB compressed.
const traceWindow = time.Second

// ErrBadInput marks an unknown scenario or a scenario/contract that does not parse: the
// program's one bad-input kind.
var ErrBadInput = badinput.ErrBadInput

// Options for one demo run.
type Options struct {
	Scenario  string // name or file; default DefaultScenario
	OutDir    string // run directory; must be absent or empty
	NoMetrics bool   // do not sample the engine's /metrics (shows how the diagnosis degrades); implied by a scenario with serve_metrics: false
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
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return runScenario(ctx, sc, o, begin)
}

// runScenario runs one loaded scenario (the demo, or a verification's changed copy).
func runScenario(ctx context.Context, sc *sim.Scenario, o Options, begin time.Time) (*Result, error) {
	c, err := contract.Parse(sc.Contract, "scenario "+sc.Name+" contract")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
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
	if !o.NoMetrics && sc.Engine.ServesMetrics() {
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
		tmp, err := os.CreateTemp("", "pel-demo-trace-*.json.gz")
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
	if errors.Is(err, runner.ErrBadInput) {
		return nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if ev == nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, runner.ErrRunFailed) {
		return nil, err
	}
	notes := []string{fmt.Sprintf("pel demo: simulated %s serving %s (scenario %s); the diagnosis reads only its HTTP, /metrics, DCGM and trace outputs", sc.Engine.GPU, sc.Engine.Model, sc.Name)}
	var traces []string
	if traceDone != nil {
		if terr := <-traceDone; terr != nil {
			notes = append(notes, "trace capture: "+terr.Error())
		} else if terr := copyFile(tracePath, filepath.Join(o.OutDir, TraceFile)); terr != nil {
			notes = append(notes, "trace copy: "+terr.Error())
		} else {
			traces = append(traces, filepath.Join(o.OutDir, TraceFile))
		}
	}
	// From here on the demo is exactly `pel analyze DIR --trace DIR/trace.json.gz`.
	// The run is written: what fails now is the demo, not its input.
	d, err := rundir.Open(o.OutDir)
	if err != nil {
		return nil, badinput.Hide(err)
	}
	ev, _, err = ladder.AnalyzeDir(d, ladder.Options{Traces: traces, Seed: o.Seed})
	if err != nil {
		return nil, badinput.Hide(err)
	}
	ev.Run.Scenario = sc.Name
	for _, n := range notes {
		if !slices.Contains(ev.Run.Notes, n) {
			ev.Run.Notes = append(ev.Run.Notes, n)
		}
	}
	if err := ladder.WriteRun(d, ev); err != nil {
		return nil, err
	}
	return &Result{Dir: o.OutDir, Scenario: sc, Evidence: ev, Wall: time.Since(begin)}, nil
}

// captureTrace waits until a third of the way into the warm phase, then records traceWindow
// of the first replica in Kineto format, gzip-compressed.
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
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := srv.CaptureTrace(ctx, min(traceWindow, warm/3), 0, zw); err != nil {
		return err
	}
	return zw.Close()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return rundir.WriteFile(dst, false, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
