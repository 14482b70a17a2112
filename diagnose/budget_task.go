package diagnose

import (
	"math"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// Component slots, in the order a task's time passes through them.
const (
	cLateness = iota
	cClientQueue
	cRetries
	cOutside
	cFrontend
	cQueueCap
	cQueue
	cPrefillFloor
	cPrefillOver
	cDelivery
	cTTFTRest
	cDecodeFloor
	cDecodeOver
	cComm
	cSpec
	cStalls
	cDecodeRest
	cBetweenPlanned
	cBetweenRest
	nComponents
)

// stallFactor: a token gap over twice the task's median gap is a stall, not a step: a
// continuous-batching engine emits one token per sequence per step, so a gap of two steps
// or more means a step did other work (a co-batched prefill, a recompute) or none.
const stallFactor = 2.0

// specNoGain: below one accepted draft token in twenty, a draft repays nothing: at k draft
// tokens a step gains at most k/20 of a token while it pays for k draft passes and their
// verification.
const specNoGain = 0.05

// minItemMs: a component under 10 µs per task is rounding left by the subtraction of
// measured times, not time spent.
const minItemMs = 0.01

// compDef names a component, its part, default layer and source.
type compDef struct {
	name  string
	part  string
	layer evidence.Layer
}

var compDefs = [nComponents]compDef{
	cLateness:    {"client lateness (load generator behind schedule)", evidence.PartTTFT, ""},
	cClientQueue: {"client queue (contract max_in_flight)", evidence.PartTTFT, ""},
	cRetries:     {"earlier attempts and backoff", evidence.PartTTFT, ""},
	cOutside:     {"outside the engine before it saw the request", evidence.PartTTFT, evidence.LayerApplication},
	// An engine whose API server runs apart from its core (vLLM V1, SGLang) times TTFT from
	// the API server's arrival to its handling of the first token, its queue and prefill in
	// the core: the rest of its TTFT is the API server's (tokenizing in, detokenizing and
	// streaming out), the application's side of the engine.
	cFrontend:     {"in the engine's API server (input and output processing)", evidence.PartTTFT, evidence.LayerApplication},
	cQueueCap:     {"engine queue the load alone explains (ideal processor sharing)", evidence.PartTTFT, evidence.LayerHardware},
	cQueue:        {"engine queue", evidence.PartTTFT, evidence.LayerScheduling},
	cPrefillFloor: {"prefill at the compute floor", evidence.PartTTFT, evidence.LayerHardware},
	cPrefillOver:  {"prefill above its floor", evidence.PartTTFT, ""},
	cDelivery:     {"tokens held back before the first event", evidence.PartTTFT, evidence.LayerApplication},
	cTTFTRest:     {"unattributed (to first token)", evidence.PartTTFT, ""},
	cDecodeFloor:  {"decode at the bandwidth floor", evidence.PartDecode, evidence.LayerHardware},
	cDecodeOver:   {"decode steps above their floor", evidence.PartDecode, ""},
	cComm:         {"communication (exposed collectives)", evidence.PartDecode, evidence.LayerParallelism},
	cSpec:         {"speculative net cost", evidence.PartDecode, evidence.LayerSpeculative},
	cStalls:       {"decode stalls (cause not separated)", evidence.PartDecode, ""},
	cDecodeRest:   {"unattributed (decode)", evidence.PartDecode, ""},
	// The waits a multi-step task plans between its calls (user think time, tool latency)
	// are the application's own design, as the waits-between-steps rule charges them.
	cBetweenPlanned: {"planned think and tool time between calls", evidence.PartBetween, evidence.LayerApplication},
	cBetweenRest:    {"between calls, beyond the plan (client)", evidence.PartBetween, ""},
}

// taskTime is one task's budget.
type taskTime struct {
	r      *record.Record
	ms     [nComponents]float64
	ttft   float64 // from scheduled
	decode float64
	tokens float64 // tokens after the first event
	medGap float64 // the task's median per-token gap
	// gaps[i] is the per-token gap of the i-th content event after the first, shared by its
	// gapN[i] tokens (held per event, so a task costs its events, not its tokens).
	gaps []float64
	gapN []int
	// steadyGap[i] is gaps[i] less any stall of its event; stallMs and steadyMs add up the
	// decode's stalls and steps.
	steadyGap         []float64
	stallMs, steadyMs float64
	// slotWait is the task's replayed wait for an engine slot, before any clamping.
	slotWait float64
}

// eventGaps fills the per-token gaps of r and splits its decode into steps and stalls.
func (t *taskTime) eventGaps(r *record.Record) {
	n := min(len(r.ChunkUS), len(r.ChunkTokens))
	var ev []float64
	for i := 1; i < n; i++ {
		if r.ChunkTokens[i] > 0 {
			ev = append(ev, float64(r.ChunkUS[i]-r.ChunkUS[i-1])/1000)
		}
	}
	if len(ev) == 0 {
		return
	}
	med := quantile.Of(ev, 0.5)
	j, tokens := 0, 0
	var steadyRuns []quantile.Weighted
	for i := 1; i < n && tokens < record.MaxTokens; i++ {
		k := r.ChunkTokens[i]
		if k <= 0 {
			continue
		}
		g := ev[j]
		j++
		steady := g
		if g > stallFactor*med {
			t.stallMs += g - med
			steady = med
		}
		t.steadyMs += steady
		kept := min(k, record.MaxTokens-tokens)
		tokens += kept
		t.gaps = append(t.gaps, g/float64(k))
		t.gapN = append(t.gapN, kept)
		t.steadyGap = append(t.steadyGap, steady/float64(k))
		steadyRuns = append(steadyRuns, quantile.Weighted{V: steady / float64(k), N: int64(kept)})
	}
	t.tokens = float64(tokens)
	t.medGap = quantile.OfWeighted(steadyRuns, 0.5)
}

// budgetCtx holds the run-level figures every task's budget uses and what each comes from.
type budgetCtx struct {
	sys        system
	floors     bool
	stepFloor  float64 // ms per decode step at the run's batch and context
	commFloor  float64
	layers     [nComponents]evidence.Layer
	names      [nComponents]string
	src        [nComponents]string
	unc        [nComponents]string
	measuredBy [nComponents]string
	// Engine figures (run-level).
	outsideMs, queueMs, prefillMean, meanUncached float64
	haveEngineTTFT, haveQueue, havePrefill        bool
	// ttftFromSchedule: the engine's TTFT leaves its queue out (engineTTFTClock).
	ttftFromSchedule bool
	perToken         float64 // engine's per-token decode time, ms
	commFrac         float64 // exposed collective share of decode
	specCost         bool
	// queueAll: the wait before the engine's own processing is its queue (a rule saw the
	// engine at its ceiling); idle: the engine had free capacity, so a wait the engine's
	// queue does not account for was spent before it saw the request.
	queueAll, idle bool
	// frontendMs is the mean time in the engine's API server: when it runs apart from the
	// core (evidence run.engine_form), the engine's TTFT mean less the core's queue and
	// prefill means.
	frontendMs float64
	// load is the floor's load ρ; loadWait each task's wait in the ideal server at the
	// measured cost ratio costRatio (budget_load.go).
	load      float64
	loadWait  map[*record.Record]float64
	costRatio float64
	// spans are the engine's own per-request timings (OTLP), used before run-level means.
	spans map[*record.Record]record.EngineSpan
	// slotWait is each request's wait for one of the engine's slots, replayed from the
	// client's records (budget_slots.go); nil when the engine reports no slot count.
	slotWait map[*record.Record]float64
}

// taskBudget splits one completed task's time.
func (b *budgetCtx) taskBudget(r *record.Record) (taskTime, bool) {
	t := taskTime{r: r}
	ttft, ok := r.TTFT()
	sentD, ok2 := r.TTFTFromSent()
	if !ok || !ok2 {
		return t, false
	}
	t.ttft = figure.Ms(ttft)
	lag, _ := r.ScheduleLag()
	t.ms[cLateness] = math.Max(0, figure.Ms(lag))
	t.ms[cClientQueue] = float64(r.ClientQueueUS) / 1000
	if !r.FirstSentAt.IsZero() && r.SentAt.After(r.FirstSentAt) {
		t.ms[cRetries] = figure.Ms(r.SentAt.Sub(r.FirstSentAt))
	}
	sent := figure.Ms(sentD)
	if b.slotWait != nil {
		t.slotWait = b.slotWait[r]
	}

	// Per-token gaps, from the event gaps spread over the tokens each event carried; an event
	// gap over stallFactor × the task's median event gap is a stall (a speculative step's
	// several tokens, or a proxy's burst, are one event, not several gaps).
	t.eventGaps(r)
	perTok := b.perToken
	if r.Server != nil && r.Server.DecodeUS > 0 && r.OutputTokens > 1 {
		perTok = float64(r.Server.DecodeUS) / 1000 / float64(r.OutputTokens-1)
	} else if sp, ok := b.spans[r]; ok && sp.DecodeUS > 0 && r.OutputTokens > 1 {
		perTok = float64(sp.DecodeUS) / 1000 / float64(r.OutputTokens-1)
	}
	// Tokens that came with the first event were generated before the client saw any.
	if len(r.ChunkTokens) > 0 && r.ChunkTokens[0] > 1 && perTok > 0 {
		t.ms[cDelivery] = math.Min(sent, float64(r.ChunkTokens[0]-1)*perTok)
		if r.Server != nil && r.Server.PrefillUS > 0 {
			// The engine measured its prompt's processing, which ends before the first
			// token exists; those tokens were made after it. The event's token count is
			// often spread by bytes from the stream's total (llama.cpp's process_token,
			// examples/server/server.cpp, holds back a token that ends mid UTF-8
			// character and sends it with the next), so it gives way to the measured
			// prefill, not the other way round.
			t.ms[cDelivery] = math.Min(t.ms[cDelivery], math.Max(0, sent-float64(r.Server.PrefillUS)/1000))
		}
	}
	rest := sent - t.ms[cDelivery]
	var prefill float64
	sp, haveSpan := b.spans[r]
	switch {
	case haveSpan && r.Server == nil:
		// The task's own span: engine TTFT (its arrival → first token) = queue + prefill;
		// what the client waited beyond it from its send was outside the engine.
		eng := float64(sp.TTFTUS) / 1000
		if eng <= 0 {
			eng = float64(sp.QueueUS+sp.PrefillUS) / 1000
		}
		t.ms[cOutside] = math.Max(0, rest-eng)
		e := rest - t.ms[cOutside]
		pre := float64(sp.PrefillUS) / 1000
		if pre <= 0 && sp.QueueUS > 0 {
			pre = eng - float64(sp.QueueUS)/1000
		}
		prefill = math.Max(0, math.Min(e, pre))
		t.ms[cQueue] = math.Max(0, math.Min(e-prefill, float64(sp.QueueUS)/1000))
		t.ms[cTTFTRest] = e - prefill - t.ms[cQueue]
	case r.Server != nil && r.Server.PrefillUS > 0:
		prefill = math.Min(rest, float64(r.Server.PrefillUS)/1000)
		pre := rest - prefill
		switch {
		case b.queueAll:
			t.ms[cQueue] = pre
		case b.slotWait != nil:
			// The task's own wait for a slot; what else preceded its prompt's processing
			// (the engine finishing the step it was in, the HTTP handler) stays unsplit,
			// or is outside the engine when its slots never all filled.
			t.ms[cQueue] = math.Min(pre, b.slotWait[r])
			if b.idle {
				t.ms[cOutside] = pre - t.ms[cQueue]
			} else {
				t.ms[cTTFTRest] = pre - t.ms[cQueue]
			}
		case b.haveQueue:
			t.ms[cQueue] = math.Min(pre, b.queueMs)
			if b.idle {
				// By elimination: the engine says how long it queued and had free slots;
				// the rest of the wait was spent before it saw the request.
				t.ms[cOutside] = pre - t.ms[cQueue]
			} else {
				t.ms[cTTFTRest] = pre - t.ms[cQueue]
			}
		default:
			t.ms[cTTFTRest] = pre
		}
	case b.haveEngineTTFT:
		t.ms[cOutside] = math.Min(rest, b.outsideMs)
		e := rest - t.ms[cOutside]
		if b.havePrefill && b.meanUncached > 0 {
			prefill = math.Min(e, b.prefillMean*uncached(r)/b.meanUncached)
		} else if b.havePrefill {
			prefill = math.Min(e, b.prefillMean)
		}
		switch {
		case b.havePrefill && b.frontendMs > 0:
			// The engine's TTFT less its core's queue and prefill was spent in its API
			// server (a run-level mean, as the queue's own variation stays the queue's).
			t.ms[cFrontend] = math.Min(e-prefill, b.frontendMs)
			t.ms[cQueue] = e - prefill - t.ms[cFrontend]
		case b.havePrefill:
			// vLLM: engine TTFT = queue + prefill, so what the engine held the task
			// before its prefill is its queue.
			t.ms[cQueue] = e - prefill
		case b.haveQueue:
			t.ms[cQueue] = math.Min(e, b.queueMs)
			t.ms[cTTFTRest] = e - t.ms[cQueue]
		default:
			t.ms[cTTFTRest] = e
		}
	case b.queueAll:
		t.ms[cQueue] = rest
	case b.slotWait != nil:
		t.ms[cQueue] = math.Min(rest, b.slotWait[r])
		t.ms[cTTFTRest] = rest - t.ms[cQueue]
	case b.haveQueue:
		t.ms[cQueue] = math.Min(rest, b.queueMs)
		t.ms[cTTFTRest] = rest - t.ms[cQueue]
	default:
		t.ms[cTTFTRest] = rest
	}
	if prefill > 0 {
		fl := prefill
		if b.floors {
			fl = math.Min(prefill, b.sys.prefill(uncached(r)))
			t.ms[cPrefillOver] = prefill - fl
		}
		t.ms[cPrefillFloor] = fl
		if !b.floors {
			// Without floors prefill is one component, charged to no layer.
			t.ms[cPrefillOver], t.ms[cPrefillFloor] = fl, 0
		}
	} else if b.floors && t.ms[cTTFTRest] > 0 {
		// The prefill's floor is part of any unsplit time to the first token.
		fl := math.Min(t.ms[cTTFTRest], b.sys.prefill(uncached(r)))
		t.ms[cPrefillFloor] = fl
		t.ms[cTTFTRest] -= fl
	}

	// Decode: steady steps at the task's median gap, and stalls beyond it.
	if !r.FirstTokenAt.IsZero() && r.LastTokenAt.After(r.FirstTokenAt) {
		t.decode = figure.Ms(r.LastTokenAt.Sub(r.FirstTokenAt))
	}
	stalls := math.Min(t.stallMs, t.decode)
	steady := math.Min(t.decode-stalls, t.steadyMs)
	t.ms[cStalls] = math.Max(0, stalls)
	t.ms[cDecodeRest] = math.Max(0, t.decode-steady-t.ms[cStalls])
	over := steady
	if b.floors {
		fl := math.Min(steady, b.stepFloor*t.tokens)
		t.ms[cDecodeFloor] = fl
		over = steady - fl
	}
	if b.commFrac > 0 {
		c := math.Min(over, steady*b.commFrac)
		t.ms[cComm] = c
		over -= c
	}
	if b.specCost {
		t.ms[cSpec] = over
		over = 0
	}
	t.ms[cDecodeOver] = over
	if b.loadWait != nil && t.ms[cQueue] > 0 && b.layers[cQueue] != evidence.LayerMemory {
		c := math.Min(t.ms[cQueue], b.loadWait[r])
		t.ms[cQueueCap] = c
		t.ms[cQueue] -= c
	}
	// What the slots hold must add up to the measured times.
	sumTTFT := 0.0
	for i := cLateness; i <= cTTFTRest; i++ {
		sumTTFT += t.ms[i]
	}
	t.ms[cTTFTRest] += t.ttft - sumTTFT
	return t, true
}

// taskExcess is one task's excess over its type's bounds, in ms, per dimension.
type taskExcess struct {
	ttft, itl, e2e float64
	// itlSteady is the part of the ITL excess from steps slower than the bound (not stalls).
	itlSteady float64
	why       []string
}

// excessOf finds a task's excess over its own type's objectives: the per-request ones it
// exceeded (and was rejected for), and the percentile ones the run missed, for the tasks
// beyond them. Each metric's tightest such limit sets the excess.
func excessOf(t *taskTime, o *Options, missed objectiveSet) taskExcess {
	var x taskExcess
	r := t.r
	var ttftB, e2eB, itlB, tpotB float64
	median := false
	lower := func(b *float64, lim float64) bool {
		if *b == 0 || lim < *b {
			*b = lim
			return true
		}
		return false
	}
	e2e := t.ttft + t.decode
	for _, ob := range o.forTask(r.Task) {
		if !missed[ob] && !ob.Exceeded(r) {
			continue
		}
		lim := ob.LimitMs()
		switch ob.Metric {
		case contract.MetricTTFT:
			if t.ttft > lim {
				lower(&ttftB, lim)
			}
		case contract.MetricE2E:
			if e2e > lim {
				lower(&e2eB, lim)
			}
		case contract.MetricITL:
			if lower(&itlB, lim) {
				// A missed median is the typical step's: only steps count, not stalls.
				median = ob.Quantile == 0.5
			}
		case contract.MetricTPOT:
			lower(&tpotB, lim)
		}
	}
	if e2eB > 0 {
		x.e2e = e2e - e2eB
		x.why = append(x.why, "e2e")
	}
	if ttftB > 0 {
		x.ttft = t.ttft - ttftB
		x.why = append(x.why, "ttft")
	}
	if itlB > 0 {
		e, steady := 0.0, 0.0
		for i, g := range t.gaps {
			if g > itlB {
				k := float64(t.gapN[i])
				e += k * (g - itlB)
				steady += k * math.Max(0, math.Min(g, t.steadyGap[i])-itlB)
			}
		}
		if median {
			e = steady
		}
		if e > 0 {
			x.itl, x.itlSteady = e, steady
		}
	}
	if tpotB > 0 && t.tokens > 0 {
		// TPOT is the task's mean time per token after the first: what its decode took beyond
		// the limit for each token, the steady steps' share first, the stalls the rest.
		e := t.decode - tpotB*t.tokens
		steady := math.Max(0, math.Min(e, t.steadyMs-tpotB*t.tokens))
		if e > x.itl {
			x.itl, x.itlSteady = e, steady
		}
	}
	if x.itl > 0 {
		x.why = append(x.why, "itl")
	}
	return x
}

// ttftParts and steadyParts are the components above the floors, per part.
var (
	ttftParts   = []int{cLateness, cClientQueue, cRetries, cOutside, cFrontend, cQueueCap, cQueue, cPrefillOver, cDelivery, cTTFTRest}
	steadyParts = []int{cDecodeOver, cComm, cSpec}
)

// split attributes an excess e of the time made of floors and others (their sum is the
// measured time, the bound that time less e): to the floors when they alone exceed the
// bound, else to the components above the floors in proportion to their time.
func split(ms *[nComponents]float64, e float64, floors, others []int, add func(int, float64)) {
	if e <= 0 {
		return
	}
	f, o := 0.0, 0.0
	for _, i := range floors {
		f += ms[i]
	}
	for _, i := range others {
		o += math.Max(0, ms[i])
	}
	bound := f + o - e
	if f >= bound && f > 0 {
		// The floor alone is over the bound: removing every other component's time would
		// still miss it, so the whole excess is the hardware's (the other components stay
		// visible in the budget itself).
		for _, i := range floors {
			add(i, e*ms[i]/f)
		}
		return
	}
	if o <= 0 {
		return
	}
	for _, i := range others {
		add(i, e*math.Max(0, ms[i])/o)
	}
}

// excessShares attributes one task's excess to its components.
func (b *budgetCtx) excessShares(t *taskTime, x taskExcess, add func(slot int, ms float64)) {
	split(&t.ms, x.ttft, []int{cPrefillFloor}, ttftParts, add)
	if x.itl > 0 {
		// Stall excess goes to the stalls; the steady part to the steps, floor first.
		if st := x.itl - x.itlSteady; st > 0 {
			add(cStalls, st)
		}
		split(&t.ms, x.itlSteady, []int{cDecodeFloor}, steadyParts, add)
	}
	if x.e2e > 0 && x.ttft <= 0 && x.itl <= 0 {
		all := append(append(append([]int{}, ttftParts...), steadyParts...), cStalls, cDecodeRest)
		split(&t.ms, x.e2e, []int{cPrefillFloor, cDecodeFloor}, all, add)
	}
}

// acc gathers one task type's budgets: sums over its completed warm tasks (over the calls
// of its multi-step tasks: perCall).
type acc struct {
	n, over  int
	sum      [nComponents]float64
	ttft, dc float64
	tok      float64
	ttftFl   float64
	decFl    float64
	perCall  bool
}

// addTask sums one task's (or one call's) budget.
func (a *acc) addTask(b *budgetCtx, r *record.Record, t *taskTime) {
	a.n++
	for j := range t.ms {
		a.sum[j] += t.ms[j]
	}
	a.ttft += t.ttft
	a.dc += t.decode
	a.tok += t.tokens
	if b.floors {
		a.ttftFl += b.sys.prefill(uncached(r))
		a.decFl += b.stepFloor * t.tokens
	}
}

// eachTask hands one task's budget to EachTaskBudget.
func (o *Options) eachTask(r *record.Record, t *taskTime) {
	if o.EachTaskBudget == nil {
		return
	}
	s := TaskSplit{Rec: r, TTFTMs: t.ttft, DecodeMs: t.decode, Components: map[string]float64{},
		PrefillMs: t.ms[cPrefillFloor] + t.ms[cPrefillOver], QueueMs: t.ms[cQueueCap] + t.ms[cQueue], OutsideMs: t.ms[cOutside], SlotWaitMs: t.slotWait}
	for i, m := range t.ms {
		switch {
		case i <= cTTFTRest:
			s.TTFTPartsMs += m
		case i <= cDecodeRest:
			s.DecodePartsMs += m
		}
		if m != 0 {
			s.Components[compDefs[i].name] += m
		}
	}
	o.EachTaskBudget(s)
}
