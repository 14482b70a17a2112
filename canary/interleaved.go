package canary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// An interleaved canary run (pel run --canary URL) holds both sides of a comparison in one
// directory: the same schedule split by a seeded draw between the baseline and the
// candidate, in one time window. JudgeDir judges it with the same statistics, bounds and
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

// Result is the judgement of an interleaved canary run.
type Result struct {
	*compare.Result
	// Canary is the run's canary.json: scope, routing, triggers, sequential tests, stop.
	Canary *Log `json:"canary"`
	// WindowStart and WindowEnd bound the compared warm window (arrival times).
	WindowStart time.Time `json:"window_start,omitzero"`
	WindowEnd   time.Time `json:"window_end,omitzero"`
}

// IsDir reports whether dir is an interleaved canary run (it has canary.json).
func IsDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, LogFile))
	return err == nil
}

// JudgeDir reads an interleaved canary run directory and judges its candidate side
// against its baseline side, with compare's statistics. It streams requests.jsonl twice
// (the candidate's warm window, then both sides into their bounded summaries) and holds
// no task record.
func JudgeDir(dir string, o compare.Options) (*Result, error) {
	run, d, err := compare.OpenHead(dir)
	if err != nil {
		return nil, err
	}
	log, err := ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	warmup := time.Duration(log.WarmupS * float64(time.Second))
	// The compared warm window is the candidate's; the baseline's warm tasks outside it
	// (after a stop, say) ran under other conditions.
	var w0, w1 time.Time
	nCand := 0
	err = d.Each(func(r *record.Record) error {
		if !Candidate(r, log.StartedAt, warmup) {
			return nil
		}
		nCand++
		if r.Phase != record.PhaseWarm {
			return nil
		}
		if t := r.ScheduledAt; w0.IsZero() || t.Before(w0) {
			w0 = t
		}
		if t := r.ScheduledAt; t.After(w1) {
			w1 = t
		}
		return nil
	})
	if err != nil {
		return nil, badinput.Errorf("%v", err)
	}
	if nCand == 0 {
		return nil, badinput.Errorf("%s: no task went to the candidate (%d arrivals, share %g)", dir, log.Arrivals, log.Share)
	}
	bEv := run.Evidence
	if bEv != nil && log.TriggerSource == SourceRollbackFrom {
		cp := *bEv
		cp.Rollback = evidence.Rollback{Triggers: log.Triggers()}
		bEv = &cp
	}
	cEv, err := rundir.ReadEvidence(d.File(EvidenceFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, badinput.Errorf("%v", err)
	}
	b := run.Part(dir+" [baseline "+log.Baseline+"]", bEv)
	c := run.Part(dir+" [canary "+log.Candidate+"]", cEv)
	err = d.Each(func(r *record.Record) error {
		if Candidate(r, log.StartedAt, warmup) {
			return c.Add(r)
		}
		if r.Phase == record.PhaseWarm && (w0.IsZero() || r.ScheduledAt.Before(w0) || r.ScheduledAt.After(w1)) {
			return nil
		}
		return b.Add(r)
	})
	if err != nil {
		return nil, badinput.Errorf("%v", err)
	}
	if err := c.ReadEngine(d, MetricsFile); err != nil {
		return nil, err
	}
	bShare, cShare, wins, err := shares(b, c)
	if err != nil {
		return nil, err
	}
	b.Interleave(bShare, wins)
	c.Interleave(cShare, wins)
	res, err := compare.Compare(b, c, o)
	if err != nil {
		return nil, err
	}
	res.Method += fmt.Sprintf("; interleaved canary: baseline tasks in the candidate's window, goodput and cost over the shared window scaled by each side's share of its arrivals (candidate %.1f%%)", 100*cShare[record.PhaseWarm])
	if log.TriggerSource == SourceRollbackFrom {
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
	return &Result{Result: res, Canary: log, WindowStart: w0, WindowEnd: w1}, nil
}

// applyStop: a trigger the sequential test found breached rejects the candidate; its
// reason comes first. Not comparable stays not comparable (the mismatch may explain the
// breach too), with the breach stated.
func applyStop(res *compare.Result, log *Log) {
	crossed := log.Crossed()
	if len(crossed) == 0 {
		return
	}
	var why []string
	for _, t := range crossed {
		why = append(why, fmt.Sprintf("early stop: rollback trigger %s %s %.4g %s breached with confidence during the run (%d of %d candidate tasks had %s, the trigger allows %.3g%%, against %d of %d baseline tasks beside them; sequential tests at alpha %.3g, crossed at candidate task %d, %.1f s)",
			t.Signal, t.Op, t.Bound, t.Unit, t.Breaches, t.Tasks, t.Breach, t.P0*100, t.BaseBreaches, t.BaseTasks, t.Alpha, t.CrossedTask, t.CrossedAtS))
	}
	if res.Verdict == compare.NotComparable {
		res.Reasons = append(res.Reasons, why...)
		return
	}
	if res.Verdict != compare.Reject {
		res.Reasons = nil
		res.NeededTasks, res.NeededFor = 0, ""
	}
	res.Verdict = compare.Reject
	res.Reasons = append(why, res.Reasons...)
}

// shares are, per phase (cold and warm), each side's share of the phase's tasks and the
// window both sides share (first arrival to last end of either, seconds).
func shares(b, c *compare.Run) (bShare, cShare, wins map[string]float64, err error) {
	bShare, cShare, wins = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, p := range []string{record.PhaseCold, record.PhaseWarm} {
		nb, b0, b1, err := b.PhaseSpan(p)
		if err != nil {
			return nil, nil, nil, err
		}
		nc, c0, c1, err := c.PhaseSpan(p)
		if err != nil {
			return nil, nil, nil, err
		}
		n := nb + nc
		if n == 0 {
			continue
		}
		bShare[p], cShare[p] = float64(nb)/float64(n), float64(nc)/float64(n)
		switch {
		case nb == 0:
			b0, b1 = c0, c1
		case nc > 0:
			if c0.Before(b0) {
				b0 = c0
			}
			if c1.After(b1) {
				b1 = c1
			}
		}
		wins[p] = b1.Sub(b0).Seconds()
	}
	return bShare, cShare, wins, nil
}
