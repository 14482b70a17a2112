package diagnose

import (
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// The contract's objectives reach the diagnosis one way: stage 1 judges each on the tasks
// it governs (evidence.Workload.Objectives, package stats), and every part of the
// diagnosis — the rules' symptoms, the time budget's excess, headroom, the decision and its
// verdict — reads those results. Nothing here maps an slo block onto signals.

// objectiveResults are the objectives judged on the warm tasks: stage 1's when the evidence
// carries them, else stats' judgement of the given records. An objective whose signal the
// evidence states over its limit while no record is (a hand-built evidence file, or an
// outside source's figures with no records behind them) is judged on that value as given.
func objectiveResults(ev *evidence.Evidence, recs []record.Record, o *Options) []evidence.Objective {
	if len(o.Objectives) == 0 {
		return nil
	}
	if aligned(ev.Workload.Objectives, o.Objectives) {
		return ev.Workload.Objectives
	}
	var out []evidence.Objective
	if len(recs) > 0 {
		out = stats.Compute(recs, stats.Options{Objectives: o.forTask, AllObjectives: o.Objectives}).Workload.Objectives
	}
	if out == nil {
		out = make([]evidence.Objective, len(o.Objectives))
		for i, ob := range o.Objectives {
			out[i] = stats.JudgeObjective(ob, nil)
		}
	}
	scoped := map[contract.Metric]bool{}
	for _, ob := range o.Objectives {
		if ob.Task != "" {
			scoped[ob.Metric] = true
		}
	}
	for i, ob := range o.Objectives {
		// A run-level signal measures a global objective only when every task type is held
		// to it.
		if ob.Task != "" || scoped[ob.Metric] || out[i].Over > 0 {
			continue
		}
		if s, ok := ev.Signal(ob.Signal()); ok && s.Value > ob.LimitMs() {
			v := s.Value
			out[i].ValueMs, out[i].Status = &v, evidence.ObjectiveMissed
		}
	}
	return out
}

// aligned reports whether stage 1's results are of exactly these objectives, in order (the
// decision reads result i as objective i); results of another contract are judged again.
func aligned(res []evidence.Objective, objs []contract.Objective) bool {
	if res == nil || len(res) != len(objs) {
		return false
	}
	for i, ob := range objs {
		if res[i].Name != ob.Name() || res[i].LimitMs != ob.LimitMs() {
			return false
		}
	}
	return true
}

// objectiveSet is a set of the contract's objectives.
type objectiveSet map[contract.Objective]bool

// missedSet is the objectives the results hold missed.
func missedSet(o *Options, res []evidence.Objective) objectiveSet {
	out := objectiveSet{}
	for i, r := range res {
		if r.Missed() && i < len(o.Objectives) {
			out[o.Objectives[i]] = true
		}
	}
	return out
}

// objectiveItem is an objective's result as a finding cites it.
func objectiveItem(r evidence.Objective) evidence.EvidenceItem {
	it := evidence.EvidenceItem{Signal: r.Signal, Op: ">", Threshold: r.LimitMs, Unit: "ms", Source: "client (contract objective)", Stage: evidence.StageRequestTrace}
	if r.Task != "" {
		it.Signal += `{task="` + r.Task + `"}`
	}
	if r.ValueMs != nil {
		it.Value = *r.ValueMs
	}
	return it
}

// objectiveDims are the dimensions of a task's time an objective's metric is about.
func objectiveDim(metric string) string {
	switch metric {
	case string(contract.MetricTTFT):
		return dimTTFT
	case string(contract.MetricITL):
		return dimITL
	case string(contract.MetricTPOT):
		return dimTPOT
	}
	return dimE2E
}

// missedIn is the view's first missed objective in one of dims, as a measurement; ok is
// false when none is missed there.
func (v *view) missedIn(dims ...string) (meas, bool) {
	for _, r := range v.objectives {
		if !r.Missed() {
			continue
		}
		for _, d := range dims {
			if objectiveDim(r.Metric) == d {
				return meas{item: objectiveItem(r), present: true, holds: true}, true
			}
		}
	}
	return meas{}, false
}

// boundedIn reports whether the contract states an objective in one of dims.
func (v *view) boundedIn(dims ...string) bool {
	for _, r := range v.objectives {
		for _, d := range dims {
			if objectiveDim(r.Metric) == d {
				return true
			}
		}
	}
	return false
}

// halfObjectives are the objectives of a part of the run (a half of the warm window): its
// stage 1's when it judged them, else the whole run's objectives judged on the part's
// client signals as given (hand-built evidence has no stage 1 behind it).
func halfObjectives(res *stats.Result, sig map[string]evidence.Signal, o *Options) []evidence.Objective {
	if res != nil && aligned(res.Workload.Objectives, o.Objectives) {
		return res.Workload.Objectives
	}
	out := make([]evidence.Objective, 0, len(o.Objectives))
	for _, ob := range o.Objectives {
		r := stats.JudgeObjective(ob, nil)
		if s, ok := sig[ob.Signal()]; ok && ob.Task == "" {
			v := s.Value
			r.ValueMs, r.Status = &v, evidence.ObjectiveMet
			if v > ob.LimitMs() {
				r.Status = evidence.ObjectiveMissed
			}
		}
		out = append(out, r)
	}
	return out
}

// missedNames lists the missed objectives by name.
func missedNames(res []evidence.Objective) []string {
	var out []string
	for _, r := range res {
		if r.Missed() {
			out = append(out, r.Name)
		}
	}
	return out
}
