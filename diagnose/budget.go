package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/gpuspec"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
)

// The time budget: every completed warm task's time split into components, each charged
// to a layer (or to the measuring side, or left unattributed), with its source; the excess
// over the contract's bounds, over the tasks that missed them, attributed to the layers;
// and the physical floors the measured times compare with.
//
// Component definitions follow the engines' own phase boundaries. vLLM v1
// (vllm/v1/metrics/stats.py, RequestStateStats): queue = scheduled − queued (WAITING),
// prefill = first token − scheduled, decode = last token − first token, and TTFT = first
// token − arrival; so engine TTFT = queue + prefill, and client TTFT from send − engine TTFT
// is time outside the engine. llama.cpp (tools/server/server.cpp, result timings):
// prompt_ms is prompt processing once the slot started the task and predicted_ms the
// generation; a wait for a slot is in neither.

// ownerShare: a layer owns the excess when its components explain more than half of it,
// more than every other component together.
const ownerShare = 0.5

// newBudgetCtx reads the run-level figures and decides which layer each component is
// charged to: signature rules that fired sharpen the components they explain.
func newBudgetCtx(ev *evidence.Evidence, v *view, o *Options, found []ranked, specs map[string]impactSpec, recs []record.Record) *budgetCtx {
	b := &budgetCtx{}
	for i, d := range compDefs {
		b.layers[i], b.names[i] = d.layer, d.name
	}
	engines := 1
	if n, ok := v.val(evidence.SigEngines); ok && n >= 1 {
		engines = int(n)
	}
	b.sys = systemOf(ev.Run.EngineConfig, o, engines)
	b.floors = b.sys.ready()

	// Client-side figures.
	b.src[cLateness] = "client: first send − scheduled, less client queue"
	b.src[cClientQueue] = "client: wait for a contract concurrency slot"
	b.src[cRetries] = "client: final attempt's send − first attempt's send"
	b.src[cStalls] = "client token gaps over twice the task's median gap"
	b.unc[cStalls] = "a stall shorter than one median gap is counted as steps"

	// Engine TTFT, queue and prefill means (vLLM's request-phase histograms).
	nSent, sumSent := 0, 0.0
	nUnc, sumUnc := 0, 0.0
	for i := range recs {
		r := &recs[i]
		if r.Phase != record.PhaseWarm || !r.OK() || r.MultiStep() {
			continue
		}
		if d, ok := r.TTFTFromSent(); ok {
			nSent++
			sumSent += figure.Ms(d)
		}
		nUnc++
		sumUnc += uncached(r)
	}
	if nUnc > 0 {
		b.meanUncached = sumUnc / float64(nUnc)
	}
	if t, ok := v.val(evidence.SigServerTTFTMean); ok && nSent > 0 {
		meanSent := sumSent / float64(nSent)
		b.haveEngineTTFT = true
		b.outsideMs = math.Max(0, meanSent-t)
		b.src[cOutside] = fmt.Sprintf("client TTFT from send (mean %.0f ms) − engine TTFT (mean %.0f ms, %s)", meanSent, t, v.sig[evidence.SigServerTTFTMean].Source)
		if clock := engineTTFTClock(v); !clock.fromArrival {
			// The engine's TTFT starts at scheduling: its queue comes before it and is
			// the engine's time, not the path's.
			q, _ := v.val(evidence.SigServerQueueMean)
			b.ttftFromSchedule = true
			b.outsideMs = math.Max(0, meanSent-t-q)
			b.src[cOutside] = fmt.Sprintf("client TTFT from send (mean %.0f ms) − engine queue (mean %.0f ms) − engine TTFT (mean %.0f ms, %s; it starts at scheduling, by %s)", meanSent, q, t, v.sig[evidence.SigServerTTFTMean].Source, clock.why)
		}
		b.unc[cOutside] = "run-level mean given to every task"
	}
	if q, ok := v.val(evidence.SigServerQueueMean); ok {
		b.haveQueue, b.queueMs = true, q
		b.src[cQueue] = "engine queue histogram (WAITING phase)"
	} else if w, ok := v.val(evidence.SigWaitingMean); ok {
		// Little's law: mean requests waiting = arrival rate × mean wait.
		if thr, ok := v.val(evidence.SigThroughput); ok && thr > 0 {
			b.haveQueue, b.queueMs = true, 1000*w/thr
			b.src[cQueue] = fmt.Sprintf("engine requests_waiting mean %.2f ÷ %.2f tasks/s (Little's law)", w, thr)
			b.unc[cQueue] = "run-level mean given to every task"
		}
	}
	slots, err := strconv.Atoi(ev.Run.EngineConfig["slots"])
	if err != nil {
		slots = 0
	}
	if slots > 0 && engines == 1 {
		b.slotWait = slotWaits(recs, slots)
		b.src[cQueue] = fmt.Sprintf("client records: each task's wait for one of the engine's %d slots, replayed first come first served from every request's send and end", slots)
		b.unc[cQueue] = "assumes first-come first-served admission; another client's requests are not seen"
	}
	if rm, ok := v.val(evidence.SigRunningMax); ok {
		if slots > 0 && rm < float64(slots) {
			b.idle = true
			b.src[cOutside] = fmt.Sprintf("by elimination: at most %.0f of %d slots ran and the engine's queue holds the rest", rm, slots)
		}
	}
	if p, ok := v.val(evidence.SigServerPrefillMean); ok {
		b.havePrefill, b.prefillMean = true, p
		b.src[cPrefillFloor] = "engine prefill histogram mean, apportioned by uncached prompt tokens"
		b.unc[cPrefillFloor] = "apportioned linearly in prompt length"
	}
	if it, ok := v.val(evidence.SigServerITLP50); ok {
		b.perToken = it
	}
	form := ev.Run.EngineForm
	if form == "" {
		form = profileOf(ev.Run.Engine).Processes
	}
	// The API server's own time: the engine's frontend-stamped E2E less the core's queue,
	// prefill and decode intervals, all four observed as each request finishes (vLLM records
	// them together on finish), so they average one population; TTFT is observed at the
	// first token instead, over another set of requests when the load drifts, so it serves
	// only where the engine gives no E2E and decode histograms.
	qm, queueHist := v.val(evidence.SigServerQueueMean)
	if form == "two" && queueHist && b.havePrefill && b.slotWait == nil {
		e2e, okE := v.val(evidence.SigServerE2EMean)
		dec, okD := v.val(evidence.SigServerDecodeMean)
		ttft, okT := v.val(evidence.SigServerTTFTMean)
		switch {
		case okE && okD:
			if f := e2e - qm - b.prefillMean - dec; f > 0 {
				b.frontendMs = f
				b.src[cFrontend] = fmt.Sprintf("engine E2E mean %.0f ms (its API server's arrival to its last output) − the core's queue %.0f, prefill %.0f and decode %.0f ms means", e2e, qm, b.prefillMean, dec)
			}
		case okT && !b.ttftFromSchedule:
			if f := ttft - qm - b.prefillMean; f > 0 {
				b.frontendMs = f
				b.src[cFrontend] = fmt.Sprintf("engine TTFT mean %.0f ms (from its API server's arrival) − the core's queue %.0f ms and prefill %.0f ms means", ttft, qm, b.prefillMean)
			}
		}
		if b.frontendMs > 0 {
			b.unc[cFrontend] = "run-level mean given to every task"
		}
	}
	if !b.haveQueue && !b.haveEngineTTFT && b.slotWait == nil {
		b.measuredBy[cQueue] = "engine /metrics (queue histogram or waiting gauge) or OTLP spans (gen_ai.latency.time_in_queue)"
		b.measuredBy[cOutside] = "the engine's own TTFT (vLLM time_to_first_token histogram, OTLP spans) against the client's"
	}

	// Which layer the queue belongs to: a full KV cache with preemptions makes requests
	// wait for blocks (memory); work needing most of the floor capacity waits for the
	// hardware whatever the schedule; otherwise the schedule (admission, slots, batching).
	// vLLM preempts a running sequence only when the block pool cannot give it the next
	// block (vllm/v1/core/sched/scheduler.py, the preemption loop in schedule()): any
	// preemption says the cache ran out, whatever a sampled usage gauge read.
	kvFull := false
	if p, ok := v.val(evidence.SigPreemptions); ok && p > 0 {
		kvFull = true
	}
	b.queueAll = explainsWhole(found, cQueue, b, v)
	switch {
	case kvFull:
		b.layers[cQueue] = evidence.LayerMemory
		b.names[cQueue] = "engine queue (waiting for KV blocks; preemptions)"
		b.layers[cStalls] = evidence.LayerMemory
		b.names[cStalls] = "decode stalls (preemption and recompute)"
	default:
		// The finding that says why requests waited names the queue's layer: a cause it
		// sees (the cache, lost context), a slow service the queue formed behind, or the
		// engine running at its ceiling.
		if l, name, _, ok := attributed(found, cQueue, b, v); ok {
			b.layers[cQueue], b.names[cQueue] = l, name
		}
		// Stalls are co-batched prefills by default. Bursty delivery looks like stalls from
		// the client, and a slow step makes every stall longer: a rule that saw the stream
		// held back, or why steps are slow, names them, unless the prefill-stall rule holds.
		if l, name, _, ok := attributed(found, cStalls, b, v); ok {
			b.layers[cStalls], b.names[cStalls] = l, name
		}
	}
	if b.layers[cStalls] == "" {
		b.measuredBy[cStalls] = "engine /metrics and the other tasks' first tokens (a stall that ends as a prefill does is the prefill's), or a profiler trace of the stalled steps"
	}
	// The part of a task's queue the load alone explains is the hardware's: its wait in an
	// ideal processor-sharing server at the measured cost, fed the run's arrivals
	// (budget_load.go); any wait beyond it is the schedule's.
	if b.floors && !kvFull {
		b.load, _ = b.floorLoadService(ev, recs)
		var how string
		b.loadWait, b.costRatio, how = b.loadWaits(v, recs)
		b.src[cQueueCap] = "each task's wait in an ideal processor-sharing server fed the run's arrivals at " + how + fmt.Sprintf("; floor load ρ %.2f", b.load)
		b.unc[cQueueCap] = "the ideal server's rate comes from run-level means"
	}

	// Prefill above its floor: long prompts computed slowly (kernel), or mixed with decodes
	// or split in chunks (scheduling). Only a finding that saw which says so.
	if l, name, _, ok := attributed(found, cPrefillOver, b, v); ok {
		b.layers[cPrefillOver], b.names[cPrefillOver] = l, name
	} else {
		b.measuredBy[cPrefillOver] = "a profiler trace of prefill steps (attention vs GEMM time: kernel vs batching)"
	}

	// Decode above its floor.
	if c, ok := v.val(evidence.SigTraceCommPct); ok && c > 0 {
		ov, _ := v.val(evidence.SigTraceCommOverlapPct)
		b.commFrac = c / 100 * (1 - math.Min(ov, 100)/100)
		b.src[cComm] = fmt.Sprintf("trace: communication %.0f%% of kernel time, %.0f%% overlapped", c, ov)
		b.unc[cComm] = "the trace's window stands for every step"
	} else if b.sys.tp > 1 {
		b.measuredBy[cComm] = "a profiler trace (pel analyze DIR --trace FILE): communication share of kernel time"
	}
	if a, ok := v.val(evidence.SigSpecAcceptanceRate); ok && a < specNoGain {
		b.specCost = true
		b.src[cSpec] = fmt.Sprintf("engine spec acceptance %.3f: with nothing accepted every draft is net cost", a)
	} else if _, name, _, ok := attributed(found, cSpec, b, v); ok {
		b.specCost = true
		b.src[cSpec] = name
	}
	if l, name, _, ok := attributed(found, cDecodeOver, b, v); ok {
		b.layers[cDecodeOver], b.names[cDecodeOver] = l, name
	} else if l, why, away := hostFromTrace(v); l != "" {
		b.layers[cDecodeOver] = l
		b.names[cDecodeOver] = "decode steps above their floor (" + why + ")"
	} else if away != "" {
		b.measuredBy[cDecodeOver] = away
	} else {
		b.measuredBy[cDecodeOver] = "a profiler trace (kernel gaps vs host time) or DCGM (SM vs DRAM active): kernel vs scheduler"
	}
	// What no source splits is charged to the strongest credible rule of its dimension, by
	// name, and otherwise stays unattributed.
	for _, x := range found {
		if x.f.Confidence < ownerMinConfidence || x.f.Severity == evidence.SeverityInfo {
			continue
		}
		dims := map[string]bool{}
		for _, d := range specs[x.r.id].dims {
			dims[d] = true
		}
		if dims[dimTTFT] && b.layers[cTTFTRest] == "" {
			b.layers[cTTFTRest] = x.f.Layer
			b.names[cTTFTRest] = "to first token, unsplit (" + x.r.id + ")"
		}
		if (dims[dimITL] || dims[dimTPOT]) && b.layers[cDecodeRest] == "" {
			b.layers[cDecodeRest] = x.f.Layer
			b.names[cDecodeRest] = "decode, unsplit (" + x.r.id + ")"
		}
	}
	if b.layers[cTTFTRest] == "" {
		b.measuredBy[cTTFTRest] = "engine /metrics (queue and prefill histograms), server timings or OTLP spans"
	}
	if !b.floors && b.layers[cDecodeOver] == "" {
		b.names[cDecodeOver] = "decode steps (no floor known)"
	}
	if b.floors {
		batch, ctx := b.batchAndContext(v, recs, engines)
		b.stepFloor, b.commFloor = b.sys.decodeStep(batch, ctx)
		b.src[cDecodeFloor] = fmt.Sprintf("floor %.2f ms per step (batch %.1f, context %.0f tokens)", b.stepFloor, batch, ctx)
		b.src[cPrefillFloor] = joinNote(b.src[cPrefillFloor], "floor: 2 FLOPs per active weight per token at achievable tensor throughput")
	} else {
		b.measuredBy[cDecodeFloor] = "the GPU model (DCGM modelName, or contract system.gpu) and parameters (contract system.params)"
		b.measuredBy[cPrefillFloor] = b.measuredBy[cDecodeFloor]
	}
	return b
}

// batchAndContext is the mean decode batch per replica and the mean context a sequence
// holds: the engine's running gauge, else the client's in-flight count.
func (b *budgetCtx) batchAndContext(v *view, recs []record.Record, engines int) (batch, ctx float64) {
	batch = 1
	if r, ok := v.val(evidence.SigRunningMean); ok && r > 0 {
		batch = r
	} else if f, ok := v.val(evidence.SigInFlightMean); ok && f > 0 {
		batch = math.Max(1, f/float64(engines))
	}
	n, sum := 0, 0.0
	for i := range recs {
		r := &recs[i]
		if r.Phase == record.PhaseWarm && r.OK() && !r.MultiStep() {
			n++
			sum += float64(r.PromptTokens) + float64(r.OutputTokens)/2
		}
	}
	if n > 0 {
		ctx = sum / float64(n)
	}
	return batch, ctx
}

// floorLoad is the share of the warm window the deployment needs, at its floor, for the
// warm tasks' FLOPs (prefill and decode; batching cannot remove FLOPs).
func (b *budgetCtx) floorLoad(ev *evidence.Evidence, recs []record.Record) float64 {
	rho, _ := b.floorLoadService(ev, recs)
	return rho
}

// floorLoadService is the floor's load ρ and the mean floor service time of a task in ms
// (its FLOPs at the deployment's achievable FLOP/s).
func (b *budgetCtx) floorLoadService(ev *evidence.Evidence, recs []record.Record) (rho, svcMs float64) {
	if !b.floors {
		return 0, 0
	}
	var win float64
	for _, p := range ev.Run.Phases {
		if p.Name == evidence.PhaseWarm {
			win += p.EndS - p.StartS
		}
	}
	if win <= 0 {
		return 0, 0
	}
	flops, n := 0.0, 0
	for i := range recs {
		r := &recs[i]
		if r.Phase == record.PhaseWarm && !r.MultiStep() {
			flops += 2 * b.sys.active * (uncached(r) + float64(r.OutputTokens))
			n++
		}
	}
	rate := float64(b.sys.gpus) * b.sys.gpu.PeakFLOPS * gpuspec.AchievableTensor
	if n == 0 || rate <= 0 {
		return 0, 0
	}
	return flops / (rate * win), 1000 * flops / float64(n) / rate
}

// buildBudget computes the run's budget and the attribution of its excess.
func buildBudget(ev *evidence.Evidence, v *view, o *Options, found []ranked, specs map[string]impactSpec, recs []record.Record, spans map[*record.Record]record.EngineSpan) *evidence.Budget {
	b := newBudgetCtx(ev, v, o, found, specs, recs)
	b.useSpans(spans)
	missed := missedSet(o, v.objectives)
	accs := map[string]*acc{}
	var order []string
	excess := map[string]float64{} // bucket → ms
	bucketLayer := map[string]evidence.Layer{}
	nOver, coldOver, total := 0, 0, 0.0
	// charge adds a component's share of a task's excess to its layer's bucket (a component
	// with no layer keeps its own name, so unattributed time stays visible).
	charge := func(slot int, m float64) {
		if m <= 0 {
			return
		}
		key := string(b.layers[slot])
		if key == "" {
			key = b.names[slot]
		}
		bucketLayer[key] = b.layers[slot]
		excess[key] += m
		total += m
	}
	errs := map[string]*errAcc{}
	ectx := roomOf(v)
	var lost []lostTask
	for i := range recs {
		r := &recs[i]
		if r.Phase == record.PhaseWarm && r.Failed() && !r.MultiStep() {
			a := errs[r.Task]
			if a == nil {
				a = &errAcc{}
				errs[r.Task] = a
			}
			class := a.addError(r)
			l, _ := ectx.layerOf(class)
			lost = append(lost, lostTask{class, l})
			continue
		}
		if r.MultiStep() && r.OK() && r.Phase == record.PhaseWarm {
			a := accs[r.Task]
			if a == nil {
				a = &acc{}
				accs[r.Task] = a
				order = append(order, r.Task)
			}
			if b.multiStep(r, a, o, missed, charge) {
				nOver++
			}
			continue
		}
		if !r.OK() || r.MultiStep() {
			continue
		}
		// A cold task rejected for latency is a user's task lost too: its excess counts;
		// the per-type means are the warm phase's.
		cold := r.Phase == record.PhaseCold
		if r.Phase != record.PhaseWarm && !(cold && !r.Accepted) {
			continue
		}
		t, ok := b.taskBudget(r)
		if !ok {
			continue
		}
		o.eachTask(r, &t)
		if cold {
			x := excessOf(&t, o, nil)
			if x.ttft > 0 || x.itl > 0 || x.e2e > 0 {
				nOver++
				coldOver++
				b.excessShares(&t, x, charge)
			}
			continue
		}
		a := accs[r.Task]
		if a == nil {
			a = &acc{}
			accs[r.Task] = a
			order = append(order, r.Task)
		}
		a.addTask(b, r, &t)
		x := excessOf(&t, o, missed)
		if x.ttft <= 0 && x.itl <= 0 && x.e2e <= 0 {
			continue
		}
		a.over++
		nOver++
		b.excessShares(&t, x, charge)
	}
	// Lost tasks count as tasks over their bounds (budget_errors.go).
	if len(lost) > 0 {
		chargeLost(lost, excess, bucketLayer, &total, nOver)
		nOver += len(lost)
	}
	for task := range errs {
		if accs[task] == nil {
			accs[task] = &acc{}
			order = append(order, task)
		}
	}
	sort.Strings(order)
	out := &evidence.Budget{}
	for _, task := range order {
		a := accs[task]
		n := float64(max(a.n, 1))
		tb := evidence.TaskBudget{Task: task, Tasks: a.n, Over: a.over, TTFTMs: figure.Sig3(a.ttft / n), DecodeMs: figure.Sig3(a.dc / n), TokensPer: figure.Sig3(a.tok / n),
			PerCall: a.perCall}
		if e := errs[task]; e != nil {
			tb.Failed = e.n
			tb.Components = append(tb.Components, e.items(ectx)...)
		}
		for _, m := range []contract.Metric{contract.MetricTTFT, contract.MetricITL} {
			bd, ok := o.limitFor(task, m, 0.99)
			if !ok {
				bd, ok = o.limitFor(task, m, 0)
			}
			if ok && m == contract.MetricTTFT {
				tb.TTFTBoundMs = bd
			} else if ok {
				tb.ITLBoundMs = bd
			}
		}
		if b.floors {
			tb.TTFTFloorMs, tb.DecodeFloorMs = figure.Sig3(a.ttftFl/n), figure.Sig3(a.decFl/n)
		}
		for j := 0; j < nComponents; j++ {
			it := evidence.BudgetItem{Name: b.names[j], Part: compDefs[j].part, Layer: b.layers[j], Ms: figure.Sig3(a.sum[j] / n),
				Source: b.src[j], Uncertainty: b.unc[j]}
			if math.Abs(it.Ms) < minItemMs {
				it.Ms = 0
			}
			if it.Ms == 0 {
				if b.measuredBy[j] == "" {
					continue // measured, and nothing there
				}
				it.MeasuredBy = b.measuredBy[j]
			}
			tb.Components = append(tb.Components, it)
		}
		out.TaskTypes = append(out.TaskTypes, tb)
	}
	if b.floors {
		out.Floors = b.floorsOut(v, ev, recs)
	} else if len(b.sys.unknown) > 0 {
		out.Floors = nil
	}
	out.Config = configFacts(ev)
	out.Infeasible = infeasible(&b.sys, o, v, recs)
	if nOver > 0 && total > 0 {
		out.Excess = attribute(excess, bucketLayer, total, nOver, b)
		out.Excess.Lost = len(lost)
		// Each count names its phase: the per-type figures above are the warm phase's.
		basis := fmt.Sprintf("%d warm tasks over their own task type's bounds", nOver-coldOver-len(lost))
		if len(lost) > 0 {
			basis += fmt.Sprintf(", %d warm tasks lost to errors (each counted as the mean excess of a late one)", len(lost))
		}
		if coldOver > 0 {
			basis += fmt.Sprintf(", %d cold tasks rejected for latency", coldOver)
		}
		out.Excess.Basis = basis + "; " + durationText(total) + " over the bounds in all"
	}
	return out
}

// floorsOut reports the floors and the measured ÷ floor ratios.
func (b *budgetCtx) floorsOut(v *view, ev *evidence.Evidence, recs []record.Record) *evidence.Floors {
	engines := 1
	if n, ok := v.val(evidence.SigEngines); ok && n >= 1 {
		engines = int(n)
	}
	batch, ctx := b.batchAndContext(v, recs, engines)
	f := &evidence.Floors{GPU: b.sys.gpu.Key, DecodeStepMs: figure.Sig3(b.stepFloor), CommStepMs: figure.Sig3(b.commFloor),
		PrefillMsPerKTok: figure.Sig3(b.sys.prefill(1000)), Batch: figure.Sig3(batch), Context: figure.Sig3(ctx),
		Inputs: b.sys.facts, Unknown: b.sys.unknown, FloorLoad: figure.Sig3(b.floorLoad(ev, recs))}
	// The client's median gap is exact; the engine's histogram median is bucket-interpolated
	// and serves when a buffering path bunches the client's tokens.
	meas, ok := v.val(evidence.SigITLP50)
	if tpc, ok2 := v.val(evidence.SigTokensPerChunk); !ok || (ok2 && tpc > 1.5) {
		if m, ok3 := v.val(evidence.SigServerITLP50); ok3 {
			meas, ok = m, true
		}
	}
	if ok && b.stepFloor > 0 {
		f.MeasuredStepMs = figure.Sig3(meas)
		f.DecodeRatio = figure.Sig3(meas / b.stepFloor)
	}
	if b.havePrefill && b.meanUncached > 0 {
		if fl := b.sys.prefill(b.meanUncached); fl > 0 {
			f.PrefillRatio = figure.Sig3(b.prefillMean / fl)
		}
	}
	return f
}

// attribute turns the excess per bucket into shares and names the owner.
func attribute(excess map[string]float64, layerOf map[string]evidence.Layer, total float64, n int, b *budgetCtx) *evidence.Excess {
	x := &evidence.Excess{Tasks: n, TotalMs: figure.Sig3(total),
		Basis: fmt.Sprintf("%d tasks over their own task type's bounds; %s over the bounds in all", n, durationText(total))}
	for k, m := range excess {
		x.Shares = append(x.Shares, evidence.LayerShare{Layer: layerOf[k], What: k, Ms: figure.Sig3(m), Share: figure.Sig3(m / total)})
	}
	sort.Slice(x.Shares, func(i, j int) bool {
		if x.Shares[i].Ms != x.Shares[j].Ms {
			return x.Shares[i].Ms > x.Shares[j].Ms
		}
		return x.Shares[i].What < x.Shares[j].What
	})
	top := x.Shares[0]
	if top.Layer != "" && top.Share > ownerShare {
		x.Owner = top.Layer
		return x
	}
	var cands []string
	for _, s := range x.Shares {
		if s.Layer != "" && len(cands) < 2 {
			cands = append(cands, string(s.Layer))
		}
	}
	x.Candidates = cands
	x.Probe = probeFor(cands, top, b)
	return x
}

// probeFor names the one measurement that separates the leading candidates (or measures
// the unattributed part that leads).
func probeFor(cands []string, top evidence.LayerShare, b *budgetCtx) string {
	if top.Layer == "" {
		for i, n := range b.names {
			if n == top.What && b.measuredBy[i] != "" {
				return b.measuredBy[i]
			}
		}
		if strings.HasPrefix(top.What, "client lateness") {
			return "rerun the load generator on a quieter machine (its own lateness leads the excess)"
		}
	}
	return pairProbe(cands)
}

// pairProbe names the measurement that separates two leading layers.
func pairProbe(cands []string) string {
	pair := strings.Join(cands, "+")
	switch {
	case strings.Contains(pair, "kernel") && strings.Contains(pair, "scheduling"):
		return "a profiler trace of a few steps (pel analyze DIR --trace FILE): kernel gaps vs host time between steps"
	case strings.Contains(pair, "hardware") && strings.Contains(pair, "scheduling"):
		return "rerun at half the arrival rate: a capacity limit halves the queue, a schedule limit keeps it"
	case strings.Contains(pair, "memory") && strings.Contains(pair, "scheduling"):
		return "engine /metrics over the run (KV usage and preemptions against requests waiting)"
	case strings.Contains(pair, "application"):
		return "OTLP spans or server timings per request (the engine's arrival time against the client's send)"
	}
	return "engine /metrics, DCGM and a profiler trace of a few steps (pel analyze DIR --trace FILE)"
}

// configFacts lists what the engine reported of its configuration and what it did not.
func configFacts(ev *evidence.Evidence) []evidence.ConfigFact {
	var out []evidence.ConfigFact
	keys := make([]string, 0, len(ev.Run.EngineConfig))
	for k := range ev.Run.EngineConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, evidence.ConfigFact{Key: k, Value: ev.Run.EngineConfig[k], Source: "engine"})
	}
	for _, k := range []string{evidence.ConfigChunkedPrefill, evidence.ConfigMaxNumSeqs, evidence.ConfigMaxBatchedTok,
		evidence.ConfigKVDType, evidence.ConfigSpeculative, evidence.ConfigTensorParallel} {
		_, ok := ev.Run.EngineConfig[k]
		if k == evidence.ConfigMaxNumSeqs && ev.Run.EngineConfig["slots"] != "" {
			ok = true // llama.cpp's parallel slots (/props total_slots)
		}
		if !ok {
			out = append(out, evidence.ConfigFact{Key: k, Value: "unknown", Source: "not reported by the engine"})
		}
	}
	return out
}

// A trace whose GPU idles at least traceIdleMin of its kernel time, most of the idle gaps
// (hostWaitMin) starting before the host issued the next operation, says the time over the
// floor is the host's (the thresholds the rules use). With graph launches in use (at least
// graphShareMax of them) the host time lies between steps, the engine's loop (scheduling);
// with eager launches it is the per-kernel launch path (kernel), unless most of that wait
// lies in gaps where the host issued nothing at all (hostAwayMin): the host was then doing
// work the trace's launches do not show, which the trace cannot name (an engine loop, a
// frontend in the same process, waiting for input), and the component stays unattributed
// with the probe that names it.
// hostFromTrace charges decode time over its floor from a trace's idle gaps, or "" and,
// when the trace saw the host away, what would settle it.
func hostFromTrace(v *view) (l evidence.Layer, why, away string) {
	idle, ok1 := v.val(evidence.SigTraceIdlePct)
	hw, ok2 := v.val(evidence.SigTraceHostWaitShare)
	if !ok1 || !ok2 || idle < traceIdleMin || hw < hostWaitMin {
		return "", "", ""
	}
	if g, ok := v.val(evidence.SigTraceGraphLaunchShare); ok && g >= graphShareMax {
		return evidence.LayerScheduling, fmt.Sprintf("trace: GPU idle %.0f%%, %.0f%% of gaps host waits between graph-launched steps", idle, hw*100), ""
	}
	if a, ok := v.val(evidence.SigTraceHostAwayShare); ok && a >= hostAwayMin {
		return "", "", fmt.Sprintf("a profile of the engine process's host threads (py-spy dump/record): the trace shows the GPU idle %.0f%%, "+
			"%.0f%% of that waiting on the host, and %.0f%% of the wait in gaps where the launching thread made no runtime call for longer than a launch takes (100 µs by default) — "+
			"host work the trace does not show: the engine loop (scheduling), a frontend in its process (application), or Python between launches", idle, hw*100, a*100)
	}
	return evidence.LayerKernel, fmt.Sprintf("trace: GPU idle %.0f%%, %.0f%% of gaps host waits on eager launches", idle, hw*100), ""
}

// durationText writes a sum of milliseconds at the scale a reader takes in: "850 ms",
// "12.4 s", "2752 s (45.9 min)".
func durationText(ms float64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 120_000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f s (%.1f min)", ms/1000, ms/60_000)
}
