package diagnose

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pel-ladder/pel/evidence"
)

// kvFullQueue: requests wait while the KV block pool is full, and the engine does not
// preempt. A paged-attention engine admits a waiting request only when the pool can give
// it the blocks its prompt needs (vLLM V1: Scheduler.schedule stops taking waiting requests
// when KVCacheManager.allocate_slots returns None; SGLang keeps requests queued while its
// token pool is short), so a queue that stands while usage stays near full waits for
// blocks, not for the scheduler's sequence cap: the memory layer, even with no preemption
// at all. When sequences are short next to the block size, most of each block is empty:
// the pool fills with few tokens.
//
// kvBusyRatio: the usage gauge is sampled between steps, and the blocks a finished sequence
// frees read as free until the next step admits a waiting request into them: a pool that
// gates admission peaks full (kvFullRatio) and, sampled, reads four fifths full or more on
// average; a pool whose mean sits lower had room most of the time.
const kvBusyRatio = 0.8

func ruleKVFullQueue(v *view, o *Options) *hit {
	peak := v.judge(evidence.SigKVUsageMax, ">=", kvFullRatio)
	kv := v.judge(evidence.SigKVUsageMean, ">=", kvBusyRatio)
	w := v.judge(evidence.SigWaitingMean, ">=", waitingMin)
	if !peak.present || !peak.holds || !kv.present || !kv.holds || !w.present || !w.holds {
		return nil
	}
	// The sequence cap, where the engine reports it: a queue behind a cap that every
	// running slot reached is the scheduler's, however full the pool.
	cap, err := strconv.Atoi(v.config[evidence.ConfigMaxNumSeqs])
	capKnown := err == nil && cap > 0
	rm := v.judge(evidence.SigRunningMax, "<", float64(cap))
	if capKnown && rm.present && !rm.holds {
		return nil
	}
	if pr := v.judge(evidence.SigPreemptionRate, ">", preemptRateMin); pr.present && pr.holds {
		return nil // the cache thrashes: the kv-thrash rule's
	}
	k := profileOf(v.engine)
	h := &hit{
		symptom:    fmt.Sprintf("requests wait (mean %.1f waiting) while the KV block pool runs full (peak %.0f%%, mean %.0f%%), with no preemption: admission waits for blocks", w.item.Value, peak.item.Value*100, kv.item.Value*100),
		hypothesis: "The engine admits a waiting request only when the block pool can hold its prompt; with the pool full, the queue drains as fast as running sequences free their blocks, whatever the limit on concurrent sequences.",
		items:      []meas{peak, kv, w},
		confidence: confSupported,
		nextProbe:  fmt.Sprintf("Watch %s against %s over the run: the queue should stand exactly while usage is near 100%%.", k.Knobs.KV, k.Knobs.Queue),
		impact: impactSpec{dims: []string{dimTTFT, dimE2E, dimTimeout}, when: []seriesCond{
			{evidence.SigKVUsageMean, ">=", kvRoomRatio}, {evidence.SigWaitingMean, ">=", waitingMin}}},
		strength: clamp01((kv.item.Value - kvRoomRatio) / (1 - kvRoomRatio)),
	}
	if pr := v.judge(evidence.SigPreemptionRate, "<=", preemptRateMin); pr.present {
		h.items = append(h.items, asContext(pr))
	}
	// The sequence cap did not bind: fewer sequences ran than the engine allows.
	if capKnown && rm.present && rm.holds {
		h.items = append(h.items, asContext(rm))
		h.confidence = confCorroborated
	}
	note := ""
	// Block granularity: a sequence of c tokens holds ⌈c/b⌉ blocks of b tokens.
	if bs, err := strconv.Atoi(v.config[evidence.ConfigBlockSize]); err == nil && bs > 0 && v.context > 0 {
		held := math.Ceil(v.context/float64(bs)) * float64(bs)
		waste := 1 - v.context/held
		h.items = append(h.items, asContext(derivedItem("engine.kv_block_waste", waste, ">=", 0.5, "ratio", "engine configuration × client records",
			evidence.StageServingCache, evidence.SigKVUsageMean)))
		if waste >= 0.5 {
			h.symptom += fmt.Sprintf("; a sequence of %.0f tokens holds %.0f slots in blocks of %d: %.0f%% of the pool is empty slots", v.context, held, bs, waste*100)
			note = fmt.Sprintf(" Blocks of %d tokens hold sequences of about %.0f: a smaller block size fits %.1f× the sequences in the same memory.", bs, v.context, held/math.Max(v.context, 1))
		}
	}
	h.cond = "the block pool gates admission"
	h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActMoreKV), Expect: []evidence.Expectation{
		v.expect(evidence.SigWaitingMean, "<=", predictHalve, true),
		v.expect(evidence.SigTTFTP99, "<=", predictClearFall, true),
	}, Note: "Raising the limit on concurrent sequences instead changes nothing: the pool, not the limit, is full." + note}
	if !v.stages[evidence.StageServingCache] {
		h.missing = append(h.missing, missMetrics)
	}
	return h
}
