package diagnose

import (
	"strings"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// TaskSplit is one completed task's (or one call's) own budget, in ms: the measured times
// and the components that make them up, grouped as an engine reports its own phases.
type TaskSplit struct {
	Rec *record.Record
	// TTFTMs is scheduled → first token and DecodeMs first → last token, as measured.
	TTFTMs, DecodeMs float64
	// PrefillMs is the prefill (at its floor and above it); QueueMs the engine's queue
	// (the part the load explains and the rest); OutsideMs the time outside the engine.
	PrefillMs, QueueMs, OutsideMs float64
	// SlotWaitMs is the task's wait for one of the engine's slots as the client's records
	// replay it (budget_slots.go), before the budget fits it into the task's time; 0 when
	// the engine reports no slot count.
	SlotWaitMs float64
	// TTFTPartsMs and DecodePartsMs add up each part's components.
	TTFTPartsMs, DecodePartsMs float64
	// Components maps each non-zero component's name to its ms.
	Components map[string]float64
}

// Options tune a diagnosis. The zero value is usable: defaults fill in.
type Options struct {
	// Objectives are the contract's objectives (contract.Contract.Objectives), global and per
	// task type: stage 1 judges them (evidence.Workload.Objectives) and the decision, the
	// budget's excess, the rules' symptoms and headroom read those results.
	Objectives []contract.Objective
	// System is the contract's system block: the floors' inputs no endpoint reports.
	System contract.System
	// Seed and Resamples drive the bootstrap behind rollback triggers (default 1, 400).
	Seed      uint64
	Resamples int
	// Margin widens a trigger past its CI bound (default 0.10: +10% on latency quantiles,
	// −2 points on the acceptance rate).
	Margin float64
	// ClosedLoop: the contract keeps a fixed number of tasks in flight (arrival: closed), so
	// a change cannot lower the in-flight count, only raise throughput (Little's law).
	ClosedLoop bool
	// MaxSeriesPoints caps every series kept in the evidence, for the report's size
	// (default 240; a 10-minute run at 1 s scrapes keeps its shape at 2.5 s per point).
	MaxSeriesPoints int
	// Stage1 are the options stage 1 ran with (the contract's per-request bounds, the run's
	// start): the halves of the warm window and the cold phase read their client figures
	// from stage 1's accumulator with them.
	Stage1 stats.Options
	// EachTaskBudget, when set, receives every completed task's (and call's) own budget as
	// the time budget splits it: for comparisons with an engine's per-request timings.
	EachTaskBudget func(TaskSplit)
}

func (o *Options) defaults() {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Resamples <= 0 {
		o.Resamples = 400
	}
	if o.Margin <= 0 {
		o.Margin = 0.10
	}
	if o.MaxSeriesPoints <= 0 {
		o.MaxSeriesPoints = 240
	}
}

// forTask is the objectives that hold tasks of type task.
func (o *Options) forTask(task string) []contract.Objective {
	return contract.ObjectivesOf(o.Objectives, task)
}

// bound is the limit, in ms, a rule compares a global client signal with: the global
// objective measured by that signal, or, for a p99 signal, the per-request max of its
// metric (a p99 over the max means at least 1% of tasks were rejected for it); none when a
// task type replaces the metric's bounds (the rules then read the missed objectives).
func (o *Options) bound(sig string) (float64, bool) {
	for _, ob := range o.Objectives {
		if ob.Task != "" && strings.HasPrefix(sig, "client."+string(ob.Metric)+"_") {
			// A task type replaces this metric's bounds: a run-level signal mixes tasks
			// held to different limits, and no one limit reads it.
			return 0, false
		}
	}
	var max float64
	for _, ob := range o.Objectives {
		if ob.Task != "" {
			continue
		}
		if ob.Signal() == sig {
			return ob.LimitMs(), true
		}
		if ob.PerRequest() && sig == "client."+string(ob.Metric)+"_p99_ms" {
			max = ob.LimitMs()
		}
	}
	return max, max > 0
}

// limitFor is the limit, in ms, of the objective on metric m at quantile q (0: the max)
// that holds tasks of type task.
func (o *Options) limitFor(task string, m contract.Metric, q float64) (float64, bool) {
	for _, ob := range o.forTask(task) {
		if ob.Metric == m && ob.Quantile == q {
			return ob.LimitMs(), true
		}
	}
	return 0, false
}
