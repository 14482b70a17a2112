package diagnose

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Rules for multi-step tasks (conversations, tool loops, retrieval then generation), from
// the client's per-call records (stats/steps.go) and, where the engine exposes it, its
// prefix-cache hit rate. A later call of a task sends everything before it again; what it
// costs depends on whether the server kept it.
//
// Thresholds, each by what the quantity means:
const (
	// reprefillShareMin: at least half of the context later calls carried over was computed
	// again: the server lost more of each conversation between its turns than it kept.
	reprefillShareMin = 0.5
	// cacheKeptMax: the engine's prefix-cache hit rate is under half of the cacheable share
	// (the hit rate it would have had by keeping every conversation between its turns): it
	// evicted most of what later calls sent again.
	cacheKeptMax = 0.5
	// laterTTFTRatioMin: later calls wait 1.5× as long for their first token (from send) as
	// first calls. With its history cached a later call prefills only what was added since
	// its previous call, so it would not wait longer than a first call whose whole prompt is
	// new, unless each turn adds half again the first prompt's length.
	laterTTFTRatioMin = 1.5
	// reprefillTargetShare: what a cache that keeps conversations should leave; think time
	// and other traffic still evict some, so a fifth rather than none.
	reprefillTargetShare = 0.2
	// stepWaitShareMin: half of a task's own time (the user's think time left out) passes
	// between its calls outside the server (tools, the client's agent loop): however fast
	// the server became, the task would keep at least that half.
	stepWaitShareMin = 0.5
)

func ruleReprefill(v *view, o *Options) *hit {
	h := &hit{}
	var causes []meas
	if m := v.judge(evidence.SigStepsReprefillShare, ">=", reprefillShareMin); m.present {
		h.items = append(h.items, m)
		if m.holds {
			causes = append(causes, m)
		}
	}
	hitRate, okH := v.val(evidence.SigPrefixHitRate)
	cacheable, okC := v.val(evidence.SigStepsCacheableShare)
	kept := math.NaN()
	if okH && okC && cacheable > 0 {
		kept = hitRate / cacheable
		m := derivedItem("engine_vs_client.prefix_cache_kept_share", kept, "<=", cacheKeptMax, "ratio", "engine /metrics ÷ client",
			evidence.StageServingCache, evidence.SigPrefixHitRate, evidence.SigStepsCacheableShare)
		h.items = append(h.items, m)
		if m.holds {
			causes = append(causes, m)
		}
	}
	if len(causes) == 0 {
		return nil // no sign the carried context was lost (or nothing says either way)
	}
	// The symptom: later calls wait longer than first ones, or miss the TTFT bound.
	ratio := v.judge(evidence.SigStepsLaterTTFTRatio, ">=", laterTTFTRatioMin)
	var over meas
	if b, ok := o.bound(evidence.SigTTFTP99); ok {
		over = v.judge(evidence.SigStepsLaterTTFTP99, ">", b)
	}
	if !(ratio.present && ratio.holds) && !(over.present && over.holds) {
		return nil // the lost context costs nothing this contract notices
	}
	for _, m := range []meas{ratio, over} {
		if m.present && m.holds {
			h.items = append(h.items, m)
		} else if m.present {
			h.items = append(h.items, asContext(m))
		}
	}
	if pr := v.judge(evidence.SigPreemptionRate, "<=", preemptRateMin); pr.present {
		h.items = append(h.items, asContext(pr)) // the running sequences fit: not thrashing
	}
	k := profileOf(v.engine)
	lost := ""
	switch {
	case !math.IsNaN(kept):
		lost = fmt.Sprintf("the engine's prefix-cache hit rate is %.0f%% where keeping each conversation would give %.0f%%", hitRate*100, cacheable*100)
	default:
		lost = fmt.Sprintf("%.0f%% of the context later calls carried over was computed again", causes[0].item.Value*100)
	}
	h.symptom = fmt.Sprintf("later turns of multi-step tasks re-prefill their history: %s", lost)
	if ratio.present {
		if f, ok := v.val(evidence.SigStepsFirstTTFTP50); ok {
			h.symptom += fmt.Sprintf("; their TTFT p50 is %.1f× the first turn's (%.0f vs %.0f ms from send)", ratio.item.Value, ratio.item.Value*f, f)
		}
	}
	h.hypothesis = "The prefix cache is too small for the conversations in flight: between two turns of one conversation (think time, tool latency) other traffic evicts its blocks, so every later turn prefills the whole grown context again, and its first token waits for that prefill (and the extra prefill load delays everyone else's)."
	if k.SlotCache {
		h.hypothesis += " " + k.Title + " keeps one prompt per slot: a conversation finds its history only if no other task took its slot meanwhile."
	}
	h.confidence = confOneSource + confPerSource*float64(len(causes)-1)
	if ratio.present && ratio.holds && over.present && over.holds {
		h.confidence += confCorroboration
	}
	if !v.stages[evidence.StageServingCache] {
		h.missing = append(h.missing, missMetrics)
	}
	h.cond = "the prefix cache is too small for the conversations in flight"
	ch := change(v.engine, evidence.ActMoreKV)
	exp := []evidence.Expectation{}
	if okC && okH {
		exp = append(exp, v.expect(evidence.SigPrefixHitRate, ">=", math.Round((1-reprefillTargetShare)*cacheable*100)/100, false))
	}
	if v.has(evidence.SigStepsReprefillShare) {
		exp = append(exp, v.expect(evidence.SigStepsReprefillShare, "<=", reprefillTargetShare, false))
	}
	exp = append(exp, v.expect(evidence.SigStepsLaterTTFTP99, "<=", predictClearFall, true))
	note := "Fewer conversations in flight, or routing each conversation's turns to the replica holding its history, moves the same counters."
	if k.SlotCache {
		note = fmt.Sprintf("On %s, more slots (%s) keep more conversations between their turns.", k.Title, k.Knobs.Seqs)
	}
	h.predicted = &evidence.Predicted{Change: ch, Expect: exp, Note: note}
	h.nextProbe = fmt.Sprintf("Rerun with half the conversations in flight, or with the think time halved: the re-prefilled share should fall and later turns' TTFT with it; watch %s per turn (requests.jsonl has a record per call: its prompt, the tokens it carried over and, where the server says, how many were cached).", k.Knobs.KV)
	h.impact = impactSpec{dims: []string{dimTTFT, dimE2E}, match: laterTTFTRejected,
		matchWhat: "multi-step tasks with a later call over its TTFT bound"}
	h.strength = clamp01(causes[0].item.Value)
	if causes[0].item.Op == "<=" {
		h.strength = clamp01(1 - causes[0].item.Value)
	}
	return h
}

// laterTTFTRejected reports a task rejected because a call after its first missed its TTFT
// bound ("slo ttft max 2s (step 3)").
func laterTTFTRejected(r *record.Record) bool {
	if !rejected(r) || !r.MultiStep() {
		return false
	}
	for _, why := range r.Reasons {
		if !strings.Contains(why, "slo ttft") {
			continue
		}
		if i := strings.LastIndex(why, "(step "); i >= 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(why[i+len("(step "):], ")"))
			if err == nil && n >= 2 {
				return true
			}
		}
	}
	return false
}

func ruleStepWaits(v *view, o *Options) *hit {
	ws := v.judge(evidence.SigStepsWaitShare, ">=", stepWaitShareMin)
	if !ws.present || !ws.holds {
		return nil
	}
	// No missed objective on the whole task: how long it waits is the workload's own shape.
	e2e, ok := v.missedIn(dimE2E)
	if !ok {
		return nil
	}
	b := e2e.item.Threshold
	share := ws.item.Value
	h := &hit{
		symptom: fmt.Sprintf("multi-step tasks spend %.0f%% of their own time between calls, outside the server (think time aside; %s), and miss their e2e objective (%s %.0f ms over %.0f ms)",
			share*100, v.sig[evidence.SigStepsWaitShare].Note, e2e.item.Signal, e2e.item.Value, b),
		hypothesis: "What a task waits for between its calls (tool latency, the agent loop's own work, a client that sends the next call late) sets its end-to-end time: the server's part is the smaller share, so no engine change can bring the task within its bound.",
		items:      []meas{ws, e2e},
		confidence: confLikely,
		cond:       "the waits between calls set the task's time",
		nextProbe:  "Time the tools and the agent loop between calls (each call's record has its planned think and tool time and its own schedule lag): the gaps that are not planned are the client's.",
		impact: impactSpec{dims: []string{dimE2E}, match: func(r *record.Record) bool {
			return rejected(r) && r.MultiStep() && rejectDims(r)[dimE2E]
		}, matchWhat: "multi-step tasks over their e2e bound"},
		strength: clamp01((share - stepWaitShareMin) / (1 - stepWaitShareMin)),
	}
	// Halving the waits takes the share from s to (s/2)/(1 − s/2): a relative fall of
	// 1 − 1/(2 − s); 0.8 of it leaves room for noise.
	fall := 0.8 * (1 - 1/(2-share))
	h.predicted = &evidence.Predicted{
		Change: evidence.Change{Action: evidence.ActShorterStepWaits,
			Knob: "halving what tasks wait for between calls (faster tools, independent tool calls run concurrently, no pause in the agent loop)"},
		Expect: []evidence.Expectation{
			v.expect(evidence.SigStepsWaitShare, "<=", -math.Round(fall*100)/100, true),
			v.expect(evidence.SigStepsLaterTTFTP50, "within", unchangedWithin, true),
		},
		Note: "Engine changes (more sequences, a faster GPU) move the e2e p99 by at most the server's share.",
	}
	if lag := v.judge(evidence.SigStepsLagP99, ">", scheduleLagMaxMs); lag.present && lag.holds {
		h.items = append(h.items, lag)
		h.confNote = fmt.Sprintf("pel itself sent later calls up to %.0f ms late (p99): part of the wait is the load generator's, not the application's", lag.item.Value)
		h.confidence -= confCompetingCause
	}
	return h
}
