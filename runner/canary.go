package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/internal/version"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/workload"
)

// Canary makes Run an interleaved canary run (pel run --target BASE --canary URL): every
// arrival of the one seeded schedule goes to the candidate with the contract's canary share
// (or Share) and to the baseline otherwise, in the same time window. The candidate's tasks
// are recorded with phase canary; every record names its target. The run directory keeps
// the sides apart: evidence.json and metrics.jsonl are the baseline's (the candidate's tasks
// never enter them), canary-evidence.json and canary-metrics.jsonl the candidate's, and
// canary.json the routing, the triggers, each sequential test and the stop.
type Canary struct {
	Target string
	// Share overrides the contract's canary.share when > 0.
	Share float64
	// Collectors sample the candidate (their file is canary.MetricsFile).
	Collectors []Collector
	// Triggers, when set, are the rollback triggers the early stop tests, fixed before the
	// run (from RollbackFrom's evidence.json); nil derives them from this run's baseline
	// side once it has canary.FreezeTasks warm tasks.
	Triggers     []evidence.Trigger
	RollbackFrom string
}

// canaryRun is a canary run in progress; a nil *canaryRun is a plain run, and every
// method leaves that run as it was.
type canaryRun struct {
	cfg          *Canary
	scope        contract.Canary
	client       *loadgen.Client
	baseTarget   string
	target       string // candidate, without credentials
	model        string
	engineConfig map[string]string
	router       *canary.Router
	monitor      *canary.Monitor
}

// newCanaryRun checks the candidate (ready, serves the model) before anything is written.
func newCanaryRun(ctx context.Context, hc *http.Client, cfg Config, apiKey, baseModel string, hasChecks bool) (*canaryRun, error) {
	cc := cfg.Canary
	if cc == nil {
		return nil, nil
	}
	c := cfg.Contract
	if strings.TrimSpace(cc.Target) == "" {
		return nil, badInput("--canary: no candidate URL given")
	}
	scope := c.Canary
	if cc.Share > 0 {
		scope.Share = cc.Share
	}
	if !(scope.Share > 0 && scope.Share < 1) {
		return nil, badInput("--canary-share %v: want a probability strictly between 0 and 1 (the rest goes to the baseline)", scope.Share)
	}
	ready, err := loadgen.CheckReady(ctx, hc, cc.Target, apiKey)
	if err != nil {
		return nil, badInput("--canary: %v", strings.TrimPrefix(err.Error(), loadgen.ErrNotReady.Error()+": "))
	}
	model := c.Model
	shown := scrub.URL(loadgen.BaseURL(cc.Target))
	served, servedOK := loadgen.ServedModel(ready.Models, model)
	switch {
	case model != "" && len(ready.Models) > 0 && servedOK:
		model = served
	case model != "" && len(ready.Models) > 0:
		return nil, badInput("contract %s: model %q is not served by the candidate %s; it serves: %s", c.File(), model, shown, strings.Join(ready.Models, ", "))
	case model == "" && len(ready.Models) > 0:
		model = ready.Models[0]
	case model == "":
		model = baseModel
	}
	cr := &canaryRun{cfg: cc, scope: scope, baseTarget: scrub.URL(loadgen.BaseURL(cfg.Target)), target: shown, model: model,
		engineConfig: probeEngine(ctx, hc, cc.Target, apiKey)}
	cr.client = loadgen.NewClient(loadgen.ClientConfig{
		BaseURL: cc.Target, API: c.API, Model: model, APIKey: apiKey, Timeout: c.Timeout,
		HTTP: hc, KeepOutput: cfg.KeepText || hasChecks, EmbeddingsURL: cfg.EmbeddingsTarget,
	})
	cr.router = canary.NewRouter(c.Seed, scope, nil)
	src := canary.SourceBaselineSide
	if cc.Triggers != nil {
		src = canary.SourceRollbackFrom
	}
	cr.monitor = canary.NewMonitor(canary.MonitorConfig{Router: cr.router, EarlyStop: scope.EarlyStop, Alpha: scope.Alpha,
		Warmup: c.Warmup, Triggers: cc.Triggers, Source: src})
	return cr, nil
}

// schedule ends the schedule when the canary stops: the run measures both sides in one
// window, and after the stop there is no candidate left to measure (arrivals end, tasks in
// flight finish as at the schedule's end).
func (cr *canaryRun) schedule(s workload.Schedule) workload.Schedule {
	if cr == nil {
		return s
	}
	return &stoppable{Schedule: s, r: cr.router}
}

type stoppable struct {
	workload.Schedule
	r *canary.Router
}

func (s *stoppable) Next() (workload.Request, bool) {
	if s.r.Stopped() != nil {
		return workload.Request{}, false
	}
	return s.Schedule.Next()
}

func (cr *canaryRun) stop(ctx context.Context) []string {
	if cr == nil {
		return nil
	}
	var notes []string
	for _, col := range cr.cfg.Collectors {
		if err := col.Stop(ctx); err != nil {
			notes = append(notes, fmt.Sprintf("candidate collector stop: %v", err))
		}
	}
	return notes
}

// wire returns the driver's doer, sink and router: the baseline's own for a plain run.
func (cr *canaryRun) wire(base loadgen.Doer, sink func(*record.Record) error) (loadgen.Doer, func(*record.Record) error, func(*workload.Request)) {
	if cr == nil {
		return base, sink, nil
	}
	split := &loadgen.SplitDoer{Base: base, Canary: cr.client, BaseTarget: cr.baseTarget, CanaryTarget: cr.target}
	return split, func(r *record.Record) error {
		if r.Target == "" {
			r.Target = cr.baseTarget
			if r.Phase == record.PhaseCanary {
				r.Target = cr.target
			}
		}
		err := sink(r)
		cr.monitor.Observe(r)
		return err
	}, cr.router.Route
}

// finish writes canary.json and the candidate's evidence (stage 1 of its tasks, split
// cold/warm at the contract's warm-up, and its engine's metrics). Failures become notes.
func (cr *canaryRun) finish(dir *rundir.Dir, c *contract.Contract, recs []record.Record, start, end time.Time) []string {
	if cr == nil {
		return nil
	}
	var notes []string
	log := canary.NewLog(cr.baseTarget, cr.target, c.Seed, cr.scope, c.Warmup, start, cr.router, cr.monitor, sourceOf(cr.cfg), cr.cfg.RollbackFrom)
	if err := dir.Write(canary.LogFile, log.Write); err != nil {
		notes = append(notes, fmt.Sprintf("writing %s: %v", canary.LogFile, err))
	}
	_, cand := canary.Sides(recs, start, c.Warmup)
	ev := evidence.New()
	ev.Run = evidence.Run{Target: cr.target, Model: cr.model, StartedAt: start, DurationS: end.Sub(start).Seconds(), EngineConfig: cr.engineConfig,
		Notes: []string{fmt.Sprintf("candidate side of an interleaved canary run against %s (share %g): its tasks only, split cold/warm at the contract's warm-up", cr.baseTarget, cr.scope.Share)}}
	Stage1(ev, c, cand)
	for _, col := range cr.cfg.Collectors {
		if err := col.Fill(ev, dir); err != nil {
			ev.Run.Notes = append(ev.Run.Notes, fmt.Sprintf("collector: %v", err))
		}
	}
	ev.PelVersion = version.Read().String()
	if err := dir.Write(canary.EvidenceFile, ev.Encode); err != nil {
		notes = append(notes, fmt.Sprintf("writing %s: %v", canary.EvidenceFile, err))
	}
	if s := log.Stop; s != nil {
		notes = append(notes, fmt.Sprintf("canary stopped at %.1f s: %s", s.AtS, s.Reason))
	}
	return notes
}

func sourceOf(cc *Canary) string {
	if cc.Triggers != nil {
		return canary.SourceRollbackFrom
	}
	return canary.SourceBaselineSide
}

// BaselineSide drops an interleaved run's candidate tasks (phase canary): a run's own
// evidence is its baseline's.
func BaselineSide(recs []record.Record) []record.Record {
	for i := range recs {
		if recs[i].Phase == record.PhaseCanary {
			out := make([]record.Record, 0, len(recs))
			for _, r := range recs {
				if r.Phase != record.PhaseCanary {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return recs
}
