package canary

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/record"
)

// Files an interleaved canary run adds to its run directory. requests.jsonl holds both
// sides (the candidate's tasks in phase canary, every task with its target); metrics.jsonl
// and evidence.json are the baseline's, as in any run.
const (
	// LogFile says the directory is an interleaved canary run: its scope, routing, triggers,
	// each sequential test and the stop.
	LogFile = "canary.json"
	// MetricsFile holds the candidate engine's /metrics samples (pel run --canary-metrics).
	MetricsFile = "canary-metrics.jsonl"
	// EvidenceFile is the candidate side's evidence: its tasks split cold/warm at the
	// contract's warm-up like any run's, and its engine's metrics.
	EvidenceFile = "canary-evidence.json"
)

// Method states the sequential test, for the log and the reports.
const Method = "per trigger, two mixture SPRTs on per-task breaches in schedule order, both of which must reject: the candidate's breach probability is over the trigger's allowance, and the breaches of both sides fall on the candidate more often than its share (no worse than the baseline beside it is the null); Ville's inequality bounds each test's false alarms at any number of looks by the trigger's alpha, and the run's alpha is split evenly over the tested triggers"

// Log is canary.json.
type Log struct {
	// Baseline and Candidate are the two targets (base URLs without credentials).
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Scope, as run: share (after --canary-share), limits, early stop and its alpha.
	Share        float64 `json:"share"`
	MaxDurationS float64 `json:"max_duration_s,omitempty"`
	MaxTasks     int     `json:"max_tasks,omitempty"`
	EarlyStop    bool    `json:"early_stop"`
	Alpha        float64 `json:"alpha"`
	// Seed of the routing draw (the contract's) and how it routes.
	Seed    uint64 `json:"seed"`
	Routing string `json:"routing"`
	// StartedAt is the schedule's origin (record ScheduledAt − StartedAt is an arrival's
	// offset); WarmupS the contract's warm-up: candidate tasks scheduled before it are the
	// candidate's cold phase.
	StartedAt time.Time `json:"started_at"`
	WarmupS   float64   `json:"warmup_s"`
	// Arrivals routed, and how many went to the candidate.
	Arrivals    int `json:"arrivals"`
	CanaryTasks int `json:"canary_tasks"`
	// TriggerSource: SourceBaselineSide or SourceRollbackFrom (+ RollbackFrom, the
	// directory). Frozen: the triggers were set (derived after FrozenAfter warm baseline
	// tasks, at FrozenAtS); otherwise NotFrozen says why.
	TriggerSource string  `json:"trigger_source"`
	RollbackFrom  string  `json:"rollback_from,omitempty"`
	Frozen        bool    `json:"frozen"`
	FrozenAfter   int     `json:"frozen_after,omitempty"`
	FrozenAtS     float64 `json:"frozen_at_s,omitempty"`
	NotFrozen     string  `json:"not_frozen,omitempty"`
	Method        string  `json:"method"`
	Tests         []Test  `json:"tests"`
	// Stop: when and why the run stopped sending to the candidate (nil: it never did).
	Stop *Stop `json:"stop,omitempty"`
}

// Routing describes the routing rule for a scope.
func Routing(share float64) string {
	return fmt.Sprintf("arrival k of the seeded schedule goes to the candidate when Draw(seed, k) < %g (splitmix64 of seed and k, no clock), within the scope and until a stop; the rest go to the baseline, in the same time window", share)
}

// NewLog assembles canary.json at the end of a run.
func NewLog(baseline, candidate string, seed uint64, scope contract.Canary, warmup time.Duration, start time.Time, rt *Router, m *Monitor, source, rollbackFrom string) *Log {
	l := &Log{Baseline: baseline, Candidate: candidate, Share: scope.Share, MaxDurationS: scope.MaxDuration.Seconds(), MaxTasks: scope.MaxTasks,
		EarlyStop: scope.EarlyStop, Alpha: scope.Alpha, Seed: seed, Routing: Routing(scope.Share), StartedAt: start,
		WarmupS: warmup.Seconds(), TriggerSource: source, RollbackFrom: rollbackFrom, Method: Method, Tests: []Test{}}
	l.Arrivals, l.CanaryTasks = rt.Counts()
	tests, frozen, at, after, why := m.Tests()
	l.Frozen, l.FrozenAfter = frozen, after
	if frozen && after > 0 {
		l.FrozenAtS = figure.Round3(at.Sub(start).Seconds())
	}
	if !frozen {
		l.NotFrozen = why
	}
	for i := range tests {
		if !tests[i].CrossedAt.IsZero() {
			tests[i].CrossedAtS = figure.Round3(tests[i].CrossedAt.Sub(start).Seconds())
		}
	}
	if tests != nil {
		l.Tests = tests
	}
	if s := rt.Stopped(); s != nil {
		s.AtS = figure.Round3(s.At.Sub(start).Seconds())
		l.Stop = s
	}
	return l
}

// Crossed returns the tests whose trigger was breached with confidence.
func (l *Log) Crossed() []Test {
	var out []Test
	for _, t := range l.Tests {
		if t.Crossed {
			out = append(out, t)
		}
	}
	return out
}

// Triggers returns the triggers the tests ran on.
func (l *Log) Triggers() []evidence.Trigger {
	out := make([]evidence.Trigger, len(l.Tests))
	for i, t := range l.Tests {
		out[i] = t.Trigger
	}
	return out
}

// Write encodes the log as indented JSON.
func (l *Log) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}

// WriteFile writes canary.json atomically (0600).
func (l *Log) WriteFile(path string) error { return evidence.WriteAtomic(path, l.Write) }

// ReadFile reads canary.json.
func ReadFile(path string) (*Log, error) {
	f, err := safefile.OpenNamed(path) // a FIFO would block the open
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var l Log
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &l, nil
}

// Sides splits an interleaved run's task records (record.ReadFile's): the baseline's as
// they are, and the candidate's relabelled as Candidate relabels them.
func Sides(recs []record.Record, start time.Time, warmup time.Duration) (base, cand []record.Record) {
	for _, r := range recs {
		if Candidate(&r, start, warmup) {
			cand = append(cand, r)
		} else {
			base = append(base, r)
		}
	}
	return base, cand
}

// Candidate reports whether r is one of the candidate's tasks (phase canary), and relabels
// it cold or warm by its arrival's offset from start against the contract's warm-up (a
// multi-step task's calls with it, in a copy of them), so each side has the phases any run
// has and like is compared with like. A baseline task is left as it is.
func Candidate(r *record.Record, start time.Time, warmup time.Duration) bool {
	if r.Phase != record.PhaseCanary {
		return false
	}
	r.Phase = record.PhaseWarm
	if r.ScheduledAt.Sub(start) < warmup {
		r.Phase = record.PhaseCold
	}
	if ss := r.StepRecords(); len(ss) > 0 {
		cp := append([]record.Record(nil), ss...)
		for i := range cp {
			cp[i].Phase = r.Phase
		}
		r.AttachSteps(cp)
	}
	return true
}
