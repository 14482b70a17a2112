package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/runner"
)

// ErrBadInput marks bad options or a contract a point cannot run (exit 2); other errors
// from Run are a sweep that could not finish (exit 1). Test with errors.Is.
var ErrBadInput = errors.New("bad input")

type inputError struct{ err error }

func (e *inputError) Error() string   { return e.err.Error() }
func (e *inputError) Unwrap() []error { return []error{ErrBadInput, e.err} }

func badInput(format string, a ...any) error { return &inputError{fmt.Errorf(format, a...)} }

// ResultFile is the sweep's summary inside its directory.
const ResultFile = "sweep.json"

// Config is one sweep.
type Config struct {
	// Run is the template of every point's run: Target, Contract (the base contract),
	// OutDir (the sweep directory; points go into OutDir/c<N> or OutDir/r<rate>), and the
	// key, HTTP client, progress and grace settings. Its Collectors are ignored: see
	// Collectors.
	Run runner.Config
	// Concurrency or Rates: the loads, one run each (exactly one list is non-empty).
	Concurrency []int
	Rates       []float64
	// Duration and Requests, when non-zero, replace the contract's bound at every point.
	Duration time.Duration
	Requests int
	// Collectors makes fresh collectors for one point (they sample one run each); nil: none.
	Collectors func() ([]runner.Collector, error)
	// Runner runs one point (default runner.Run); tests may substitute it.
	Runner func(context.Context, runner.Config) (*evidence.Evidence, error)
	// Log receives one line per finished point (nil: none).
	Log io.Writer
}

// Point is one run of the sweep, summarised from its warm phase.
type Point struct {
	Name           string  `json:"name"`
	Dir            string  `json:"dir"`
	Concurrency    int     `json:"concurrency,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Load           float64 `json:"load"`
	ContractSHA256 string  `json:"contract_sha256,omitempty"`
	Requests       int     `json:"requests"`
	Accepted       int     `json:"accepted"`
	AcceptanceRate float64 `json:"acceptance_rate"`
	ErrorRate      float64 `json:"error_rate"`
	GoodputRPS     float64 `json:"goodput_rps"`
	ThroughputRPS  float64 `json:"throughput_rps"`
	OutputTokensPS float64 `json:"output_tokens_per_s"`
	// InFlightMean is the measured mean concurrency (client.in_flight_mean): what the
	// server actually saw, which an open-loop rate does not fix.
	InFlightMean float64 `json:"in_flight_mean"`
	TTFTP50      float64 `json:"ttft_p50_ms"`
	TTFTP99      float64 `json:"ttft_p99_ms"`
	ITLP50       float64 `json:"itl_p50_ms"`
	ITLP99       float64 `json:"itl_p99_ms"`
	E2EP99       float64 `json:"e2e_p99_ms"`
	// Error says why the point has no usable figures (every request failed, target gone).
	Error string `json:"error,omitempty"`
}

// Result is sweep.json.
type Result struct {
	Contract evidence.ContractRef `json:"contract"` // the base contract (each point's differs by its arrival)
	Target   string               `json:"target"`
	Mode     string               `json:"mode"` // "concurrency" (closed loop) or "rate" (poisson)
	Points   []Point              `json:"points"`
	Knee     *Knee                `json:"knee"`
	KneeRule string               `json:"knee_rule"`
	Notes    []string             `json:"notes,omitempty"`
}

// Run runs the contract once per load, each into its own run directory, then finds the
// knee and writes OutDir/sweep.json. It returns the result even when stopped early (with
// the points done so far) together with the error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	base := cfg.Run
	if base.Contract == nil {
		return nil, badInput("no contract given")
	}
	if base.OutDir == "" {
		return nil, badInput("no output directory given (-o DIR)")
	}
	if (len(cfg.Concurrency) == 0) == (len(cfg.Rates) == 0) {
		return nil, badInput("give exactly one of --concurrency and --rates")
	}
	if cfg.Duration < 0 || cfg.Requests < 0 {
		return nil, badInput("--duration and --requests must not be negative")
	}
	var loads []Load
	mode := "concurrency"
	for _, n := range cfg.Concurrency {
		loads = append(loads, Load{Concurrency: n})
	}
	if len(cfg.Rates) > 0 {
		mode = "rate"
		for _, r := range cfg.Rates {
			loads = append(loads, Load{Rate: r})
		}
	}
	// Every point's contract is built before anything runs: a bad override fails fast.
	contracts := make([]*runnerContract, len(loads))
	for i, l := range loads {
		c, err := Override(base.Contract, l, cfg.Duration, cfg.Requests)
		if err != nil {
			return nil, badInput("%v", err)
		}
		contracts[i] = &runnerContract{load: l, c: c}
	}
	created, err := prepareDir(base.OutDir)
	if err != nil {
		return nil, err
	}
	run := cfg.Runner
	if run == nil {
		run = runner.Run
	}
	res := &Result{
		Contract: evidence.ContractRef{Name: base.Contract.Name, SHA256: base.Contract.SHA256()},
		Target:   base.Target, Mode: mode, Points: []Point{}, KneeRule: KneeRule,
	}
	if v, err := fmt.Sscan(base.Contract.Version, &res.Contract.Version); v != 1 || err != nil {
		res.Contract.Version = 0
	}
	var stop error
	for _, pc := range contracts {
		if err := ctx.Err(); err != nil {
			stop = err
			break
		}
		pcfg := base
		pcfg.Contract = pc.c
		pcfg.OutDir = filepath.Join(base.OutDir, pc.load.Name())
		pcfg.Collectors = nil
		if cfg.Collectors != nil {
			cols, err := cfg.Collectors()
			if err != nil {
				return nil, badInput("%v", err)
			}
			pcfg.Collectors = cols
		}
		ev, err := run(ctx, pcfg)
		p := pointOf(pc.load, pcfg.OutDir, pc.c.SHA256(), ev)
		if err != nil {
			p.Error = err.Error()
		}
		res.Points = append(res.Points, p)
		if cfg.Log != nil {
			logPoint(cfg.Log, p)
		}
		if err != nil && (errors.Is(err, runner.ErrBadInput) || ctx.Err() != nil) {
			// The target or the input is unusable (or the user stopped us): later points
			// would fail the same way.
			stop = fmt.Errorf("point %s: %w", p.Name, err)
			if errors.Is(err, runner.ErrBadInput) && len(res.Points) == 1 {
				// Nothing ran: leave nothing behind, as runner does for bad input.
				if created {
					os.RemoveAll(base.OutDir)
				}
				return nil, err
			}
			break
		}
		// A point where every request failed (runner.ErrRunFailed) stays in the curve:
		// zero goodput past the knee is a finding, not a reason to stop.
	}
	res.Knee = FindKnee(res.Points)
	if res.Knee == nil && len(res.Points) > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("no knee between %s and %s: goodput still grew at least %.0f%% per doubling, or p99 latency grew at most %.0f%% per doubling, at every step (the limit lies beyond the highest load, or the server degrades gracefully)",
			res.Points[0].Name, res.Points[len(res.Points)-1].Name, KneeMinGain*100, KneeMaxGrowth*100))
	}
	if mode == "rate" {
		res.Notes = append(res.Notes, "open-loop (poisson) points: past saturation the queue grows for as long as the run lasts, so latency depends on the run's length as well as on the rate")
	}
	if err := writeResult(filepath.Join(base.OutDir, ResultFile), res); err != nil && stop == nil {
		stop = err
	}
	return res, stop
}

type runnerContract struct {
	load Load
	c    *contract.Contract
}

func pointOf(l Load, dir, sha string, ev *evidence.Evidence) Point {
	p := Point{Name: l.Name(), Dir: dir, Concurrency: l.Concurrency, Rate: l.Rate, Load: l.Value(), ContractSHA256: sha}
	if ev == nil {
		return p
	}
	w := ev.Workload
	p.Requests, p.Accepted = w.Requests, w.Accepted
	p.AcceptanceRate, p.ErrorRate = w.AcceptanceRate, w.ErrorRate
	p.GoodputRPS, p.ThroughputRPS, p.OutputTokensPS = w.GoodputRPS, w.ThroughputRPS, w.OutputTokensPerS
	p.TTFTP50, p.TTFTP99 = w.Latency.TTFTms.P50, w.Latency.TTFTms.P99
	p.ITLP50, p.ITLP99 = w.Latency.ITLms.P50, w.Latency.ITLms.P99
	p.E2EP99 = w.Latency.E2Ems.P99
	if s, ok := ev.Signal(evidence.SigInFlightMean); ok {
		p.InFlightMean = s.Value
	}
	return p
}

// prepareDir creates the sweep directory (0700) or accepts an empty one: results of two
// sweeps never mix.
func prepareDir(dir string) (created bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, badInput("sweep directory %s: %v", dir, err)
		}
		return true, nil
	case err != nil:
		return false, badInput("sweep directory %s: %v", dir, err)
	case !st.IsDir():
		return false, badInput("sweep output %s exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, badInput("sweep directory %s: %v", dir, err)
	}
	if len(ents) > 0 {
		return false, badInput("sweep directory %s is not empty: choose a new -o DIR (sweeps are never mixed)", dir)
	}
	return false, os.Chmod(dir, 0o700)
}

func writeResult(path string, r *Result) error {
	return evidence.WriteAtomic(path, func(w io.Writer) error { return JSON(w, r) })
}

// ReadResult reads a sweep.json.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// JSON writes the result as indented JSON.
func JSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func logPoint(w io.Writer, p Point) {
	if p.Error != "" && p.Requests == 0 {
		fmt.Fprintf(w, "sweep %s: %s\n", p.Name, p.Error)
		return
	}
	fmt.Fprintf(w, "sweep %s: %d requests, goodput %.3f/s, TTFT p99 %.1f ms, ITL p99 %.1f ms\n", p.Name, p.Requests, p.GoodputRPS, p.TTFTP99, p.ITLP99)
}

// Text prints the throughput-vs-latency table, the knee and the notes.
func Text(out io.Writer, r *Result) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	load := "concurrency"
	if r.Mode == "rate" {
		load = "rate /s"
	}
	fmt.Fprintf(w, "pel sweep: contract %s v%d (sha256 %.12s) against %s, %d points (%s)\n\n", r.Contract.Name, r.Contract.Version, r.Contract.SHA256, r.Target, len(r.Points), r.Mode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "point\t%s\tin flight\trequests\taccepted\tgoodput/s\tTTFT p50\tTTFT p99\tITL p50\tITL p99\tE2E p99\t\n", load)
	for i, p := range r.Points {
		mark := ""
		if r.Knee != nil && r.Knee.Index == i {
			mark = "  <- knee"
		}
		if p.Error != "" && p.Requests == 0 {
			fmt.Fprintf(tw, "%s\t%g\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", p.Name, p.Load, mark)
			continue
		}
		fmt.Fprintf(tw, "%s\t%g\t%.1f\t%d\t%.1f%%\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\n", p.Name, p.Load, p.InFlightMean, p.Requests,
			p.AcceptanceRate*100, p.GoodputRPS, p.TTFTP50, p.TTFTP99, p.ITLP50, p.ITLP99, p.E2EP99, mark)
	}
	tw.Flush()
	fmt.Fprintln(w, "(latencies in ms, warm phase; each point's run directory holds its evidence)")
	if r.Knee != nil {
		fmt.Fprintf(w, "\nknee: %s (%s %g): %s\n", r.Knee.Name, r.Mode, r.Knee.Load, r.Knee.Reason)
	} else {
		fmt.Fprintln(w, "\nknee: none found")
	}
	fmt.Fprintf(w, "rule: %s\n", r.KneeRule)
	for _, p := range r.Points {
		if p.Error != "" {
			fmt.Fprintf(w, "point %s: %s\n", p.Name, p.Error)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return w.Flush()
}
