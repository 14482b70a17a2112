package diagnose

import (
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
)

// Multi-step tasks: every call has its own budget (its step record carries the call's own
// timings: ScheduledAt is when the call was due, so its lateness is its own), and the time
// between a call's end and the next call's due time is the plan's (think time and tool
// latency the contract sets) or, beyond the plan, the client's. The task's excess is found
// where its record says it missed: a call's TTFT or ITL ("(step N)" in the reason), else
// its end-to-end time, which is split over every call's components and the waits between.

// stepReason matches a multi-step task's per-call rejection: the metric, its bound, the call.
var stepReason = regexp.MustCompile(`^slo (ttft|itl|tpot) max (\S+) \(step (\d+)\)$`)

// multiStep adds a multi-step task's calls to a and charges its excess; it reports whether
// the task was over its bounds.
func (b *budgetCtx) multiStep(r *record.Record, a *acc, o *Options, missed map[string]bool, charge func(int, float64)) bool {
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
				a.add(b, s, &t)
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
	for _, why := range r.Reasons {
		m := stepReason.FindStringSubmatch(why)
		if m != nil {
			n, err := strconv.Atoi(m[3])
			d, err2 := time.ParseDuration(m[2])
			if err != nil || err2 != nil || n < 1 || n > len(calls) || calls[n-1] == nil {
				continue
			}
			t := calls[n-1]
			var x over
			if m[1] == "ttft" && t.ttft > figure.Ms(d) {
				x.ttft = t.ttft - figure.Ms(d)
			} else if m[1] != "ttft" {
				bound := figure.Ms(d)
				for i, g := range t.gaps {
					if g > bound {
						k := float64(t.gapN[i])
						x.itl += k * (g - bound)
						x.itlSteady += k * math.Max(0, math.Min(g, t.steadyGap[i])-bound)
					}
				}
			}
			if x.ttft > 0 || x.itl > 0 {
				b.excessShares(t, x, charge)
				isOver = true
			}
			continue
		}
		if len(why) > len("slo e2e max ") && why[:len("slo e2e max ")] == "slo e2e max " {
			d, err := time.ParseDuration(why[len("slo e2e max "):])
			e2e, ok := r.E2E()
			if err != nil || !ok || figure.Ms(e2e) <= figure.Ms(d) {
				continue
			}
			all := append(append(append([]int{}, ttftParts...), steadyParts...), cStalls, cDecodeRest, cBetweenPlanned, cBetweenRest)
			split(&agg, figure.Ms(e2e)-figure.Ms(d), []int{cPrefillFloor, cDecodeFloor}, all, charge)
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
