package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report/verdict"
	"github.com/pel-ladder/pel/stats"
)

// Diagnose runs every rule over the evidence and fills Findings (ranked), OwnerLayer,
// Verdict, Headroom, StopConditions, Rollback and Missing. recs are the run's task records
// (acceptance impact, reproduction and rollback need them; nil degrades those to not met).
// It returns ev for chaining.
func Diagnose(ev *evidence.Evidence, recs []record.Record, opts Options) *evidence.Evidence {
	return DiagnoseTasks(ev, Tasks{All: recs}, opts)
}

// DiagnoseTasks is Diagnose over a run's records as Tasks: all of them, or a sample with
// passes over every task (a run longer than memory holds).
func DiagnoseTasks(ev *evidence.Evidence, t Tasks, opts Options) *evidence.Evidence {
	o := &opts
	o.defaults()
	t = t.withViews(ev, o)
	recs := t.All
	addClientSeries(ev, recs)
	full := newView(ev)
	full.cold = coldSignals(ev, t)
	full.objectives = objectiveResults(ev, recs, o)
	full.refused, full.refusedInQueue, _ = refusalsInQueue(ev, recs)
	_, full.context = (&budgetCtx{}).batchAndContext(full, recs, 1)
	ev.Workload.Objectives = full.objectives

	lagNote, penalty := "", 1.0
	simNote := ""
	if lag, ok := full.val(evidence.SigScheduleLagP99); ok && lag > scheduleLagMaxMs {
		lagNote, penalty = fmt.Sprintf("the load generator ran %.0f ms behind its schedule at p99: client timings are suspect", lag), lagPenalty
		if lag > scheduleLagSevereMs {
			lagNote, penalty = fmt.Sprintf("the load generator ran %.0f ms behind its schedule at p99: client timings mostly measure the loaded client machine; rerun on a quieter one", lag), lagSeverePenalty
			// pel sim reports its own loop's lateness; when it fell behind too, the engine
			// shares the starved machine and its timings carry the same stalls.
			if sl, ok := full.val(evidence.SigEngineStepLagMs); ok && sl > simStepLagMaxMs {
				simNote = fmt.Sprintf("pel sim ran on the same starved machine (its step loop fell up to %.0f ms behind): the engine's timings carry the machine's stalls too; rerun on a quieter one", sl)
			}
		}
	}

	var found []ranked
	specs := map[string]impactSpec{}
	phaseTasks := map[string]int{}
	for i := range recs {
		if recs[i].Status != record.StatusCancelled {
			phaseTasks[recs[i].Phase]++
		}
	}
	if t.Sampled {
		phaseTasks = t.NonCancelled
	}
	// Every rule first, so that the impacts of all that fire are counted in one pass.
	hits := make([]*hit, len(rules))
	for i, r := range rules {
		if h := r.eval(full, o); h != nil {
			hits[i] = h
			specs[r.id] = h.impact
		}
	}
	var impacts map[string]*evidence.Impact
	lead := &leadCounts{}
	if t.present() {
		impacts, lead = t.impacts(ev, specs)
	}
	for i, r := range rules {
		h := hits[i]
		if h == nil {
			continue
		}
		f := evidence.Finding{
			ID: r.id, Layer: r.layer, Severity: evidence.SeverityWarn,
			Symptom: h.symptom, Hypothesis: h.hypothesis, Prediction: h.prediction,
			NextProbe: h.nextProbe, Confidence: h.confidence, ConfidenceNote: h.confNote,
			Missing: h.missing,
		}
		if h.predicted != nil {
			f.Predicted = h.predicted
			f.Prediction = h.predicted.Render(h.cond)
		}
		clientOnly, fromSchedule, timed := true, false, false
		for _, m := range h.items {
			f.Evidence = append(f.Evidence, m.item)
			if m.holds && !m.ctx {
				if m.item.Stage != evidence.StageRequestTrace {
					clientOnly = false
				}
				if scheduledTimings[m.item.Signal] {
					fromSchedule = true
				}
				if m.item.Unit == "ms" {
					timed = true
				}
			}
		}
		switch {
		case lagNote != "" && clientOnly && fromSchedule:
			f.Confidence *= penalty
			f.ConfidenceNote = joinNote(f.ConfidenceNote, lagNote)
		case simNote != "" && timed:
			f.Confidence *= lagSeverePenalty
			f.ConfidenceNote = joinNote(f.ConfidenceNote, simNote)
		}
		f.Confidence = math.Round(math.Min(f.Confidence, confMax)*100) / 100
		if t.present() {
			f.AcceptanceImpact = impacts[r.id]
			im := f.AcceptanceImpact
			ph := h.impact.phase
			if ph == "" {
				ph = record.PhaseWarm
			}
			// Critical needs credibility too: a weak finding stays a suspicion, however many
			// rejections coincide with it.
			if f.Confidence >= ownerMinConfidence && im.Share >= criticalShare && phaseTasks[ph] > 0 && float64(im.Rejected)/float64(phaseTasks[ph]) >= criticalRejectRate {
				f.Severity = evidence.SeverityCritical
			}
		}
		rep := reproduce(ev, t, full, r, o)
		f.Reproduced = &rep
		score := sevRank(f.Severity) + f.Confidence + rankStrength*h.strength
		if f.Confidence >= ownerMinConfidence {
			score += rankCredible
		}
		if f.AcceptanceImpact != nil {
			score += rankImpact * f.AcceptanceImpact.Share
		}
		if rep.Met {
			score += rankReproduced
		}
		found = append(found, ranked{f, r, score})
	}
	// A generic finding whose symptom a more specific one explains drops to info.
	fired := map[*rule]string{}
	for _, x := range found {
		if x.f.Confidence >= ownerMinConfidence {
			fired[x.r] = x.f.Symptom
		}
	}
	for i := range found {
		for _, d := range found[i].r.defers {
			if sym, ok := fired[d]; ok {
				f := &found[i].f
				f.Severity = evidence.SeverityInfo
				f.ConfidenceNote = joinNote(f.ConfidenceNote, fmt.Sprintf("explained by %s (%s)", d.id, sym))
				found[i].score -= rankDeferred
				break
			}
		}
	}
	if x, ok := sloBreach(full, o, found); ok {
		found = append(found, ranked{x, &rule{id: x.ID, layer: x.Layer}, sevRank(x.Severity) + x.Confidence})
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].score > found[j].score })

	external := externalFindings(ev.Findings)
	ev.Findings = []evidence.Finding{}
	for _, x := range found {
		ev.Findings = append(ev.Findings, x.f)
	}
	ev.OwnerLayer = nil
	ev.Budget = nil
	if t.present() {
		ev.Budget = buildBudget(ev, full, o, found, specs, recs, t.Spans)
		if xs := infeasibleMissed(ev.Budget, full.objectives); len(xs) > 0 {
			ev.Findings = append(ev.Findings, floorFinding(xs))
		} else if needsBudgetFinding(ev) {
			ev.Findings = append(ev.Findings, budgetFinding(ev.Budget, ev.Run.ImportedFrom))
		}
	}
	for i := range ev.Findings {
		for j, m := range ev.Findings[i].Missing {
			ev.Findings[i].Missing[j] = phraseMissing(full.engine, m)
		}
	}
	in := decisionIn{findings: ev.Findings, budget: ev.Budget, objectives: full.objectives, missing: missingSources(full),
		breaches: func(f *evidence.Finding) []string { return aggregateBreaches(full, specs[f.ID].dims) },
		explains: func(f *evidence.Finding) bool {
			if im := f.AcceptanceImpact; im != nil && im.Explained > 0 {
				return true
			}
			return len(aggregateBreaches(full, specs[f.ID].dims)) > 0
		}}
	in.acceptance, in.hasAcc = full.val(evidence.SigAcceptanceRate)
	dec := decide(in)
	applyDecision(ev.Findings, dec)
	var owner *evidence.Finding
	if dec.owner >= 0 {
		owner = &ev.Findings[dec.owner]
		l := owner.Layer
		ev.OwnerLayer = &l
	}
	ev.Decision = &dec.out

	// Stage-local findings (e.g. pel trace's) follow the ladder's own, as context.
	ev.Findings = append(ev.Findings, external...)

	ev.Headroom = headroom(full)
	ev.Missing = missingSources(full)
	triggers, rollbackWhy := t.withSampleNote(rollbackTriggers(recs, o))
	if triggers == nil {
		triggers = []evidence.Trigger{}
	}
	ev.Rollback = evidence.Rollback{Triggers: triggers}
	var breach []string
	if owner != nil {
		breach = aggregateBreaches(full, specs[owner.ID].dims)
	}
	ev.StopConditions = stopConditions(ev, owner, dec.why, breach, rollbackWhy, o)
	ev.Decision.Losses = lead.losses()
	ev.Verdict = verdict.Line(ev)
	downsampleAll(ev, o.MaxSeriesPoints)
	return ev
}

// scheduledTimings are the client signals measured from scheduled_at, which a late load
// generator inflates by its own lateness (timings from sent_at are not).
var scheduledTimings = map[string]bool{
	evidence.SigTTFTP50: true, evidence.SigTTFTP95: true, evidence.SigTTFTP99: true,
	evidence.SigE2EP50: true, evidence.SigE2EP99: true,
	evidence.SigHOLTTFTRatio: true, evidence.SigColdWarmTTFTRatio: true,
}

// engineTwin is the engine's own measurement of a client latency quantile.
var engineTwin = map[string]string{
	evidence.SigTTFTP50: evidence.SigServerTTFTP50, evidence.SigTTFTP99: evidence.SigServerTTFTP99,
	evidence.SigITLP50: evidence.SigServerITLP50, evidence.SigITLP99: evidence.SigServerITLP99,
	evidence.SigE2EP50: evidence.SigServerE2EP50, evidence.SigE2EP99: evidence.SigServerE2EP99,
}

// sloBreach reports a contract bound the client measurements exceed when no warn finding
// explains anything: the symptom is real, its layer unknown. Its layer is the first suspect
// of the catalog for that dimension, at a confidence that can never name the owner.
func sloBreach(v *view, o *Options, found []ranked) (evidence.Finding, bool) {
	for _, x := range found {
		if x.f.Severity != evidence.SeverityInfo {
			return evidence.Finding{}, false
		}
	}
	var items []evidence.EvidenceItem
	layer := evidence.LayerScheduling
	dims := []string{}
	var missed []evidence.Objective
	for _, r := range v.objectives {
		if r.Missed() {
			items = append(items, objectiveItem(r))
			dims = append(dims, r.Name)
			missed = append(missed, r)
		}
	}
	if m := v.judge(evidence.SigSLOMissRate, ">=", sloMissMin); m.present && m.holds {
		items = append(items, m.item)
	}
	if len(items) == 0 {
		return evidence.Finding{}, false
	}
	// Where the engine reports the same quantile within the bound, the excess arose between
	// the engine and the client ("server metrics fine, users unhappy"). A client late on its
	// own schedule is then the first suspect: its machine, not the path, may add the time.
	var within []string
	for _, r := range missed {
		twin, ok := engineTwin[r.Signal]
		if !ok || r.Task != "" {
			continue
		}
		if m := v.judge(twin, "<=", r.LimitMs); m.present && m.holds {
			within = append(within, fmt.Sprintf("%s %.3g %s", m.item.Signal, m.item.Value, m.item.Unit))
			items = append(items, m.item)
		}
	}
	engineFine := len(missed) > 0 && len(within) == len(missed)
	switch {
	case engineFine:
		layer = evidence.LayerApplication
	case len(missed) > 0 && (missed[0].Metric == string(contract.MetricITL) || missed[0].Metric == string(contract.MetricTPOT)):
		layer = evidence.LayerHardware // decode time: bandwidth first, then kernels
	}
	f := evidence.Finding{
		ID: sloBreachID, Layer: layer, Severity: evidence.SeverityWarn,
		Symptom:    "the contract's bounds are exceeded (" + strings.Join(dims, ", ") + ") but no rule's signature matches the evidence",
		Hypothesis: "The limiting layer shows no signature in the collected sources; the layer given is only the catalog's first suspect for this latency dimension.",
		Evidence:   items,
		Prediction: "Not falsifiable yet: add the missing sources and re-run; the named layer's rule should then fire with its own prediction.",
		NextProbe:  "Collect the missing sources below (engine /metrics, DCGM, a profiler trace of a few steps) and run pel analyze again.",
		Confidence: confSuspect,
		Reproduced: &evidence.StopCondition{Reason: "no rule to re-evaluate"},
	}
	for _, m := range missingSources(v) {
		f.Missing = append(f.Missing, m.Source+" ("+m.Flag+"): "+m.Settles)
	}
	if engineFine {
		f.Hypothesis = "The engine meets the bound by its own measurement (" + strings.Join(within, ", ") + "); the excess arises between the engine and the client: the network path, a proxy, or the client itself."
		if lag, ok := v.val(evidence.SigScheduleLagP99); ok && lag > scheduleLagMaxMs {
			f.Severity = evidence.SeverityInfo
			f.ConfidenceNote = fmt.Sprintf("the engine met the bound and the load generator ran %.0f ms behind its schedule at p99: the excess most likely comes from the loaded client machine; rerun on a quieter one", lag)
		}
	}
	if len(f.Missing) == 0 {
		f.Missing = []string{"every source is present: a new rule is needed for this signature (file the evidence.json)"}
	}
	return f, true
}

// externalNote marks a finding a producer (trace analysis) added on its own.
const externalNote = "stage-local finding from one source; the ladder's rules weigh its signals with every other stage, so it is informational here"

// externalFindings keeps the findings not produced by this package's rules (a previous
// Diagnose's are dropped, so diagnosing twice gives the same result), downgraded to info:
// a single source's view never names the owner layer.
func externalFindings(fs []evidence.Finding) []evidence.Finding {
	ours := map[string]bool{sloBreachID: true, budgetFindingID: true, floorFindingID: true}
	for _, r := range rules {
		ours[r.id] = true
	}
	var out []evidence.Finding
	for _, f := range fs {
		if ours[f.ID] {
			continue
		}
		f.Severity = evidence.SeverityInfo
		if !strings.Contains(f.ConfidenceNote, externalNote) {
			f.ConfidenceNote = joinNote(f.ConfidenceNote, externalNote)
		}
		out = append(out, f)
	}
	return out
}

func sevRank(s string) float64 {
	switch s {
	case evidence.SeverityCritical:
		return 2
	case evidence.SeverityWarn:
		return 1
	}
	return 0
}

// aggregateBreaches lists the contract's percentile bounds the run exceeds in the given
// dimensions ("p99 ITL 181 ms > 60 ms"): tasks are accepted one by one, but the run as a
// whole misses its contract.
func aggregateBreaches(v *view, dims []string) []string {
	var out []string
	for _, r := range v.objectives {
		if !r.Missed() || r.Form == "max" || r.ValueMs == nil {
			continue // a max missed rejected its tasks: the acceptance impact counts them
		}
		for _, d := range dims {
			if objectiveDim(r.Metric) == d {
				out = append(out, fmt.Sprintf("its %s objective (%.4g ms > %.4g ms)", r.Name, *r.ValueMs, r.LimitMs))
				break
			}
		}
	}
	return out
}

func stopConditions(ev *evidence.Evidence, owner *evidence.Finding, ownerWhy string, breach []string, rollbackWhy string, o *Options) map[string]evidence.StopCondition {
	sc := map[string]evidence.StopCondition{}
	if owner != nil {
		sc[evidence.StopOwnerLayer] = evidence.StopCondition{Met: true,
			Reason: fmt.Sprintf("%s: finding %s, confidence %.2f", owner.Layer, owner.ID, owner.Confidence)}
		sc[evidence.StopReproduced] = *owner.Reproduced
		im := owner.AcceptanceImpact
		switch {
		case im == nil:
			sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Reason: "no task records"}
		case im.Explained == 0 && len(breach) > 0:
			sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Met: true,
				Reason: fmt.Sprintf("no task was rejected for it, but the run misses %s in the symptom's dimension", strings.Join(breach, ", "))}
		case im.Rejected == 0:
			sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Reason: "no rejected tasks in the phase and no percentile bound missed: the symptom costs no accepted tasks at this load"}
		case im.Explained == 0:
			sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Reason: fmt.Sprintf("none of %d rejected tasks coincide with the symptom", im.Rejected)}
		default:
			sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Met: true,
				Reason: fmt.Sprintf("%d of %d rejected tasks (%.0f%%) coincide with the symptom (%s)", im.Explained, im.Rejected, im.Share*100, im.Basis)}
		}
	} else {
		sc[evidence.StopOwnerLayer] = evidence.StopCondition{Reason: ownerWhy}
		sc[evidence.StopReproduced] = evidence.StopCondition{Reason: "no owner finding to reproduce"}
		sc[evidence.StopAcceptanceImpact] = evidence.StopCondition{Reason: "no owner finding to attribute rejected tasks to"}
	}
	if len(ev.Rollback.Triggers) > 0 {
		sc[evidence.StopRollbackDefined] = evidence.StopCondition{Met: true,
			Reason: fmt.Sprintf("%d triggers from the baseline's warm distributions (bootstrap 95%% CI, seed %d)", len(ev.Rollback.Triggers), o.Seed)}
	} else {
		if rollbackWhy == "" {
			rollbackWhy = "no warm latency or acceptance measured"
		}
		sc[evidence.StopRollbackDefined] = evidence.StopCondition{Reason: rollbackWhy}
	}
	return sc
}

// headroom lists how close each bounded quantity is to its bound, nearest first.
func headroom(v *view) []evidence.Headroom {
	var out []evidence.Headroom
	for _, r := range v.objectives {
		if r.ValueMs != nil {
			out = append(out, evidence.Headroom{Signal: objectiveItem(r).Signal, Value: *r.ValueMs, Bound: r.LimitMs, Unit: "ms", Note: "contract objective " + r.Name})
		}
	}
	// Device and cache ceilings: the resources that run out first in LLM serving.
	for _, c := range []struct {
		sig   string
		bound float64
		note  string
	}{
		{evidence.SigKVUsageMax, 1, "KV-cache blocks; preemption starts at 100%"},
		{evidence.SigDRAMActive, 0.8, "practical HBM bandwidth ceiling"},
		{evidence.SigSMActive, 1, "SM active cycles"},
		{evidence.SigTensorActive, 1, "tensor-pipe active cycles"},
	} {
		if s, ok := v.sig[c.sig]; ok {
			out = append(out, evidence.Headroom{Signal: c.sig, Value: s.Value, Bound: c.bound, Unit: s.Unit, Note: c.note})
		}
	}
	for i := range out {
		out[i].Pct = math.Round(1000*(1-out[i].Value/out[i].Bound)) / 10
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pct < out[j].Pct })
	return out
}

// missingSources says which sources were absent and what each would settle.
func missingSources(v *view) []evidence.MissingSource {
	var out []evidence.MissingSource
	if !v.stages[evidence.StageServingCache] {
		out = append(out, evidence.MissingSource{Source: "engine /metrics", Flag: "--metrics URL",
			Settles: "queueing vs KV-cache pressure vs prefill; server-side TTFT for the client−server gap"})
	}
	cpu := profileOf(v.engine).CPU
	if !v.hasSource("dcgm") && !v.has(evidence.SigSMActive) {
		m := evidence.MissingSource{Source: "dcgm", Flag: "--dcgm URL",
			Settles: "bandwidth-bound vs launch-bound vs host-bound (SM active, DRAM active, tensor active)"}
		if cpu {
			m.Flag = "--dcgm URL (if it runs on an NVIDIA GPU)"
			m.Settles += "; on a CPU, the server's per-thread CPU time (perf stat -p PID) says whether its threads compute or wait"
		}
		out = append(out, m)
	}
	if !v.stages[evidence.StageKernelOperator] {
		m := evidence.MissingSource{Source: "profiler trace", Flag: "pel analyze DIR --trace FILE",
			Settles: "kernel gaps, short kernels, graph-capture fallback, communication share"}
		if cpu {
			m.Flag = "pel analyze DIR --trace FILE (if it runs on a GPU)"
			m.Settles += "; on a CPU, perf record -g -p PID shows where a step's time goes"
		}
		out = append(out, m)
	}
	return out
}

// losses is what the counts say of the tasks lost to errors and checks (nil when nothing
// was rejected), each class with its most frequent message on one line.
func (lc *leadCounts) losses() *evidence.Losses {
	// A sampled run's pass sees only its rejected tasks: the retried and attempt counts
	// stay zero there, and AttemptSuccess with them.
	if lc.rejectedN == 0 && lc.retried == 0 {
		return nil
	}
	out := &evidence.Losses{Tasks: lc.n, Rejected: lc.rejectedN, Errors: lc.errs, Failed: lc.failed, Checks: lc.checks,
		Retried: lc.retried, Retries: lc.retries, RetryDenied: lc.denied}
	if lc.attempts > 0 {
		out.AttemptSuccess = float64(lc.okAttempts) / float64(lc.attempts)
	}
	counts := func(m map[string]int, withMsg bool) []evidence.LossCount {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
		var cs []evidence.LossCount
		for _, k := range keys {
			c := evidence.LossCount{Name: k, N: m[k]}
			if withMsg {
				if top, _ := stats.MostFrequent(lc.msgs[k]); top != "" {
					c.Message = stats.OneLine(top, 120)
				}
			}
			cs = append(cs, c)
		}
		return cs
	}
	out.Classes = counts(lc.classes, true)
	out.CheckNames = counts(lc.checkNames, false)
	return out
}
