package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// An interleaved canary run (pel run --canary URL) holds both sides of a comparison in one
// directory: the same schedule split by a seeded draw between the baseline and the
// candidate, in one time window. CanaryDir judges it with the same statistics, bounds and
// comparability checks as a two-run comparison, with three differences:
//
//   - same window: the baseline's warm tasks are those scheduled within the candidate's
//     warm window (its first to its last warm task's arrival); cold (the contract's
//     warm-up, for both sides at once) is compared apart, as always;
//   - the candidate's share scaled: goodput and cost per accepted task are computed over the
//     window both sides share (first arrival to last end of either), as if each side had
//     served every arrival of it (the window is multiplied by the side's share of the
//     arrivals), so a 10% canary's goodput reads like its baseline's and the two differ
//     by acceptance alone;
//   - the sequential early stop (canary.json): a trigger breached with confidence during
//     the run rejects the candidate, whatever the fixed-sample checks at the end say (that
//     test holds its false-alarm rate at any stopping time; the end-of-run checks on the
//     few tasks a stopped canary got would only be inconclusive).

// CanaryResult is the judgement of an interleaved canary run.
type CanaryResult struct {
	*Result
	// Canary is the run's canary.json: scope, routing, triggers, sequential tests, stop.
	Canary *canary.Log `json:"canary"`
	// WindowStart and WindowEnd bound the compared warm window (arrival times).
	WindowStart time.Time `json:"window_start,omitzero"`
	WindowEnd   time.Time `json:"window_end,omitzero"`
}

// IsCanaryDir reports whether dir is an interleaved canary run (it has canary.json).
func IsCanaryDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, canary.LogFile))
	return err == nil
}

// CanaryDir loads an interleaved canary run directory and judges its candidate side
// against its baseline side.
func CanaryDir(dir string, o Options) (*CanaryResult, error) {
	run, err := Load(dir)
	if err != nil {
		return nil, err
	}
	log, err := canary.ReadFile(filepath.Join(dir, canary.LogFile))
	if err != nil {
		return nil, badInput("%v", err)
	}
	warmup := time.Duration(log.WarmupS * float64(time.Second))
	baseAll, cand := canary.Sides(run.Records, log.StartedAt, warmup)
	if len(cand) == 0 {
		return nil, badInput("%s: no task went to the candidate (%d arrivals, share %g)", dir, log.Arrivals, log.Share)
	}
	// The compared warm window is the candidate's; the baseline's warm tasks outside it
	// (after a stop, say) ran under other conditions.
	var w0, w1 time.Time
	for i := range cand {
		if cand[i].Phase != record.PhaseWarm {
			continue
		}
		if t := cand[i].ScheduledAt; w0.IsZero() || t.Before(w0) {
			w0 = t
		}
		if t := cand[i].ScheduledAt; t.After(w1) {
			w1 = t
		}
	}
	var base []record.Record
	for _, r := range baseAll {
		if r.Phase == record.PhaseWarm && (w0.IsZero() || r.ScheduledAt.Before(w0) || r.ScheduledAt.After(w1)) {
			continue
		}
		base = append(base, r)
	}
	count := func(rs []record.Record) map[string]int {
		m := map[string]int{}
		for _, r := range rs {
			m[r.Phase]++
		}
		return m
	}
	nb, nc := count(base), count(cand)
	bShare, cShare, wins := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, p := range []string{record.PhaseCold, record.PhaseWarm} {
		if n := nb[p] + nc[p]; n > 0 {
			bShare[p], cShare[p] = float64(nb[p])/float64(n), float64(nc[p])/float64(n)
			var both []*record.Record
			for _, rs := range [][]record.Record{base, cand} {
				for i := range rs {
					if rs[i].Phase == p {
						both = append(both, &rs[i])
					}
				}
			}
			a, b := window(both)
			wins[p] = b.Sub(a).Seconds()
		}
	}

	bEv := run.Evidence
	if bEv != nil && log.TriggerSource == canary.SourceRollbackFrom {
		cp := *bEv
		cp.Rollback = evidence.Rollback{Triggers: log.Triggers()}
		bEv = &cp
	}
	cEv, err := rundir.ReadEvidence(filepath.Join(dir, canary.EvidenceFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, badInput("%v", err)
	}
	cFacts, err := engineFactsIn(&rundir.Dir{Path: dir}, canary.MetricsFile)
	if err != nil {
		return nil, badInput("%v", err)
	}
	b := &Run{Dir: dir + " [baseline " + log.Baseline + "]", Contract: run.Contract, Evidence: bEv, Records: base, engine: run.engine, shares: bShare, windows: wins}
	c := &Run{Dir: dir + " [canary " + log.Candidate + "]", Contract: run.Contract, Evidence: cEv, Records: cand, engine: cFacts, shares: cShare, windows: wins}
	res, err := Compare(b, c, o)
	if err != nil {
		return nil, err
	}
	res.Method += fmt.Sprintf("; interleaved canary: baseline tasks in the candidate's window, goodput and cost over the shared window scaled by each side's share of its arrivals (candidate %.1f%%)", 100*cShare[record.PhaseWarm])
	if log.TriggerSource == canary.SourceRollbackFrom {
		const was = "rollback trigger (base evidence.json)"
		now := "rollback trigger (--rollback-from " + log.RollbackFrom + ")"
		for i := range res.Triggers {
			res.Triggers[i].Source = now
		}
		for i := range res.Reasons {
			res.Reasons[i] = strings.ReplaceAll(res.Reasons[i], was, now)
		}
	}
	applyStop(res, log)
	return &CanaryResult{Result: res, Canary: log, WindowStart: w0, WindowEnd: w1}, nil
}

// applyStop: a trigger the sequential test found breached rejects the candidate; its
// reason comes first. Not comparable stays not comparable (the mismatch may explain the
// breach too), with the breach stated.
func applyStop(res *Result, log *canary.Log) {
	crossed := log.Crossed()
	if len(crossed) == 0 {
		return
	}
	var why []string
	for _, t := range crossed {
		why = append(why, fmt.Sprintf("early stop: rollback trigger %s %s %.4g %s breached with confidence during the run (%d of %d candidate tasks had %s, the trigger allows %.3g%%, against %d of %d baseline tasks beside them; sequential tests at alpha %.3g, crossed at candidate task %d, %.1f s)",
			t.Signal, t.Op, t.Bound, t.Unit, t.Breaches, t.Tasks, t.Breach, t.P0*100, t.BaseBreaches, t.BaseTasks, t.Alpha, t.CrossedTask, t.CrossedAtS))
	}
	if res.Verdict == NotComparable {
		res.Reasons = append(res.Reasons, why...)
		return
	}
	if res.Verdict != Reject {
		res.Reasons = nil
		res.NeededTasks, res.NeededFor = 0, ""
	}
	res.Verdict = Reject
	res.Reasons = append(why, res.Reasons...)
}

// CanaryText writes the canary's own account (scope, routing, triggers, each sequential
// test, the stop) and then the comparison as Text does.
func CanaryText(w io.Writer, r *CanaryResult) error {
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
			state := "holds"
			if t.Crossed {
				state = fmt.Sprintf("BREACHED at candidate task %d (%.1f s)", t.CrossedTask, t.CrossedAtS)
			}
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
	return Text(w, r.Result)
}

// interleavedPreconditions: in an interleaved run one load generator sent both sides'
// tasks in one window, each arrival's side drawn at random, so its lateness falls on both
// sides alike and a difference between them is sampling noise, not a busier client.
func interleavedPreconditions(ps []Precondition) {
	for i := range ps {
		if p := &ps[i]; p.Name == PreLateness && p.Known && !p.OK {
			p.OK, p.Blocking = true, false
			p.Reason = "one load generator sent both sides' tasks in one window, each arrival's side drawn at random: its lateness falls on both sides alike, and the difference shown is sampling noise, not a busier client"
		}
	}
}

// canaryWindow sets the side's goodput window to the window both sides of an interleaved
// run share, times the side's share of its arrivals: goodput then reads as if the side
// had served every arrival, and differs between the sides by acceptance alone. 0 leaves
// the side's own window.
func (s *side) canaryWindow(window, share float64) {
	if window > 0 && share > 0 && share <= 1 {
		s.windowS = window * share
	}
}

// CanaryJSON writes the result as indented JSON (the comparison's fields, then canary).
func CanaryJSON(w io.Writer, r *CanaryResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
