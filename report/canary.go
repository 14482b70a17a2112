package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/internal/figure"
)

// InterleavedText writes an interleaved canary run's judgement: the canary's own account
// (scope, routing, triggers, each sequential test, the stop), then the comparison as
// CompareText does.
func InterleavedText(w io.Writer, r *canary.Result) error {
	l := r.Canary
	fmt.Fprintf(w, "pel compare: interleaved canary run\n  baseline:  %s\n  candidate: %s  (share %g: %d of %d arrivals; seeded draw, contract seed %d)\n",
		l.Baseline, l.Candidate, l.Share, l.CanaryTasks, l.Arrivals, l.Seed)
	if !r.WindowStart.IsZero() {
		fmt.Fprintf(w, "  compared warm window: %.1f s to %.1f s of the run (the candidate's first to last warm arrival)\n",
			r.WindowStart.Sub(l.StartedAt).Seconds(), r.WindowEnd.Sub(l.StartedAt).Seconds())
	}
	scope := "scope: no limit"
	switch {
	case l.MaxTasks > 0 && l.MaxDurationS > 0:
		scope = fmt.Sprintf("scope: at most %d tasks and %gs", l.MaxTasks, l.MaxDurationS)
	case l.MaxTasks > 0:
		scope = fmt.Sprintf("scope: at most %d tasks", l.MaxTasks)
	case l.MaxDurationS > 0:
		scope = fmt.Sprintf("scope: at most %gs", l.MaxDurationS)
	}
	stop := "off"
	if l.EarlyStop {
		stop = fmt.Sprintf("on, false-alarm rate %g over the run and all triggers", l.Alpha)
	}
	fmt.Fprintf(w, "  %s; early stop %s\n", scope, stop)
	switch {
	case l.Frozen && l.TriggerSource == canary.SourceRollbackFrom:
		fmt.Fprintf(w, "  triggers: from %s, fixed before the run\n", l.RollbackFrom)
	case l.Frozen:
		fmt.Fprintf(w, "  triggers: derived from the run's baseline side after %d warm tasks (%.1f s), then fixed\n", l.FrozenAfter, l.FrozenAtS)
	default:
		fmt.Fprintf(w, "  triggers: none tested during the run (%s)\n", l.NotFrozen)
	}
	if len(l.Tests) > 0 {
		fmt.Fprintf(w, "  sequential tests (mixture SPRTs on per-task breaches in schedule order; a trigger is breached when both log-LRs reach the threshold):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "    trigger\tcandidate\tbaseline beside it\tlog-LR vs allowance\tlog-LR vs baseline\tthreshold\tstate\n")
		for _, t := range l.Tests {
			if !t.Tested {
				fmt.Fprintf(tw, "    %s %s %.4g %s\tnot tested: %s\t\t\t\t\t\n", t.Signal, t.Op, t.Bound, t.Unit, t.Why)
				continue
			}
			state := testState(t)
			fmt.Fprintf(tw, "    %s %s %.4g %s\t%d of %d with %s (allowed %.3g%%)\t%d of %d\t%.2f\t%.2f\t%.2f (alpha %.3g)\t%s\n",
				t.Signal, t.Op, t.Bound, t.Unit, t.Breaches, t.Tasks, t.Breach, t.P0*100, t.BaseBreaches, t.BaseTasks, t.LogLR, t.VsBaselineLogLR, t.Threshold, t.Alpha, state)
		}
		tw.Flush()
	}
	if s := l.Stop; s != nil {
		fmt.Fprintf(w, "  STOPPED at %.1f s (%s, after %d candidate tasks): %s\n", s.AtS, s.Kind, s.CanaryTasks, s.Reason)
	} else {
		fmt.Fprintf(w, "  the canary ran to the end of the schedule\n")
	}
	fmt.Fprintln(w)
	return CompareText(w, r.Result)
}

// InterleavedJSON writes an interleaved canary run's judgement as indented JSON (the
// comparison's fields, then canary).
func InterleavedJSON(w io.Writer, r *canary.Result) error { return indented(w, r) }

// LiveText writes a live canary judgement (pel canary): sides, metric table, groups, triggers, verdict.
func LiveText(w io.Writer, r *canary.LiveResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "pel canary: %s to %s (%d intervals of %gs)\n", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339),
		int(r.End.Sub(r.Start).Seconds()/r.IntervalS+0.5), r.IntervalS)
	for _, s := range []struct {
		role string
		side canary.LiveSide
	}{{"baseline", r.Baseline}, {"candidate", r.Candidate}} {
		fmt.Fprintf(w, "  %-9s  %s: %s (%d replica(s), %s)\n", s.role, s.side.Selector, strings.Join(s.side.Endpoints, ", "), s.side.Replicas, figure.OrDash(s.side.Engine))
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "  WARNING: %s\n", wn)
	}
	fmt.Fprintf(w, "\n  method: %s\n\n", r.Method)
	fmt.Fprintf(tw, "  metric\tgroup\tbase mean\tcandidate mean\tchange\tCI of difference\tU-test p\tclass\n")
	for _, m := range r.Metrics {
		p := "-"
		if m.P != nil {
			p = fmt.Sprintf("%.3g", *m.P)
		}
		class := m.Class
		if m.Worse {
			class = strings.ToUpper(class) + " (worse)"
		}
		if m.Critical {
			class += ", critical"
		}
		fmt.Fprintf(tw, "  %s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Unit, m.Group, figure.Fmt(m.BaseMean), figure.Fmt(m.CandMean), figure.FmtPct(m.DeltaPct), figure.FmtCI(m.CILo, m.CIHi), p, class)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n  groups:")
	for _, g := range r.Groups {
		if g.Judged > 0 {
			fmt.Fprintf(w, "  %s %d/%d (weight %g)", g.Name, g.Passed, g.Judged, g.Weight)
		}
	}
	fmt.Fprintf(w, "\n  score: %.0f (reject under %.0f)\n", r.Score, canary.PassScore)
	if len(r.Triggers) > 0 {
		fmt.Fprintf(w, "\nrollback triggers (breach when value op bound), on the candidate's quantile over the window:\n")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range r.Triggers {
			fmt.Fprintf(tw, "  %s\t%s %s %.4g %s\tcandidate %s\tCI %s\t%s\n", strings.ToUpper(c.Status), c.Signal, c.Op, c.Bound, c.Unit, figure.Fmt(c.Candidate), figure.FmtCI(c.CILo, c.CIHi), c.Basis+c.Note)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nverdict: %s\n", VerdictText(r.Verdict))
	for _, why := range r.Reasons {
		fmt.Fprintf(w, "  - %s\n", why)
	}
	return nil
}

// LiveJSON writes a live canary judgement as indented JSON.
func LiveJSON(w io.Writer, r *canary.LiveResult) error { return indented(w, r) }

// CanaryRun summarises an interleaved run's canary.json (l) after the run in dir: routing,
// where the triggers came from, each sequential test, the stop, and how to judge it.
func CanaryRun(w io.Writer, l *canary.Log, dir string) {
	fmt.Fprintf(w, "\ncanary: %d of %d arrivals went to %s (share %g); the rest to %s\n", l.CanaryTasks, l.Arrivals, l.Candidate, l.Share, l.Baseline)
	switch {
	case l.Frozen && l.TriggerSource == canary.SourceRollbackFrom:
		fmt.Fprintf(w, "  triggers from %s (fixed before the run)\n", l.RollbackFrom)
	case l.Frozen:
		fmt.Fprintf(w, "  triggers derived from the baseline side's first %d warm tasks at %.1f s\n", l.FrozenAfter, l.FrozenAtS)
	default:
		fmt.Fprintf(w, "  no triggers to test: %s\n", l.NotFrozen)
	}
	for _, t := range l.Tests {
		if !t.Tested {
			continue
		}
		state := testState(t)
		fmt.Fprintf(w, "  %s %s %.4g %s: candidate %d of %d (%s), baseline %d of %d; log-LR %.2f vs the allowance, %.2f vs the baseline, threshold %.2f: %s\n",
			t.Signal, t.Op, t.Bound, t.Unit, t.Breaches, t.Tasks, t.Breach, t.BaseBreaches, t.BaseTasks, t.LogLR, t.VsBaselineLogLR, t.Threshold, state)
	}
	if s := l.Stop; s != nil {
		fmt.Fprintf(w, "  STOPPED at %.1f s (%s): %s\n", s.AtS, s.Kind, s.Reason)
	}
	fmt.Fprintf(w, "  judge it: pel compare %s\n", dir)
}

// testState is a sequential test's state: holds, or where it found its trigger breached.
func testState(t canary.Test) string {
	if t.Crossed {
		return fmt.Sprintf("BREACHED at candidate task %d (%.1f s)", t.CrossedTask, t.CrossedAtS)
	}
	return "holds"
}
