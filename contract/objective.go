package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/record"
)

// Metric is a latency a contract bounds. TTFT and E2E count from the task's scheduled time
// (coordinated omission shows), ITL per token (a k-token event spreads its gap over k),
// TPOT per task ((last token − first token) / (output tokens − 1)).
type Metric string

// The metrics an slo block can bound, in the order a task's time passes through them.
const (
	MetricTTFT Metric = "ttft"
	MetricITL  Metric = "itl"
	MetricTPOT Metric = "tpot"
	MetricE2E  Metric = "e2e"
)

// Metrics lists every metric in order.
var Metrics = []Metric{MetricTTFT, MetricITL, MetricTPOT, MetricE2E}

// Forms are the quantiles an slo block can bound, in ascending order; a per-request max
// bound is quantile 0 (Objective.PerRequest).
var Forms = []float64{0.5, 0.9, 0.95, 0.99}

// Objective is one bound a contract states: a metric, a quantile of it over many tasks (or,
// with Quantile 0, a bound on every task), a limit, and the task type it applies to ("" for
// the contract's global slo block). The contract compiles to one list of them (Objectives);
// every consumer (acceptance, stage 1, the diagnosis, comparisons, sweeps, reports) reads
// that list, so a bound the user writes reaches every figure and means one thing in each.
type Objective struct {
	Metric Metric `json:"metric"`
	// Quantile is in (0, 1) for a percentile bound (0.99 for p99), 0 for a per-request max.
	Quantile float64       `json:"quantile,omitempty"`
	Limit    time.Duration `json:"limit"`
	// Task is the task type whose own slo block states the bound; "" for the global block,
	// which governs every task type that does not replace this metric with bounds of its own.
	Task string `json:"task,omitempty"`
}

// PerRequest reports whether the objective bounds every task (a max), which acceptance
// judges task by task, rather than a quantile over many.
func (o Objective) PerRequest() bool { return o.Quantile == 0 }

// Form is "max" or the percentile's name ("p99", "p99.9").
func (o Objective) Form() string {
	if o.PerRequest() {
		return "max"
	}
	return "p" + strconv.FormatFloat(o.Quantile*100, 'f', -1, 64)
}

// Signal is the client signal that measures the objective ("client.ttft_p99_ms";
// "client.ttft_max_ms" for a max: the worst task's value).
func (o Objective) Signal() string {
	return "client." + string(o.Metric) + "_" + o.Form() + "_ms"
}

// LimitMs is the limit in milliseconds.
func (o Objective) LimitMs() float64 { return float64(o.Limit) / float64(time.Millisecond) }

// Name is how a reader sees the objective: "TTFT p99", "ITL max" (with " (task summarize)"
// for a task type's own).
func (o Objective) Name() string {
	s := strings.ToUpper(string(o.Metric)) + " " + o.Form()
	if o.Task != "" {
		s += " (task " + o.Task + ")"
	}
	return s
}

// String is the objective as a bound: "TTFT p99 ≤ 500ms".
func (o Objective) String() string {
	return fmt.Sprintf("%s ≤ %s", o.Name(), o.Limit)
}

// Reason is the rejection reason a task over a per-request bound carries ("slo ttft max
// 2s"): short and stable, so reasons count across runs.
func (o Objective) Reason() string {
	return fmt.Sprintf("slo %s max %s", o.Metric, o.Limit)
}

// objectives lists the bounds one slo block sets, for task ("" global), metric by metric,
// percentiles ascending, then the max.
func (s SLO) objectives(task string) []Objective {
	var out []Objective
	for _, m := range Metrics {
		out = s.appendObjectives(out, m, task)
	}
	return out
}

// appendObjectives appends the block's bounds of metric m.
func (s SLO) appendObjectives(out []Objective, m Metric, task string) []Objective {
	b := s.bound(m)
	for _, q := range Forms {
		if d := b.at(q); d > 0 {
			out = append(out, Objective{Metric: m, Quantile: q, Limit: d, Task: task})
		}
	}
	if b.Max > 0 {
		out = append(out, Objective{Metric: m, Limit: b.Max, Task: task})
	}
	return out
}

// bound is the slo block's bound of one metric.
func (s SLO) bound(m Metric) Bound {
	switch m {
	case MetricTTFT:
		return s.TTFT
	case MetricITL:
		return s.ITL
	case MetricTPOT:
		return s.TPOT
	case MetricE2E:
		return s.E2E
	}
	return Bound{}
}

// at is the bound at quantile q (0: none).
func (b Bound) at(q float64) time.Duration {
	switch q {
	case 0.5:
		return b.P50
	case 0.9:
		return b.P90
	case 0.95:
		return b.P95
	case 0.99:
		return b.P99
	}
	return 0
}

// Objectives is every bound the contract states: the global slo block's, then each task
// type's own, in the contract's order. A task type's block replaces the global bounds of
// each metric it names, so a global objective governs the task types that do not (Governs).
func (c *Contract) Objectives() []Objective {
	out := c.SLO.objectives("")
	for i := range c.Tasks {
		if t := &c.Tasks[i]; t.SLO != nil {
			out = append(out, t.SLO.objectives(t.Name)...)
		}
	}
	return out
}

// ObjectivesFor is the bounds a task of type task is held to: its own for each metric its
// slo block names, the global ones for the rest (the objectives of SLOFor(task), each
// naming the block it comes from). Called for every task a run judges, it builds only them.
func (c *Contract) ObjectivesFor(task string) []Objective {
	t := c.Task(task)
	var out []Objective
	for _, m := range Metrics {
		if t != nil && t.SLO != nil && !t.SLO.bound(m).IsZero() {
			out = t.SLO.appendObjectives(out, m, t.Name)
		} else {
			out = c.SLO.appendObjectives(out, m, "")
		}
	}
	return out
}

// Governs reports whether objective o holds tasks of type task: its own type's, or a global
// one whose metric the type's slo block leaves to the global block.
func (c *Contract) Governs(o Objective, task string) bool { return Governs(c.Objectives(), o, task) }

// Governs reports whether objective o of the list all (a contract's Objectives) holds tasks
// of type task: o is the type's own, or o is global and the type states no objective of
// o's metric in all (a type's slo block that names a metric states at least one bound of
// it, and replaces the global ones).
func Governs(all []Objective, o Objective, task string) bool {
	if o.Task != "" {
		return o.Task == task
	}
	for _, x := range all {
		if x.Task == task && x.Metric == o.Metric {
			return false
		}
	}
	return true
}

// ObjectivesOf is the objectives of the list all (a contract's Objectives) that hold tasks
// of type task (Governs): Contract.ObjectivesFor for a holder of the list alone.
func ObjectivesOf(all []Objective, task string) []Objective {
	var out []Objective
	for _, o := range all {
		if Governs(all, o, task) {
			out = append(out, o)
		}
	}
	return out
}

// Each calls f with each value of metric m one completed task contributes, n values at
// once: one TTFT, TPOT or E2E a task, and each inter-token gap for ITL (a k-token event's
// gap spread over its k tokens). A multi-step task contributes each completed call's TTFT,
// TPOT and token gaps (every model call is held to them, from its own due time) and its
// own end-to-end time. A failed task contributes none: its timings are not meaningful.
// Every reader of a run's latencies (stage 1, comparisons, sweeps, acceptance) takes them
// from here.
func (m Metric) Each(r *record.Record, f func(d time.Duration, n int)) {
	if !r.OK() {
		return
	}
	if m == MetricITL {
		r.ITLRuns(f)
		return
	}
	if r.MultiStep() && m != MetricE2E {
		if steps := r.StepRecords(); len(steps) > 0 {
			for i := range steps {
				m.Each(&steps[i], f)
			}
			return
		}
	}
	var d time.Duration
	var ok bool
	switch m {
	case MetricTTFT:
		d, ok = r.TTFT()
	case MetricTPOT:
		d, ok = r.TPOT()
	case MetricE2E:
		d, ok = r.E2E()
	}
	if ok {
		f(d, 1)
	}
}

// Worst is the largest value of metric m in r (the worst token gap for ITL); ok is false
// when r has none.
func (m Metric) Worst(r *record.Record) (time.Duration, bool) {
	var worst time.Duration
	seen := false
	m.Each(r, func(d time.Duration, _ int) {
		seen = true
		worst = max(worst, d)
	})
	return worst, seen
}

// Exceeded reports whether task r is over per-request objective o (its worst value over
// the limit); always false for a percentile objective, which holds over many tasks.
func (o Objective) Exceeded(r *record.Record) bool {
	if !o.PerRequest() || o.Limit <= 0 {
		return false
	}
	w, ok := o.Metric.Worst(r)
	return ok && w > o.Limit
}
