package stats

import (
	mstats "github.com/aclements/go-moremath/stats"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
)

// BreachAlpha: a percentile objective counts as missed when more values lie past its limit
// than sampling alone would put there more than once in twenty runs, were the true
// percentile exactly at the limit. A p99 estimated from 17 tasks is their largest: one slow
// task crosses a p99 limit in 16% of such runs with the objective met, so it is no miss to
// name a layer for (x/perf's benchstat warns rather than judges on few samples, at the same
// 0.05 level).
const BreachAlpha = 0.05

// objectiveResults judges every objective of opt on the phase's tasks: each over the task
// types it governs (the types whose Objectives list holds it), from the same recorded
// values as every other stage-1 figure, so its value is the one pel compare and pel sweep
// read for it.
func objectiveResults(p *phaseAcc, opt Options) []evidence.Objective {
	if len(opt.AllObjectives) == 0 {
		return nil
	}
	governs := map[string]map[contract.Objective]bool{}
	for task := range p.byTask {
		m := map[contract.Objective]bool{}
		if opt.Objectives != nil {
			for _, ob := range opt.Objectives(task) {
				m[ob] = true
			}
		}
		governs[task] = m
	}
	out := make([]evidence.Objective, 0, len(opt.AllObjectives))
	for _, ob := range opt.AllObjectives {
		if ob.PerRequest() {
			var m maxAcc
			for task, a := range p.byTask {
				if x := a.maxes[ob]; governs[task][ob] && x != nil {
					m.n += x.n
					m.over += x.over
					m.worst = max(m.worst, x.worst)
				}
			}
			out = append(out, judgeMax(ob, m))
			continue
		}
		d := NewDist()
		for task, a := range p.byTask {
			if governs[task][ob] {
				d.Merge(a.dist(ob.Metric))
			}
		}
		out = append(out, JudgeObjective(ob, d.h))
	}
	return out
}

// judgeMax judges a per-request objective from its task-by-task count: missed when any task
// exceeded it (acceptance rejected each), its value the worst as stage 1 records values
// (quantile.RecordedMs, so pel compare reads the same figure).
func judgeMax(ob contract.Objective, m maxAcc) evidence.Objective {
	r := JudgeObjective(ob, nil)
	r.Unit = "tasks"
	if m.n == 0 {
		return r
	}
	v := quantile.RecordedMs(m.worst)
	r.ValueMs, r.N, r.Over, r.Status = &v, m.n, m.over, evidence.ObjectiveMet
	if m.over > 0 {
		r.Status = evidence.ObjectiveMissed
	}
	return r
}

// dist is the set's distribution of one metric.
func (a *setAcc) dist(m contract.Metric) *Dist {
	switch m {
	case contract.MetricTTFT:
		return a.ttft
	case contract.MetricITL:
		return a.itl
	case contract.MetricTPOT:
		return a.tpot
	case contract.MetricE2E:
		return a.e2e
	}
	return nil
}

// JudgeObjective judges objective ob on the values of h (recorded in µs): its value (the
// quantile, the worst value for a max), how many values lie past its limit, and its
// status. A percentile is missed when its value is past the limit and the values past it
// are more than sampling explains (BreachAlpha); a max is missed by any value past it.
func JudgeObjective(ob contract.Objective, h *quantile.Hist) evidence.Objective {
	r := evidence.Objective{Name: ob.Name(), Metric: string(ob.Metric), Form: ob.Form(), Quantile: ob.Quantile, Task: ob.Task,
		Signal: ob.Signal(), LimitMs: ob.LimitMs(), Unit: "tasks", Status: evidence.ObjectiveUnmeasured}
	if ob.Metric == contract.MetricITL {
		r.Unit = "token gaps"
	}
	if h == nil || h.N() == 0 {
		return r
	}
	q := ob.Quantile
	if ob.PerRequest() {
		q = 1
	}
	us, _ := h.QuantileUS(q)
	v := float64(us) / 1000
	r.ValueMs = &v
	r.N = h.N()
	r.Over = int(h.CountAboveUS(quantile.ClampUS(ob.Limit)))
	r.Status = evidence.ObjectiveMet
	switch {
	case ob.PerRequest():
		if r.Over > 0 {
			r.Status = evidence.ObjectiveMissed
		}
	case v > ob.LimitMs():
		r.P = figure.Sig3(BinomTail(r.N, r.Over, 1-ob.Quantile))
		r.Status = evidence.ObjectiveUnsupported
		if BinomTail(r.N, r.Over, 1-ob.Quantile) <= BreachAlpha {
			r.Status = evidence.ObjectiveMissed
		}
	}
	return r
}

// BinomTail is P(X >= k) for X ~ Binomial(n, p): P(n−X ≤ n−k) with n−X ~ Binomial(n, 1−p),
// a CDF rather than 1 − CDF, which would cancel to 0 for the small tails that matter here.
func BinomTail(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	if float64(k) <= float64(n)*p {
		return 1 // at or below the mean the tail is about one half or more: never a miss
	}
	return mstats.BinomialDist{N: n, P: 1 - p}.CDF(float64(n - k))
}
