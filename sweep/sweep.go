package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
)

// ErrBadInput marks bad options or a contract a point cannot run (exit 2); other errors
// from Run are a sweep that could not finish (exit 1). The program's one bad-input kind:
// test with errors.Is.
var ErrBadInput = badinput.ErrBadInput

func badInput(format string, a ...any) error { return badinput.Errorf(format, a...) }

// Files of a sweep directory, beside one run directory per point.
const (
	ResultFile = "sweep.json"
	// CSVFile and HTMLFile are written by the command line, rendered from the result by
	// package report.
	CSVFile  = "sweep.csv"
	HTMLFile = "sweep.html"
)

// MinWarmTasks is the fewest warm tasks a point needs for its figures to be judged: the
// floor below which pel compare gives no verdict and the diagnosis sets no rollback
// trigger (compare.Options.MinTasks). A warm-up that leaves fewer is warned about (a grid)
// or refused (an SLO search, where every probe decides).
const MinWarmTasks = 30

// DefaultMinAcceptance is the acceptance bound a load must meet besides the contract's
// percentile SLOs: a p99 bound lets 1 task in 100 be slower, and the acceptance bound lets
// 1 in 100 be rejected (per-request max bounds, output checks, errors).
const DefaultMinAcceptance = 0.99

// Config is one sweep.
type Config struct {
	// Run is the template of every point's run: Target, Contract (the base contract),
	// OutDir (the sweep directory; points go into OutDir/c<N> or OutDir/r<rate>), and the
	// key, HTTP client, progress and grace settings. Its Collectors are ignored: see
	// Collectors.
	Run runner.Config
	// Concurrency or Rates: the loads, one run each (exactly one list is non-empty). With
	// Search they are the search's start and, optionally, its upper limit.
	Concurrency []int
	Rates       []float64
	// Duration, Requests and Warmup, when set, replace the contract's at every point.
	Duration time.Duration
	Requests int
	Warmup   *time.Duration
	// Search, when not nil, finds the capacity at the SLO by bracketing and bisection
	// instead of running a fixed grid.
	Search *Search
	// MinAcceptance is the acceptance rate a load must reach to meet the contract (default
	// DefaultMinAcceptance).
	MinAcceptance float64
	// Replicas overrides the replica count read from each point's /metrics (dist.engines);
	// TargetRate, when set, is the goodput (accepted tasks/s) to plan replicas for.
	Replicas   int
	TargetRate float64
	// Collectors makes fresh collectors for one point (they sample one run each); nil: none.
	Collectors func() ([]runner.Collector, error)
	// Runner runs one point (default runner.Run); tests may substitute it.
	Runner func(context.Context, runner.Config) (*evidence.Evidence, error)
	// Progress hears of each point as it starts and finishes, and of warnings as they
	// arise (nil: none); package report renders them (report.SweepProgress).
	Progress Progress
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
	// WarmTasks is the warm phase's task count (the figures below are the warm phase's).
	WarmTasks      int     `json:"warm_tasks"`
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
	// NotMeasured names the latencies (ttft, itl, e2e) no warm task gave a sample of: their
	// figures above are not 0, they do not exist.
	NotMeasured []string `json:"not_measured,omitempty"`
	// CostPerAcceptedTask at this load (null without a cost block or with 0 accepted).
	CostPerAcceptedTask *float64 `json:"cost_per_accepted_task"`
	// Replicas is the number of engine replicas /metrics showed (dist.engines; 0: unknown).
	Replicas int `json:"replicas,omitempty"`
	// SLO is the point judged against its contract's percentile bounds; MeetsSLO says
	// whether every bound's point value held and acceptance reached the bound, and SLOMiss
	// why not. Null when the point has no tasks.
	SLO      *SLOResult `json:"slo,omitempty"`
	MeetsSLO *bool      `json:"meets_slo"`
	SLOMiss  string     `json:"slo_miss,omitempty"`
	// Partial says why the point's run holds less than its schedule (its evidence's
	// completeness: interrupted, unfinished...): its figures describe only what ran, and it
	// is not judged against the contract.
	Partial string `json:"partial,omitempty"`
	// Error says why the point has no usable figures (every request failed, target gone).
	Error string   `json:"error,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// SLOLine is one global percentile bound of the contract, for drawing it across the curve.
type SLOLine struct {
	Signal   string  `json:"signal"` // e.g. client.ttft_p99_ms
	Metric   string  `json:"metric"` // ttft, itl, tpot, e2e
	Quantile float64 `json:"quantile"`
	BoundMs  float64 `json:"bound_ms"`
}

// Result is sweep.json.
type Result struct {
	Contract evidence.ContractRef `json:"contract"` // the base contract (each point's differs by its arrival)
	Target   string               `json:"target"`
	Mode     string               `json:"mode"` // "concurrency" (closed loop) or "rate" (poisson)
	// Points in ascending load (an SLO search's probes, sorted).
	Points   []Point   `json:"points"`
	Knee     *Knee     `json:"knee"`
	KneeRule string    `json:"knee_rule"`
	SLO      []SLOLine `json:"slo"`
	// MinAcceptance is the acceptance bound each point was held to.
	MinAcceptance float64 `json:"min_acceptance"`
	// Search is the SLO search as it ran (null for a grid); Capacity the capacity at the
	// SLO with its stage-5 figures (a grid's is only as fine as its grid).
	Search   *SearchLog `json:"search,omitempty"`
	Capacity *Capacity  `json:"capacity"`
	Warnings []string   `json:"warnings,omitempty"`
	Notes    []string   `json:"notes,omitempty"`
	// Interrupted says where a signal stopped the sweep: the loads it planned past that
	// point were not run, and a capacity found is only a lower bound.
	Interrupted string `json:"interrupted,omitempty"`
}

// Run runs the contract once per load (or, with Search, at the loads the search chooses),
// each into its own run directory, then finds the knee and the capacity at the SLO and
// writes OutDir/sweep.json (package report renders it). It returns the result even when stopped
// early (with the points done so far) together with the error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	base := cfg.Run
	if base.Contract == nil {
		return nil, badInput("no contract given")
	}
	if base.OutDir == "" {
		return nil, badInput("no output directory given (-o DIR)")
	}
	if cfg.Duration < 0 || cfg.Requests < 0 || (cfg.Warmup != nil && *cfg.Warmup < 0) {
		return nil, badInput("--duration, --requests and --warmup must not be negative")
	}
	if cfg.MinAcceptance == 0 {
		cfg.MinAcceptance = DefaultMinAcceptance
	}
	if cfg.MinAcceptance < 0 || cfg.MinAcceptance > 1 {
		return nil, badInput("--min-acceptance %v: want a fraction in [0, 1]", cfg.MinAcceptance)
	}
	if cfg.Replicas < 0 || cfg.TargetRate < 0 {
		return nil, badInput("--replicas and --target-rate must not be negative")
	}
	mode := "concurrency"
	if len(cfg.Rates) > 0 {
		mode = "rate"
	}
	sw := &sweeper{cfg: cfg, base: base, run: cfg.Runner, done: map[string]int{}}
	if sw.run == nil {
		sw.run = runner.Run
	}
	sw.res = &Result{
		Contract: evidence.ContractRef{Name: base.Contract.Name, SHA256: base.Contract.SHA256()},
		Target:   scrub.URL(base.Target), Mode: mode, Points: []Point{}, KneeRule: KneeRule,
		SLO: sloLines(base.Contract), MinAcceptance: cfg.MinAcceptance,
	}
	if v, err := fmt.Sscan(base.Contract.Version, &sw.res.Contract.Version); v != 1 || err != nil {
		sw.res.Contract.Version = 0
	}
	var plan func(context.Context) error
	if cfg.Search != nil {
		p, err := sw.planSearch()
		if err != nil {
			return nil, err
		}
		plan = p
	} else {
		if (len(cfg.Concurrency) == 0) == (len(cfg.Rates) == 0) {
			return nil, badInput("give exactly one of --concurrency and --rates")
		}
		var loads []Load
		for _, n := range cfg.Concurrency {
			loads = append(loads, Load{Concurrency: n})
		}
		for _, r := range cfg.Rates {
			loads = append(loads, Load{Rate: r})
		}
		// Every point's contract is built before anything runs: a bad override fails fast.
		for _, l := range loads {
			c, err := sw.contractFor(l)
			if err != nil {
				return nil, err
			}
			sw.warnWarm(l, c, false)
		}
		sw.points = len(loads)
		plan = func(ctx context.Context) error {
			for _, l := range loads {
				if _, err := sw.probe(ctx, l); err != nil {
					return err
				}
			}
			return nil
		}
	}
	out, err := rundir.CreateSweep(base.OutDir)
	if err != nil {
		return nil, badInput("%v", err)
	}
	stop := plan(ctx)
	if stop != nil && errors.Is(stop, errNothingRan) {
		// Nothing ran: leave nothing behind, as runner does for bad input.
		out.Discard()
		return nil, errors.Unwrap(stop)
	}
	res := sw.res
	if ctx.Err() != nil {
		res.Interrupted = "Ctrl-C or SIGTERM stopped the sweep"
		if n := len(res.Points); n > 0 {
			res.Interrupted += fmt.Sprintf(" during point %s (%d of %d planned)", res.Points[n-1].Name, n, sw.points)
		}
		res.Interrupted += ": the loads after it did not run"
	}
	sort.SliceStable(res.Points, func(i, j int) bool { return res.Points[i].Load < res.Points[j].Load })
	res.Knee = FindKnee(res.Points)
	if res.Knee == nil && len(res.Points) > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("no knee between %s and %s: power (goodput / p99 E2E) was still highest at the highest load (the limit lies beyond it)",
			res.Points[0].Name, res.Points[len(res.Points)-1].Name))
	}
	res.Capacity = sw.capacity()
	if mode == "rate" {
		res.Notes = append(res.Notes, "open-loop (poisson) points: past saturation the queue grows for as long as the run lasts, so latency depends on the run's length as well as on the rate")
	}
	if err := writeResult(out, res); err != nil && stop == nil {
		stop = err
	}
	return res, stop
}

// errNothingRan wraps the error of a first point that could not run at all.
var errNothingRan = errors.New("nothing ran")

type nothingRan struct{ err error }

func (e *nothingRan) Error() string   { return e.err.Error() }
func (e *nothingRan) Unwrap() error   { return e.err }
func (e *nothingRan) Is(t error) bool { return t == errNothingRan }

// sweeper runs points and remembers them.
type sweeper struct {
	cfg  Config
	base runner.Config
	run  func(context.Context, runner.Config) (*evidence.Evidence, error)
	res  *Result
	done map[string]int // point name -> index in res.Points
	// points is how many points the sweep plans (a search: at most MaxProbes), for the
	// "point i of n" line before each.
	points int
	atMost bool
}

func (sw *sweeper) contractFor(l Load) (*contract.Contract, error) {
	c, err := Override(sw.base.Contract, l, Bounds{Duration: sw.cfg.Duration, Requests: sw.cfg.Requests, Warmup: sw.cfg.Warmup})
	if err != nil {
		return nil, badInput("%v", err)
	}
	return c, nil
}

func (sw *sweeper) warn(s string) {
	sw.res.Warnings = append(sw.res.Warnings, s)
	if sw.cfg.Progress != nil {
		sw.cfg.Progress.Warning(s)
	}
}

// plannedWarm is how many warm tasks a point's contract plans: its rate times the warm
// window (duration − warmup), capped by its request count. known is false for a closed
// loop, whose throughput is the server's to decide.
func plannedWarm(c *contract.Contract) (float64, bool) {
	if c.Arrival.Process == contract.Closed {
		return 0, false
	}
	p := c.Planned()
	return p.Warm, p.Known
}

// warnWarm warns (or, for a search probe, refuses) when a point's warm window plans fewer
// than MinWarmTasks tasks.
func (sw *sweeper) warnWarm(l Load, c *contract.Contract, refuse bool) error {
	n, ok := plannedWarm(c)
	if !ok || n >= MinWarmTasks {
		return nil
	}
	msg := fmt.Sprintf("point %s: warmup %s of a %s run leaves ~%.0f warm tasks at %g/s, fewer than the %d a point needs to be judged; lengthen --duration or shorten --warmup",
		l.Name(), c.Warmup, c.Duration, n, c.Arrival.Rate, MinWarmTasks)
	if refuse {
		return badInput("%s", msg)
	}
	sw.warn(msg)
	return nil
}

// probe runs one load (once: a load probed again returns the earlier point) and judges it.
func (sw *sweeper) probe(ctx context.Context, l Load) (*Point, error) {
	if i, ok := sw.done[l.Name()]; ok {
		return &sw.res.Points[i], nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := sw.contractFor(l)
	if err != nil {
		return nil, err
	}
	pcfg := sw.base
	pcfg.Contract = c
	pcfg.OutDir = filepath.Join(sw.base.OutDir, l.Name()) // a run directory (rundir.Create)
	pcfg.Collectors = nil
	if sw.cfg.Collectors != nil {
		cols, err := sw.cfg.Collectors()
		if err != nil {
			return nil, badInput("%v", err)
		}
		pcfg.Collectors = cols
	}
	if sw.cfg.Progress != nil && sw.points > 0 {
		sw.cfg.Progress.Starting(len(sw.res.Points)+1, sw.points, sw.atMost, l.Name())
	}
	// The point's records, as the runner's stage 1 streams them, folded into the bounded
	// summary its judgement reads (a bootstrap over tasks): requests.jsonl is read once.
	run := compare.NewRun(pcfg.OutDir, c, nil)
	var n int
	var addErr error
	pcfg.Observe = func(r *record.Record) {
		if addErr == nil {
			addErr = run.Add(r)
			n++
		}
	}
	ev, err := sw.run(ctx, pcfg)
	p := pointOf(l, pcfg.OutDir, c.SHA256(), ev)
	if err != nil {
		p.Error = err.Error()
	}
	if ev == nil || n == 0 || addErr != nil { // stage 1 did not go through the whole file
		run = nil
	}
	sw.judge(&p, run)
	sw.res.Points = append(sw.res.Points, p)
	sw.done[l.Name()] = len(sw.res.Points) - 1
	if sw.cfg.Progress != nil {
		sw.cfg.Progress.Done(p)
	}
	if err != nil && (errors.Is(err, runner.ErrBadInput) || ctx.Err() != nil) {
		// The target or the input is unusable (or the user stopped us): later points
		// would fail the same way.
		if errors.Is(err, runner.ErrBadInput) && len(sw.res.Points) == 1 {
			return nil, &nothingRan{err}
		}
		// Past the first point the sweep ran: its points stand, and the error is the
		// sweep's failure to finish, not bad input.
		return nil, badinput.Hide(fmt.Errorf("point %s: %w", p.Name, err))
	}
	// A point where every request failed (runner.ErrRunFailed) stays in the curve: zero
	// goodput past the knee is a finding, not a reason to stop.
	return &sw.res.Points[len(sw.res.Points)-1], nil
}

// judge holds a finished point to the contract: its warm-task floor, its percentile SLO
// bounds (point values, with intervals for the record) and the acceptance bound.
// run is the point's summary when the runner handed its records over; nil streams the
// directory's.
func (sw *sweeper) judge(p *Point, run *compare.Run) {
	if p.Requests == 0 {
		return
	}
	if p.WarmTasks < MinWarmTasks {
		n := fmt.Sprintf("%d warm tasks, fewer than the %d a point needs to be judged: its figures are indicative only (lengthen --duration or shorten --warmup)", p.WarmTasks, MinWarmTasks)
		p.Notes = append(p.Notes, n)
		sw.warn("point " + p.Name + ": " + n)
	}
	no := false
	p.MeetsSLO = &no
	if run == nil {
		var err error
		if run, err = compare.Open(p.Dir); err != nil {
			p.SLOMiss = "not judged: " + err.Error()
			return
		}
	}
	slo, err := CheckSLO(run, compare.Options{Resamples: 500})
	if err != nil {
		p.SLOMiss = "not judged: " + err.Error()
		return
	}
	p.SLO = &slo
	var miss []string
	if slo.Tasks == 0 {
		miss = append(miss, "no tasks in the judged phase")
	}
	if slo.AcceptanceRate < sw.cfg.MinAcceptance {
		miss = append(miss, fmt.Sprintf("acceptance %.1f%% < %.1f%%", slo.AcceptanceRate*100, sw.cfg.MinAcceptance*100))
	}
	for _, ch := range slo.Checks {
		switch {
		case ch.Candidate == nil:
			miss = append(miss, fmt.Sprintf("%s (%s): not measured (no sample), so not met", ch.Signal, ch.Scope))
		case *ch.Candidate > ch.Bound:
			miss = append(miss, fmt.Sprintf("%s (%s) %.4g ms > %.4g ms", ch.Signal, ch.Scope, *ch.Candidate, ch.Bound))
		}
	}
	if p.Partial != "" {
		// A cut point's figures cover only what ran: neither a meet nor a miss.
		p.MeetsSLO = nil
		p.SLOMiss = "not judged: the point's run was cut (" + p.Partial + ")"
		return
	}
	if len(miss) == 0 {
		yes := true
		p.MeetsSLO = &yes
		return
	}
	p.SLOMiss = strings.Join(miss, "; ")
}

func pointOf(l Load, dir, sha string, ev *evidence.Evidence) Point {
	p := Point{Name: l.Name(), Dir: dir, Concurrency: l.Concurrency, Rate: l.Rate, Load: l.Value(), ContractSHA256: sha}
	if ev == nil {
		return p
	}
	p.Partial = ev.Run.PartialText() // a cut run (a point, or a run given to --from)
	w := ev.Workload
	p.Requests, p.Accepted = w.Requests, w.Accepted
	p.WarmTasks = w.Requests
	if s, ok := w.ByPhase["warm"]; ok {
		p.WarmTasks = s.Requests
	} else if len(w.ByPhase) > 0 {
		p.WarmTasks = 0
	}
	p.AcceptanceRate, p.ErrorRate = w.AcceptanceRate, w.ErrorRate
	p.GoodputRPS, p.ThroughputRPS, p.OutputTokensPS = w.GoodputRPS, w.ThroughputRPS, w.OutputTokensPerS
	p.TTFTP50, p.TTFTP99 = w.Latency.TTFTms.P50, w.Latency.TTFTms.P99
	p.ITLP50, p.ITLP99 = w.Latency.ITLms.P50, w.Latency.ITLms.P99
	p.E2EP99 = w.Latency.E2Ems.P99
	for _, q := range []struct {
		name string
		n    int
	}{{QTTFT, w.Latency.TTFTms.N}, {QITL, w.Latency.ITLms.N}, {QE2E, w.Latency.E2Ems.N}} {
		if q.n == 0 && p.Requests > 0 {
			p.NotMeasured = append(p.NotMeasured, q.name)
		}
	}
	p.CostPerAcceptedTask = w.CostPerAcceptedTask
	if s, ok := ev.Signal(evidence.SigInFlightMean); ok {
		p.InFlightMean = s.Value
	}
	if s, ok := ev.Signal(evidence.SigEngines); ok {
		p.Replicas = int(s.Value)
	}
	return p
}

// sloLines lists the contract's global percentile objectives, for the charts: lines a
// point's percentile is drawn against (every objective is judged in its checks).
func sloLines(c *contract.Contract) []SLOLine {
	out := []SLOLine{}
	for _, ob := range c.Objectives() {
		if ob.Task == "" && !ob.PerRequest() {
			out = append(out, SLOLine{Signal: ob.Signal(), Metric: string(ob.Metric), Quantile: ob.Quantile, BoundMs: ob.LimitMs()})
		}
	}
	return out
}

// writeResult writes dir/sweep.json, the result as it is kept (ReadResult reads it back).
// Its renderings (sweep.csv, sweep.html, the table) are package report's.
func writeResult(dir *rundir.Dir, r *Result) error {
	return dir.Write(ResultFile, func(w io.Writer) error { return JSON(w, r) })
}

// ReadResult reads a sweep.json.
func ReadResult(path string) (*Result, error) {
	f, err := rundir.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
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
