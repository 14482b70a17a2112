package diagnose

import (
	"math"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
)

// Multi-step tasks: every call has its own budget (its step record carries the call's own
// timings: ScheduledAt is when the call was due, so its lateness is its own), and the time
// between a call's end and the next call's due time is the plan's (think time and tool
// latency the contract sets) or, beyond the plan, the client's. The task's excess is found
// where it is over an objective: a call's own TTFT, ITL or TPOT, and the whole task's
// end-to-end time, which is split over every call's components and the waits between.

// multiStep adds a multi-step task's calls to a and charges its excess; it reports whether
// the task was over its bounds.
func (b *budgetCtx) multiStep(r *record.Record, a *acc, o *Options, missed objectiveSet, charge func(int, float64)) bool {
	steps := r.StepRecords()
	if len(steps) == 0 {
		return false
	}
	a.perCall = true
	calls := make([]*taskTime, len(steps))
	var agg [nComponents]float64
	var prevEnd time.Time
	for j := range steps {
		s := &steps[j]
		var t taskTime
		if s.OK() {
			if tt, ok := b.taskBudget(s); ok {
				t = tt
				calls[j] = &t
				o.eachTask(s, &t)
			}
		}
		if !prevEnd.IsZero() && !s.ScheduledAt.IsZero() && s.ScheduledAt.After(prevEnd) {
			gap := figure.Ms(s.ScheduledAt.Sub(prevEnd))
			planned := 0.0
			if s.Step != nil {
				planned = float64(s.Step.ThinkUS+s.Step.ToolUS) / 1000
			}
			t.ms[cBetweenPlanned] = math.Min(gap, planned)
			t.ms[cBetweenRest] = gap - t.ms[cBetweenPlanned]
		}
		if calls[j] != nil || t.ms[cBetweenPlanned] > 0 || t.ms[cBetweenRest] > 0 {
			if calls[j] != nil {
				a.addTask(b, s, &t)
			} else {
				a.sum[cBetweenPlanned] += t.ms[cBetweenPlanned]
				a.sum[cBetweenRest] += t.ms[cBetweenRest]
			}
		}
		for k := range agg {
			agg[k] += t.ms[k]
		}
		prevEnd = s.DoneAt
	}
	isOver := false
	// A call over a per-request objective of its own (judged like a task, less e2e).
	for _, t := range calls {
		if t == nil {
			continue
		}
		x := excessOf(t, o, nil)
		x.e2e = 0
		if x.ttft > 0 || x.itl > 0 {
			b.excessShares(t, x, charge)
			isOver = true
		}
	}
	// The whole task over an e2e objective: split over every call's components and the
	// waits between them.
	if e2e, ok := r.E2E(); ok {
		lim := 0.0
		for _, ob := range o.forTask(r.Task) {
			if ob.Metric == contract.MetricE2E && (ob.Exceeded(r) || missed[ob]) && (lim == 0 || ob.LimitMs() < lim) {
				lim = ob.LimitMs()
			}
		}
		if e := figure.Ms(e2e) - lim; lim > 0 && e > 0 {
			all := append(append(append([]int{}, ttftParts...), steadyParts...), cStalls, cDecodeRest, cBetweenPlanned, cBetweenRest)
			split(&agg, e, []int{cPrefillFloor, cDecodeFloor}, all, charge)
			isOver = true
		}
	}
	if !isOver {
		// A run-level percentile bound the calls missed counts per call.
		for _, t := range calls {
			if t == nil {
				continue
			}
			if x := excessOf(t, o, missed); x.ttft > 0 || x.itl > 0 {
				b.excessShares(t, x, charge)
				isOver = true
			}
		}
	}
	if isOver {
		a.over++
	}
	return isOver
}
