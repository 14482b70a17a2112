package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/stats"
	"github.com/pel-ladder/pel/workload"
)

// Error kinds. Errors returned by Run wrap exactly one of them (test with errors.Is).
var (
	// ErrBadInput: bad contract, dataset, flags or an unusable target (exit 2); the
	// program's one bad-input kind.
	ErrBadInput = badinput.ErrBadInput
	// ErrRunFailed: the run happened but no task completed (exit 1).
	ErrRunFailed = errors.New("run failed")
)

// kindError carries a kind without putting its name in the message.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

func badInput(format string, a ...any) error { return badinput.Errorf(format, a...) }

// Collector samples a source alongside the load (e.g. an engine's /metrics): Start before
// the first request (after readiness), Stop after the last task ends, Fill after stage 1
// is computed (it adds its stages' signals and notes to ev). dir is the run directory,
// where a collector creates its file (rundir.Dir.Append).
type Collector interface {
	Start(ctx context.Context, dir *rundir.Dir) error
	Stop(ctx context.Context) error
	Fill(ev *evidence.Evidence, dir *rundir.Dir) error
}

// Config is one run.
type Config struct {
	Target   string
	Contract *contract.Contract
	OutDir   string
	// APIKeyEnv names the environment variable holding the API key (default OPENAI_API_KEY).
	APIKeyEnv string
	KeepText  bool
	Progress  io.Writer // nil: no progress display
	IsTTY     bool      // Progress is a terminal: redraw one line
	// Grace for in-flight tasks after ctx is cancelled (0: loadgen.DefaultGrace).
	Grace      time.Duration
	Collectors []Collector
	Engine     string
	// HTTPClient overrides the load client's (tests, custom TLS); nil: a tuned default.
	HTTPClient *http.Client
	// EmbeddingsTarget serves the embeddings calls of multi-step tasks (a separate
	// embeddings server, as llama.cpp b4750 needs: its --embeddings mode refuses
	// completions); empty: Target. Its model is its first /v1/models entry.
	EmbeddingsTarget string
	// Canary, when set, makes this an interleaved canary run (canary.go).
	Canary *Canary
	// Shard makes this run one shard of a sharded run (pel run --shard i/n): its part of the
	// one schedule (workload.Sharded), from StartAt (shard.go). Zero: the whole schedule.
	Shard workload.Shard
	// StartAt, when set, is the wall-clock instant the schedule counts from (the shards'
	// shared start); the target's clock is compared with this machine's before it.
	StartAt time.Time
	// Observe, when set, sees every task record (steps attached) as stage 1 streams
	// requests.jsonl (in a LoadOnly run, as each is written), so a caller that needs them
	// (a sweep judging its point) does not read the file again. The record is reused after
	// Observe returns.
	Observe func(*record.Record)
	// LoadOnly says the diagnosis is left for later (pel run --no-analysis): stage 1's
	// headline (each phase's counts, acceptance, rates and latency percentiles, exact) is
	// kept as the records are written, and the file is not read back, so the run's CPU and
	// memory stay the driver's; the rest of stage 1 is pel analyze DIR's.
	LoadOnly bool
	// OnCreated, when set, is called once the inputs are checked and the run directory
	// holds its contract: where a command says what it writes.
	OnCreated func(dir string)
}

// Run drives the contract's workload against the target and writes the run directory.
// It returns the evidence even when the run failed (every task errored), with an error
// wrapping ErrRunFailed; bad input returns ErrBadInput before anything is written.
func Run(ctx context.Context, cfg Config) (*evidence.Evidence, error) {
	c := cfg.Contract
	if c == nil {
		return nil, badInput("no contract given")
	}
	if strings.TrimSpace(cfg.Target) == "" {
		return nil, badInput("no target given (--target URL)")
	}
	if cfg.OutDir == "" {
		return nil, badInput("no output directory given (-o DIR)")
	}
	if err := rundir.CheckOut(cfg.OutDir, "output"); err != nil {
		return nil, badInput("%v", err)
	}
	if err := checkStart(&cfg, time.Now()); err != nil {
		return nil, err
	}
	keyEnv := cfg.APIKeyEnv
	if keyEnv == "" {
		keyEnv = "OPENAI_API_KEY"
	}
	apiKey := os.Getenv(keyEnv)
	if cfg.APIKeyEnv != "" && apiKey == "" {
		return nil, badInput("--api-key-env %s: that environment variable is empty or unset", cfg.APIKeyEnv)
	}
	nonce := workload.NewNonce(c) // per-run prompt nonce unless prompts.reuse_across_runs
	if cfg.Shard.Count > 1 {
		nonce = workload.SharedNonce(c, cfg.StartAt.UnixNano()) // one run's shards share theirs
	}
	sched, err := workload.New(c, workload.Options{Nonce: nonce})
	if err != nil {
		return nil, badInput("contract %s: %v", c.File(), err)
	}
	sched = workload.Sharded(sched, cfg.Shard)
	hc := cfg.HTTPClient
	if hc == nil {
		hc = loadgen.DefaultHTTPClient()
		defer hc.CloseIdleConnections() // this run's keep-alive connections end with it
	}
	ready, err := loadgen.CheckReady(ctx, hc, cfg.Target, apiKey)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C during the readiness check says nothing about the target.
		return nil, &kindError{ErrRunFailed, fmt.Errorf("interrupted before the load started: nothing was sent and %s was not created", cfg.OutDir)}
	}
	if err != nil {
		return nil, badInput("%v", strings.TrimPrefix(err.Error(), loadgen.ErrNotReady.Error()+": "))
	}
	model := c.Model
	served, servedOK := loadgen.ServedModel(ready.Models, model)
	if model != "" && len(ready.Models) > 0 && servedOK {
		model = served
	} else if model != "" && len(ready.Models) > 0 {
		// A name the server does not list is refused before any load: most servers answer it
		// with 404 for every task. (llama.cpp lists its one model as the path given to -m:
		// its base name is accepted, see loadgen.ServedModel.)
		return nil, badInput("contract %s: model %q is not served by %s; it serves: %s (set model: to one of these, or omit it to use the first)",
			c.File(), model, scrub.URL(loadgen.BaseURL(cfg.Target)), scrub.Secret(strings.Join(ready.Models, ", "), apiKey))
	}
	if model == "" {
		if len(ready.Models) == 0 {
			return nil, badInput("the contract names no model and %s lists none (GET /v1/models): set model: in the contract", scrub.URL(loadgen.BaseURL(cfg.Target)))
		}
		model = ready.Models[0]
	}

	embModel := ""
	if cfg.EmbeddingsTarget != "" {
		er, err := loadgen.CheckReady(ctx, hc, cfg.EmbeddingsTarget, apiKey)
		if err != nil {
			return nil, badInput("--embeddings-target: %v", strings.TrimPrefix(err.Error(), loadgen.ErrNotReady.Error()+": "))
		}
		if len(er.Models) > 0 {
			embModel = er.Models[0]
		}
	}

	cr, err := newCanaryRun(ctx, hc, cfg, apiKey, model, hasChecks(c))
	if err != nil {
		return nil, err
	}
	ctl, err := profileControl(cfg, apiKey, hc) // profile.go
	if err != nil {
		return nil, err
	}
	engineConfig := scrubConfig(probeEngine(ctx, hc, cfg.Target, apiKey), apiKey) // secrets.go
	slotContext, _ := strconv.Atoi(engineConfig[ConfigSlotContext])

	// Input is valid: from here on the run directory exists.
	rd, err := rundir.Create(cfg.OutDir)
	if err != nil {
		return nil, badInput("%v", err)
	}
	rd.Contract = c
	w, err := begin(ctx, rd, c, cfg.Collectors, cr)
	if err != nil {
		return nil, err
	}
	if cfg.OnCreated != nil {
		cfg.OnCreated(cfg.OutDir)
	}

	client := loadgen.NewClient(loadgen.ClientConfig{
		BaseURL: cfg.Target, API: c.API, Model: model, APIKey: apiKey, Timeout: c.Timeout,
		HTTP: hc, KeepOutput: cfg.KeepText || hasChecks(c),
		EmbeddingsURL: cfg.EmbeddingsTarget, EmbeddingsModel: embModel,
	})
	prog := newProgress(cfg.Progress, cfg.IsTTY, c)
	// An OTLP receiver keeps only the spans of trace ids this run sends (the rest are
	// counted): the driver puts its prefix in front of every trace id.
	var tracePrefix *[8]byte
	for _, col := range cfg.Collectors {
		if tp, ok := col.(interface{ TracePrefix() [8]byte }); ok {
			p := tp.TracePrefix()
			tracePrefix = &p
			break
		}
	}
	var clock *evidence.ClockOffset
	clockWhy := ""
	if !cfg.StartAt.IsZero() {
		clock, clockWhy = probeClock(ctx, hc, cfg.Target, apiKey)
	}
	prof := beginProfile(ctx, c, ctl) // profile.go; nil without a window
	// The run's start, known before the driver starts: its schedule and stage 1's phases
	// both count from it.
	start := cfg.StartAt
	if start.IsZero() {
		start = time.Now()
	}
	// Why tasks failed, what the profiling window saw and a canary's candidate tasks are
	// gathered from every task record stage 1 sees.
	var fails failures
	var cand []record.Record
	observe := func(r *record.Record) {
		if cfg.Observe != nil {
			cfg.Observe(r)
		}
		fails.add(r)
		prof.observe(r)
		if cr != nil && r.Phase == record.PhaseCanary {
			cand = append(cand, *r)
		}
	}
	// A load-only run keeps stage 1's headline as its records are written (rundir.Online):
	// reading requests.jsonl back would cost the driver about an eighth of its CPU and
	// half its memory, at the end of every run.
	var online *rundir.Online
	write := w.Write
	if cfg.LoadOnly {
		online = rd.Online(start, observe)
		write = online.Sink(w.Write)
	}
	doer, sink, route := cr.wire(client, prof.sink(stampShard(flagContextShift(scrubbedSink(write, apiKey), slotContext), cfg.Shard)))
	drv := loadgen.NewDriver(loadgen.DriverConfig{
		Doer: doer,
		Retry: loadgen.RetryPolicy{
			MaxAttempts: c.Retry.MaxAttempts,
			ShouldRetry: c.Retry.ShouldRetry,
			Backoff:     c.Retry.Backoff,
			Budget:      c.Retry.RunBudget,
		},
		TaskBound:   c.TaskBound,
		MaxInFlight: c.MaxInFlight,
		Grace:       cfg.Grace,
		Warmup:      c.Warmup,
		Duration:    c.Duration,
		Start:       start,
		Judge:       c.Judge,
		JudgeStep:   c.JudgeStep,
		JudgeTask:   c.JudgeTask,
		KeepText:    cfg.KeepText,
		Sink:        sink,
		OnRecord:    prog.record,
		TracePrefix: tracePrefix,
		Route:       route,
	})
	prog.start(drv)
	res := drv.Run(ctx, cr.schedule(sched))
	prog.stop()
	prof.end(ctx, res.Start)

	notes, err := end(ctx, cfg.Collectors, cr, w, res.SinkErr)
	if err != nil {
		return nil, err
	}

	ev := evidence.New()
	ev.Run = evidence.Run{
		Target: scrub.URL(loadgen.BaseURL(cfg.Target)), Engine: cfg.Engine, Model: scrub.Secret(model, apiKey),
		StartedAt: res.Start, DurationS: res.End.Sub(res.Start).Seconds(), EngineConfig: engineConfig,
	}
	if !cfg.StartAt.IsZero() {
		ev.Run.Shard = &evidence.Shard{Index: cfg.Shard.Index, Count: cfg.Shard.Count, StartAt: cfg.StartAt, Clock: clock}
		if clock == nil {
			notes = append(notes, "this machine's clock was not compared with the target's: "+clockWhy)
		}
	}
	// Stage 1 streams requests.jsonl, so a run of any length ends in bounded memory.
	if online != nil {
		err = online.Stage1(ev)
	} else {
		_, err = rd.Stage1(ev, rundir.Options{Observe: observe})
	}
	if err != nil {
		return nil, badinput.Hide(err) // the file pel just wrote: the run failed, not its input
	}
	stage1Notes := ev.Run.Notes
	if rd.Torn != nil {
		torn := rundir.TornNote(rd.Torn)
		notes = append(notes, torn)
		stage1Notes = slices.DeleteFunc(stage1Notes, func(n string) bool { return n == torn })
	}
	completeness(ev, c, res, cr, rd, fails.cancelled)
	if res.Interrupted {
		notes = append(notes, fmt.Sprintf("run interrupted: arrivals stopped early; %d tasks still running (or waiting for a slot) after the %v grace were cancelled", fails.cancelled, graceOf(cfg.Grace)))
	}
	if ready.Via == "/health" {
		notes = append(notes, "readiness via /health (the target has no /v1/models)")
	}
	notes = append(notes, cr.finish(rd, c, cand, res.Start, res.End)...)
	notes = append(notes, prof.fill(ev)...)
	ev.Run.Notes = append(notes, stage1Notes...)
	for _, col := range cfg.Collectors {
		if err := col.Fill(ev, rd); err != nil {
			ev.Run.Notes = append(ev.Run.Notes, fmt.Sprintf("collector: %v", err))
		}
	}
	if err := rd.WriteEvidence(ev); err != nil {
		return ev, err
	}
	if err := fails.err(cfg.OutDir); err != nil {
		return ev, err
	}
	return ev, nil
}

// begin writes the new run directory's contract, creates its requests.jsonl and starts the
// collectors (the candidate's after the baseline's). When one step fails, what was started
// is stopped and what was written removed, so a failed start leaves no run behind.
func begin(ctx context.Context, d *rundir.Dir, c *contract.Contract, cols []Collector, cr *canaryRun) (*record.Writer, error) {
	var w *record.Writer
	var started []Collector
	fail := func(err error) (*record.Writer, error) {
		for _, col := range started {
			col.Stop(context.WithoutCancel(ctx))
		}
		if w != nil {
			w.Close()
		}
		d.Discard()
		return nil, err
	}
	if err := d.WriteContract(c.Raw()); err != nil {
		return fail(err)
	}
	var err error
	if w, err = d.CreateRequests(); err != nil {
		return fail(err)
	}
	// Until the run writes its evidence, evidence.json says the run has not finished: a
	// process that crashed, was killed or stopped at a second Ctrl-C leaves a directory
	// every reader (analyze, report, compare, sweep, merge) knows is cut.
	if err := d.WriteEvidence(unfinishedEvidence(time.Now())); err != nil {
		return fail(err)
	}
	var cand []Collector
	if cr != nil {
		cand = cr.cfg.Collectors
	}
	for i, col := range slices.Concat(cols, cand) {
		if err := col.Start(ctx, d); err != nil {
			if i >= len(cols) {
				err = fmt.Errorf("candidate: %w", err)
			}
			return fail(badInput("starting collector: %v", err))
		}
		started = append(started, col)
	}
	return w, nil
}

// end stops the collectors (the candidate's after the baseline's) and closes
// requests.jsonl once the load is over; what a collector could not stop cleanly becomes a
// note, a record that could not be written the run's error.
func end(ctx context.Context, cols []Collector, cr *canaryRun, w *record.Writer, sinkErr error) ([]string, error) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var notes []string
	for _, col := range cols {
		if err := col.Stop(stopCtx); err != nil {
			notes = append(notes, fmt.Sprintf("collector stop: %v", err))
		}
	}
	notes = append(notes, cr.stop(stopCtx)...)
	if err := w.Close(); err != nil && sinkErr == nil {
		sinkErr = err
	}
	if sinkErr != nil {
		return nil, fmt.Errorf("writing %s: %w", rundir.RequestsFile, sinkErr)
	}
	return notes, nil
}

func graceOf(g time.Duration) time.Duration {
	if g == 0 {
		return loadgen.DefaultGrace
	}
	return max(g, 0)
}

// Stage1 (re)computes the contract reference, the workload block and stage 1 of ev from
// the records, using ev.Run.StartedAt as the time origin.
func Stage1(ev *evidence.Evidence, c *contract.Contract, recs []record.Record) {
	recs = BaselineSide(recs) // an interleaved canary's candidate has evidence of its own
	rundir.ApplyStage1(ev, c, stats.Compute(recs, rundir.StatsOptions(c, ev.Run.StartedAt)))
}

// allFailed returns an ErrRunFailed error, in plain words, when tasks ran and none of them
// completed.
func allFailed(recs []record.Record, dir string) error {
	var f failures
	for i := range recs {
		f.add(&recs[i])
	}
	return f.err(dir)
}

// failures counts, task by task, what allFailed needs: whether any task completed, and why
// the others did not.
type failures struct {
	n, cancelled int
	ok           bool
	causes       map[string]int
	example      string
}

func (f *failures) add(r *record.Record) {
	f.n++
	if r.OK() {
		f.ok = true
		return
	}
	if r.Status == record.StatusCancelled {
		f.cancelled++
	}
	why := r.Status
	if r.HTTPStatus != 0 && r.Status == record.StatusHTTPError {
		why = fmt.Sprintf("HTTP %d", r.HTTPStatus)
	}
	if f.causes == nil {
		f.causes = map[string]int{}
	}
	f.causes[why]++
	if f.example == "" && r.Error != "" {
		f.example = "; first error: " + r.Error
	}
}

func (f *failures) err(dir string) error {
	if f.n == 0 || f.ok {
		return nil
	}
	if f.cancelled == f.n {
		return &kindError{ErrRunFailed, fmt.Errorf("the run was stopped before any request completed: all %d tasks were cancelled; records are in %s",
			f.n, filepath.Join(dir, rundir.RequestsFile))}
	}
	type kv struct {
		k string
		n int
	}
	var list []kv
	for k, n := range f.causes {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n > list[j].n || list[i].n == list[j].n && list[i].k < list[j].k })
	var parts []string
	for _, x := range list {
		parts = append(parts, fmt.Sprintf("%s ×%d", x.k, x.n))
	}
	return &kindError{ErrRunFailed, fmt.Errorf("every request failed: %d of %d tasks ended in error (%s)%s; records are in %s",
		f.n, f.n, strings.Join(parts, ", "), f.example, filepath.Join(dir, rundir.RequestsFile))}
}

func hasChecks(c *contract.Contract) bool {
	for _, t := range c.Tasks {
		if len(t.Checks) > 0 {
			return true
		}
	}
	return false
}
