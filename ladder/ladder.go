package ladder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/otlp"
	"github.com/pel-ladder/pel/profiling"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/trace"
)

// ErrBadInput marks a run directory or trace that cannot be read (exit 2): the program's
// one bad-input kind.
var ErrBadInput = badinput.ErrBadInput

// Options for Analyze.
type Options struct {
	// Traces are profiler traces (Kineto JSON(.gz) or Nsight Systems SQLite) to add.
	Traces []string
	// NsysOnly lists traces that must be Nsight Systems exports (pel analyze --nsys).
	NsysOnly map[string]bool
	// Seed for the rollback bootstrap (default 1).
	Seed uint64
	// SampleBytes bounds the task records held per phase (rundir.Options; 0: the default).
	SampleBytes int64
	// Context ends the reading of Traces (Ctrl-C); nil: never.
	Context context.Context
	// EachTaskBudget receives every task's own time budget (diagnose.Options).
	EachTaskBudget func(diagnose.TaskSplit)
}

// Analyze opens the run directory dir (rundir.Open) and analyses it (AnalyzeDir); a
// directory that cannot be used wraps ErrBadInput.
func Analyze(dir string, o Options) (*evidence.Evidence, []record.Record, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, nil, tagBad(err)
	}
	return AnalyzeDir(d, o)
}

// AnalyzeDir rebuilds d's evidence and diagnoses it (d as rundir.Open found it). Stage 1 always comes from
// requests.jsonl; stages 2, 4 and 5 from metrics.jsonl when present (else they are kept from
// evidence.json); the OTLP span signals from spans.jsonl when present; each trace in
// o.Traces replaces the signals of an earlier analysis of the same file, and traces analysed
// before are kept. Nothing is written: see WriteRun.
//
// The directory's files are read once each, requests.jsonl as a stream (package rundir):
// the records returned are every task, or for a run longer than memory holds the seeded
// sample the diagnosis read (with passes over every task for what a sample cannot say).
func AnalyzeDir(d *rundir.Dir, o Options) (*evidence.Evidence, []record.Record, error) {
	c := d.Contract
	ev := d.Evidence
	if ev == nil {
		ev = evidence.New()
	}
	rs, err := d.Stage1(ev, rundir.Options{SampleBytes: o.SampleBytes, JoinSets: diagnose.JoinSets, Views: diagnose.ViewSets})
	if err != nil {
		return nil, nil, tagBad(err)
	}
	if d.Torn != nil {
		ev.Run.AddGap(evidence.GapTornLine, rundir.TornNote(d.Torn))
	}
	recs := rs.Tasks
	tasks := diagnose.Tasks{All: recs, Views: rs.Views}
	if !rs.Complete {
		tasks = diagnose.Tasks{All: recs, Sampled: true, Total: rs.Total, NonCancelled: rs.NonCancelled, Joins: rs.Joins, Views: rs.Views, EachRejected: d.EachRejected}
	}
	var results []*trace.Result
	replaced := map[string]bool{}
	for _, p := range o.Traces {
		ctx := o.Context
		if ctx == nil {
			ctx = context.Background()
		}
		r, err := trace.AnalyzeContext(ctx, p, trace.DefaultOptions())
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
		if o.NsysOnly[p] && !strings.HasPrefix(r.Source, "nsys:") {
			return nil, nil, fmt.Errorf("%w: --nsys %s: not an Nsight Systems SQLite export (give a Kineto trace with --trace)", ErrBadInput, p)
		}
		results = append(results, r)
		replaced[r.Source] = true
	}
	haveMetrics, err := d.Has(rundir.MetricsFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	haveSpans, err := d.Has(rundir.SpansFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	// Keep a signal unless its source is about to be recomputed.
	keep := func(src string) bool {
		if replaced[src] {
			return false
		}
		if isTraceSource(src) {
			return true
		}
		if src == otlp.Source {
			return !haveSpans
		}
		return !haveMetrics
	}
	for i := range ev.Stages {
		st := &ev.Stages[i]
		if st.Stage == evidence.StageRequestTrace {
			continue
		}
		sigs := st.Signals[:0]
		for _, s := range st.Signals {
			if keep(s.Source) {
				sigs = append(sigs, s)
			}
		}
		st.Signals = sigs
		if haveMetrics {
			st.Series, st.Notes = nil, nil
		}
		var srcs []string
		for _, s := range st.Sources {
			if keep(s) {
				srcs = append(srcs, s)
			}
		}
		st.Sources = srcs
		if len(st.Signals) == 0 {
			st.Status = evidence.StatusMissing
		}
	}
	var kept []evidence.Finding
	for _, f := range ev.Findings {
		if len(f.Evidence) > 0 && replaced[f.Evidence[0].Source] {
			continue // a finding of a trace analysed again
		}
		kept = append(kept, f)
	}
	ev.Findings = kept
	if haveMetrics {
		if err := scrape.FillFromDir(ev, d, rundir.MetricsFile, ""); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
	}
	if haveSpans {
		if err := otlp.FillFromDir(ev, d); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
		if tasks.Spans, err = otlp.EngineSpans(d, recs); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrBadInput, err)
		}
	}
	for _, r := range results {
		trace.FillEvidence(ev, r)
	}
	profiling.NoteTrace(ev) // a profiling window's trace says it was taken under the profiler
	dopts := diagnose.OptionsFor(c)
	dopts.Seed = o.Seed
	dopts.EachTaskBudget = o.EachTaskBudget
	dopts.Stage1 = rundir.StatsOptions(c, ev.Run.StartedAt)
	diagnose.DiagnoseTasks(ev, tasks, dopts)
	return ev, recs, nil
}

func isTraceSource(s string) bool {
	return strings.HasPrefix(s, "kineto:") || strings.HasPrefix(s, "nsys:")
}

func tagBad(err error) error {
	if errors.Is(err, rundir.ErrBadInput) || errors.Is(err, runner.ErrBadInput) || errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	return err
}

// WriteRun writes evidence.json and report.html into d (0600, each atomically; a link
// planted at either name, or at any temporary name, is never followed).
func WriteRun(d *rundir.Dir, ev *evidence.Evidence) error {
	if err := d.WriteEvidence(ev); err != nil {
		return err
	}
	return d.Write(rundir.ReportFile, func(w io.Writer) error { return report.HTML(w, ev) })
}
