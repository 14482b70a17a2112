package diagnose

import (
	"fmt"
	"math"
	"regexp"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/stats"
)

// quotedTask is the task type stats.HOL names first in the ratio's note.
var quotedTask = regexp.MustCompile(`^"([^"]+)"`)

func ruleKVThrash(v *view, o *Options) *hit {
	kv := v.judge(evidence.SigKVUsageMax, ">=", kvFullRatio)
	pr := v.judge(evidence.SigPreemptionRate, ">", preemptRateMin)
	if !kv.present || !pr.present || !kv.holds || !pr.holds {
		return nil // no engine metrics, or the cache had room: nothing to say here
	}
	h := &hit{
		symptom:    fmt.Sprintf("KV cache full (peak usage %.0f%%) with %.2f preemptions/s", kv.item.Value*100, pr.item.Value),
		hypothesis: "Running sequences outgrow the KV-cache blocks; the scheduler preempts and recomputes them, so the same prompts are prefilled again and waiting requests queue behind the churn.",
		items:      []meas{kv, pr},
		confidence: confDirect,
		nextProbe:  fmt.Sprintf("Step max concurrent sequences down (%s) while watching %s; check the prefix-cache hit rate trend for eviction.", profileOf(v.engine).Knobs.Seqs, profileOf(v.engine).Knobs.KV),
		impact: impactSpec{dims: []string{dimTTFT, dimITL, dimTPOT, dimE2E}, when: []seriesCond{
			{evidence.SigKVUsageMax, ">=", kvFullRatio}, {evidence.SigPreemptionRate, ">", 0}}},
		strength: clamp01(pr.item.Value / (10 * preemptRateMin)),
	}
	if w := v.judge(evidence.SigWaitingMean, ">=", waitingMin); w.present {
		h.items = append(h.items, asContext(w))
	}
	cap := "a lower cap"
	if run, ok := v.val(evidence.SigRunningMean); ok {
		if mean, ok2 := v.val(evidence.SigKVUsageMean); ok2 && mean > 0 {
			cap = fmt.Sprintf("about %d", int(math.Max(1, math.Floor(run*kvTargetRatio/mean))))
		}
	}
	// More cache memory removes the recompute without moving the wait elsewhere; a cap on
	// concurrent sequences also stops the preemptions, but under a load that keeps more
	// tasks in flight than the cap it moves their wait into the admission queue.
	h.cond = "KV capacity is the limit"
	h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActMoreKV), Expect: []evidence.Expectation{
		v.expect(evidence.SigPreemptionRate, "<=", preemptRateMin, false),
		v.expect(evidence.SigTTFTP99, "<=", predictClearFall, true),
	}, Note: fmt.Sprintf("Capping concurrent sequences (%s) at %s instead (peak KV usage near %.0f%%) also stops the preemptions, but moves the wait into the admission queue when more tasks are in flight than the cap.", profileOf(v.engine).Knobs.Seqs, cap, kvTargetRatio*100)}
	return h
}

func rulePrefillHOL(v *view, o *Options) *hit {
	hol := v.judge(evidence.SigHOLTTFTRatio, ">=", holRatioMin)
	if !hol.present || !hol.holds {
		return nil
	}
	h := &hit{
		symptom:    fmt.Sprintf("short prompts wait %.1f× longer for their first token while a long prompt is in flight", hol.item.Value),
		hypothesis: "Long prompts are prefilled in one piece, and every request admitted behind them (and every running decode) waits for that prefill step: head-of-line blocking in the scheduler.",
		items:      []meas{hol},
		confidence: confLikely,
		// Capping each long prompt's share of a step lets the short ones in at once: the
		// head-of-line ratio and the short prompts' tail fall. The long prompts pay: their
		// own TTFT rises and steps carrying prefill chunks are longer, so ITL rises a little.
		cond: "prefill blocks the line",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActChunkPrefill), Expect: []evidence.Expectation{
			v.expect(evidence.SigHOLTTFTRatio, "<=", predictHalve, true),
		}, Note: "The long prompts' own TTFT rises, and ITL a little, since steps now carry prefill chunks."},
		nextProbe: fmt.Sprintf("Compare %s and %s for short prompts with and without a long prompt in flight; a trace of one long-prompt step shows the prefill kernels filling it.", profileOf(v.engine).Knobs.Queue, profileOf(v.engine).Knobs.Prefill),
		impact:    impactSpec{dims: []string{dimTTFT, dimE2E, dimITL}, hol: true},
		strength:  clamp01((hol.item.Value - holRatioMin) / (4 * holRatioMin)),
	}
	chunkedPrefillAdvice(v, h)
	// The decode side sees the same stall: long prefill steps push ITL p99 far past p50.
	if p99, ok := v.val(evidence.SigITLP99); ok {
		if p50, ok2 := v.val(evidence.SigITLP50); ok2 && p50 > 0 {
			m := derivedItem("client.itl_p99_over_p50", p99/p50, ">=", itlStallRatio, "ratio", "client", evidence.StageRequestTrace, evidence.SigITLP99, evidence.SigITLP50)
			h.items = append(h.items, m)
			if m.holds {
				h.confidence += confCorroboration
			}
		}
	}
	// The server's prefill times show the engine was seen; they corroborate, they are not
	// the symptom (context, so a late load generator still discounts the client ratio).
	// The short prompts' own tail is what the fix buys: scoped to their task type (named
	// in the ratio's note by stats.HOL).
	if m := quotedTask.FindStringSubmatch(v.sig[evidence.SigHOLTTFTRatio].Note); m != nil {
		e := v.expect(evidence.SigTTFTP99, "<=", predictTaskTailFall, true)
		e.Task = m[1]
		h.predicted.Expect = append(h.predicted.Expect, e)
	}
	if q := v.judge(evidence.SigServerPrefillP99, ">", 0); q.present {
		h.items = append(h.items, asContext(q))
		h.confidence += confCorroboration
	}
	// The blocking is inside the engine or it is not this rule's: the engine's TTFT tail
	// must hold most of the client's.
	srv, ok := v.val(evidence.SigServerTTFTP99)
	cli, ok2 := v.val(evidence.SigTTFTP99)
	switch {
	case ok && ok2 && cli > 0:
		share := derivedItem("engine_share.ttft_p99", srv/cli, ">=", holEngineShareMin, "ratio", "engine /metrics ÷ client",
			evidence.StageServingCache, evidence.SigServerTTFTP99, evidence.SigTTFTP99)
		if !share.holds {
			return nil // the wait is outside the engine: the client or the path to it
		}
		h.items = append(h.items, share)
	default:
		h.confidence = confEven
		h.missing = append(h.missing, missMetrics)
		h.confNote = "the engine's TTFT not seen: the client alone cannot tell a wait inside the engine from one in the client or the path to it"
	}
	return h
}

func ruleSchedulerBound(v *view, o *Options) *hit {
	wait := v.judge(evidence.SigWaitingMean, ">=", waitingMin)
	scal := v.judge(evidence.SigBandScaling, "<", bandScalingMax)
	queued := (wait.present && wait.holds) || (scal.present && scal.holds)
	if !queued {
		return nil
	}
	// A full cache also queues requests (the memory rule speaks to that); the host loop is
	// then still reported when the device is seen idle between steps, a second fault the
	// cache cannot explain.
	kv := v.judge(evidence.SigKVUsageMax, "<", kvRoomRatio)
	pr := v.judge(evidence.SigPreemptionRate, "<=", preemptRateMin)
	cacheFull := (kv.present && !kv.holds) || (pr.present && !pr.holds)
	h := &hit{impact: impactSpec{dims: []string{dimTTFT, dimE2E, dimITL, dimTPOT}}}
	if wait.present && wait.holds {
		// Tasks suffer while requests queue; without a queue the whole window is affected.
		h.impact.when = []seriesCond{{evidence.SigWaitingMean, ">=", waitingMin}}
	}
	for _, m := range []meas{wait, scal} {
		if m.present && m.holds {
			h.items = append(h.items, m)
		}
	}
	if kv.present {
		h.items = append(h.items, asContext(kv))
	}
	// The deciding dimension: is the device idle between steps while work waits?
	util := v.judge(evidence.SigGPUUtil, "<", gapUtilMax)
	idle := v.judge(evidence.SigTraceIdlePct, ">=", traceIdleMin)
	host := v.judge(evidence.SigTraceHostWaitShare, ">=", hostWaitMin)
	traceGap := idle.present && idle.holds && (!host.present || host.holds)
	dcgmGap := util.present && util.holds
	if traceGap {
		h.items = append(h.items, idle)
		if host.present {
			h.items = append(h.items, host)
		}
	}
	if dcgmGap {
		h.items = append(h.items, util)
	}
	gapSeen := traceGap || dcgmGap
	if !gapSeen && (util.present || idle.present) {
		return nil // the device was not idle between steps: not the host loop
	}
	if cacheFull && !gapSeen {
		return nil // the cache gated admission: the memory rule speaks to it
	}
	label := "requests queued"
	switch {
	case wait.present && wait.holds:
		label = fmt.Sprintf("%.1f requests waiting on average", wait.item.Value)
	case scal.present && scal.holds:
		label = fmt.Sprintf("goodput rising only %.0f%% as fast as concurrency", scal.item.Value*100)
	}
	if gapSeen {
		h.symptom = fmt.Sprintf("throughput stops scaling (%s) while the GPU sits idle between steps", label)
		h.hypothesis = "The engine's scheduling loop (host CPU, interpreter) runs serially with the GPU: each step waits for the host to build the next batch, so adding requests adds queue, not throughput."
		h.confidence = confCorroborated
		if !kv.present {
			h.confidence = confOneSource
			h.missing = append(h.missing, missMetrics)
		}
		h.strength = 0.6
		if cacheFull {
			h.confidence -= confPartlyElsewhere
			h.confNote = joinNote(h.confNote, "the KV cache is also full: it explains part of the queue; the idle device between steps is this finding's own evidence")
		}
	} else {
		h.symptom = fmt.Sprintf("throughput stops scaling (%s) and the KV cache has room", label)
		h.hypothesis = "Admission is limited by how fast the engine completes steps; without device counters this cannot tell a host-bound scheduling loop from a device that is out of compute or bandwidth."
		h.confidence = confWeak
		h.confNote = "no device-side evidence (DCGM or trace) to see idle gaps between steps"
		h.missing = append(h.missing, missDCGM, missTrace)
		h.strength = 0.2
	}
	// Overlapping the host loop with the GPU step removes the idle time between steps that
	// the loop causes: the device-side idle share is what must fall (by at least half), not
	// a latency quantile, which also moves with the load's shape.
	h.cond = "the host loop is the limit"
	h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActAsyncScheduling),
		Note: "Queues and TTFT fall with it at the same load; adding GPU capacity alone leaves goodput flat."}
	if util.present {
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigGPUUtil, ">=", 1-(1-util.item.Value)/2, false))
	}
	if idle.present {
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigTraceIdlePct, "<=", predictHalve, true))
	}
	if len(h.predicted.Expect) == 0 {
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigTTFTP99, "<=", predictClearFall, true))
	}
	h.nextProbe = "Profile the engine process (py-spy or a trace with CPU events) under this load: time per scheduler step vs GPU step time; check the engine's tokens per step against its token budget."
	return h
}

func ruleLaunchBound(v *view, o *Options) *hit {
	util := v.judge(evidence.SigGPUUtil, ">=", launchUtilMin)
	dram := v.judge(evidence.SigDRAMActive, "<", dramLowMax)
	short := v.judge(evidence.SigTraceShortKernelShare, ">=", shortKernelMin)
	graph := v.judge(evidence.SigTraceGraphLaunchShare, "<", graphShareMax)
	var share meas
	if sm, ok := v.val(evidence.SigSMActive); ok && util.present && util.item.Value > 0 {
		share = derivedItem("gpu.sm_active_share_of_util", sm/util.item.Value, "<", launchSMShareMax, "ratio", "dcgm",
			evidence.StageGPUExecution, evidence.SigSMActive, evidence.SigGPUUtil)
	}
	dcgmHolds := util.present && util.holds && share.present && share.holds && (!dram.present || dram.holds)
	traceHolds := short.present && short.holds && (!graph.present || graph.holds)
	if !dcgmHolds && !traceHolds {
		return nil
	}
	if dram.present && !dram.holds {
		return nil // DRAM near its ceiling: the bandwidth rule speaks to it
	}
	h := &hit{
		hypothesis: "Decode steps are made of many tiny kernels launched one by one (graph capture off or fallen back), so launch overhead and gaps between kernels, not math or bandwidth, set the step time.",
		cond:       "launch overhead is the limit",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActCUDAGraphs), Expect: []evidence.Expectation{
			v.expect(evidence.SigITLP50, "<=", predictStepFall, true),
		}, Note: "SM active rises by at least half with it, and DRAM active too, at the same batch size."},
		nextProbe: "Take a profiler trace of a few decode steps (torch.profiler or nsys): count kernels per step, their median duration, and cudaGraphLaunch vs cudaLaunchKernel calls.",
		impact:    impactSpec{dims: []string{dimITL, dimTPOT, dimE2E, dimTTFT}},
		strength:  0.7,
	}
	switch {
	case dcgmHolds && traceHolds:
		h.confidence = confDirect
	case dcgmHolds:
		h.confidence = confOneSource
		h.missing = append(h.missing, missTrace)
		h.confNote = "device counters only; kernel sizes not seen"
	default:
		h.confidence = confLikely
		if !util.present {
			h.missing = append(h.missing, missDCGM)
			h.confNote = "trace only; device-wide SM/DRAM activity not seen"
		}
	}
	if dcgmHolds {
		sm, _ := v.val(evidence.SigSMActive)
		h.items = append(h.items, share, v.judge(evidence.SigSMActive, "<", launchSMShareMax*util.item.Value), util)
		if dram.present {
			h.items = append(h.items, asContext(dram))
		}
		h.symptom = fmt.Sprintf("SMs active only %.0f%% of the time although a kernel was resident %.0f%% of it", sm*100, util.item.Value*100)
	}
	if short.present {
		h.items = append(h.items, short)
	}
	if graph.present {
		h.items = append(h.items, graph)
	}
	if !dcgmHolds {
		h.symptom = fmt.Sprintf("%.0f%% of kernel launches are short", short.item.Value*100)
	}
	if graph.present && graph.holds {
		h.symptom += fmt.Sprintf("; only %.0f%% of launches go through CUDA graphs", graph.item.Value*100)
	}
	return h
}

// decodeOver names the decode objective a view misses ("TPOT p95 over its limit"), or the
// per-request SLO misses that stand in for one.
func decodeOver(v *view) string {
	for _, r := range v.objectives {
		if r.Missed() && (r.Metric == "itl" || r.Metric == "tpot") {
			return r.Name + " over its limit"
		}
	}
	return "tasks over their per-request decode bounds"
}

// itlSymptom judges the user-facing decode symptom: a missed decode objective (ITL or
// TPOT, any form) when the contract states one, else the share of tasks missing a
// per-request SLO.
func itlSymptom(v *view, o *Options) (meas, bool) {
	if v.boundedIn(dimITL, dimTPOT) {
		return v.missedIn(dimITL, dimTPOT)
	}
	m := v.judge(evidence.SigSLOMissRate, ">=", sloMissMin)
	return m, m.present && m.holds
}

func ruleBandwidthBound(v *view, o *Options) *hit {
	dram := v.judge(evidence.SigDRAMActive, ">=", dramHighMin)
	tensor := v.judge(evidence.SigTensorActive, "<", tensorLowMax)
	if !dram.present || !dram.holds || (tensor.present && !tensor.holds) {
		return nil
	}
	sym, over := itlSymptom(v, o)
	if !over {
		return nil // at its bandwidth ceiling but within the contract: that is headroom, not a finding
	}
	// The device can only explain the decode time the engine itself measured: when the
	// server's ITL is within the bound, the excess lies between the engine and the client.
	if b, ok := o.bound(evidence.SigITLP99); ok {
		if srv := v.judge(evidence.SigServerITLP99, ">", b); srv.present && !srv.holds {
			return nil
		}
	}
	h := &hit{
		symptom:    fmt.Sprintf("DRAM active %.0f%% of cycles while tensor pipes idle; %s", dram.item.Value*100, decodeOver(v)),
		hypothesis: "Each decode step streams the weights and KV cache from HBM; the step time is bytes moved over bandwidth, so the math units wait for memory.",
		items:      []meas{dram},
		confidence: confCorroborated,
		cond:       "bandwidth sets the step time",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActFewerBytes), Expect: []evidence.Expectation{
			v.expect(evidence.SigITLP50, "<=", predictClearFall, true),
			v.expect(evidence.SigDRAMActive, ">=", dramHighMin, false),
		}, Note: "A larger batch instead raises tokens/s at nearly flat ITL until tensor active rises."},
		nextProbe: "Profile one decode step: achieved HBM bandwidth of the GEMV/attention kernels vs the device peak (nsys + ncu memory throughput).",
		impact:    impactSpec{dims: []string{dimITL, dimTPOT, dimE2E}, when: []seriesCond{{evidence.SigDRAMActive, ">=", dramHighMin}}},
		strength:  clamp01((dram.item.Value - dramHighMin) / (1 - dramHighMin)),
	}
	if tensor.present {
		h.items = append(h.items, tensor)
	} else {
		h.confidence = confOneSource
		h.confNote = "tensor activity not reported"
	}
	// DRAM near its ceiling is the normal state of decode; what makes it the limiter is that
	// nothing upstream inflates the bytes per token or the time between tokens. Without the
	// engine's metrics, a net-negative speculation or a buffering proxy cannot be ruled out.
	// Speculation whose cost is unmeasured may be what inflates the bytes per token.
	if v.has(evidence.SigSpecAcceptanceRate) && !v.has(evidence.SigTraceDraftPct) {
		h.confidence *= confUnseenUpstream
		h.confNote = joinNote(h.confNote, "speculative decoding is on and its draft cost is not measured: it may be what inflates the bytes per token")
		h.missing = append(h.missing, "a profiler trace (pel analyze DIR --trace FILE): the draft kernels' share of each step settles whether speculation pays")
	}
	if !v.has(evidence.SigServerITLP99) {
		h.confidence *= confUnseenUpstream
		h.confNote = joinNote(h.confNote, "server-side ITL and speculative-decoding counters not seen: an upstream cause cannot be ruled out")
		h.missing = append(h.missing, missMetrics)
	}
	h.items = append(h.items, sym)
	if !v.boundedIn(dimITL, dimTPOT) {
		h.missing = append(h.missing, missSLO)
	}
	return h
}

func ruleComm(v *view, o *Options) *hit {
	comm := v.judge(evidence.SigTraceCommPct, ">=", commPctMin)
	ov := v.judge(evidence.SigTraceCommOverlapPct, "<", overlapMax)
	cv := v.judge(evidence.SigReplicaImbalanceCV, ">=", replicaCVMin)
	commHolds := comm.present && comm.holds && (!ov.present || ov.holds)
	cvHolds := cv.present && cv.holds
	if !commHolds && !cvHolds {
		return nil
	}
	h := &hit{
		nextProbe: "Trace all ranks for a few steps (nsys with NCCL ranges): all-reduce time per step, overlap with compute, and link bandwidth achieved vs the interconnect's peak.",
		impact:    impactSpec{dims: []string{dimITL, dimTPOT, dimE2E, dimTTFT}},
	}
	if commHolds {
		h.items = append(h.items, comm)
		if ov.present {
			h.items = append(h.items, ov)
		}
		// The link the all-reduce crossed, as context (NVLink, or PCIe without it).
		for _, link := range []string{evidence.SigNVLinkBytesPS, evidence.SigPCIeBytesPS} {
			if m := v.judge(link, ">", 0); m.present && m.holds {
				h.items = append(h.items, asContext(m))
				break
			}
		}
		h.symptom = fmt.Sprintf("communication kernels take %.0f%% of GPU kernel time and are not hidden under compute", comm.item.Value)
		h.hypothesis = "Tensor-parallel all-reduces sit on the critical path of every layer: the step waits for the interconnect, so more GPUs add communication faster than they remove compute."
		// Halving TP doubles each GPU's compute per step while a ring all-reduce moves no more
		// data per GPU (2(n−1)/n of the tensor falls from 1.5 to 1 going from 4 to 2 ranks);
		// even for latency-bound collectives, whose time stays, the share s falls to
		// s/(2−s). 10% on top for the trace's own step-to-step variation.
		s := comm.item.Value / 100
		h.cond = "communication is exposed"
		h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActHalveTP), Expect: []evidence.Expectation{
			v.expect(evidence.SigTraceCommPct, "<=", math.Round(1.1*100*s/(2-s)*10)/10, false),
		}, Note: "Goodput per GPU rises with it; overlapping the all-reduce with compute instead lowers ITL p50 by about the exposed share."}
		h.confidence = confCorroborated
		h.strength = clamp01(comm.item.Value / 60)
	} else {
		h.items = append(h.items, cv)
		h.symptom = fmt.Sprintf("replicas carry uneven load (CV of running requests %.2f)", cv.item.Value)
		h.hypothesis = "The router sends work unevenly; the busiest replica sets the tail while others have room."
		h.cond = "routing is the limit"
		h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActBalanceRouting), Expect: []evidence.Expectation{
			v.expect(evidence.SigReplicaImbalanceCV, "<=", balancedCV, false),
			v.expect(evidence.SigTTFTP99, "<=", predictRoutingFall, true),
		}}
		h.confidence = confLeaning
		h.missing = append(h.missing, missCommTr)
		h.strength = clamp01(cv.item.Value)
	}
	return h
}

func ruleSpecNegative(v *view, o *Options) *hit {
	acc := v.judge(evidence.SigSpecAcceptanceRate, "<", specAcceptMax)
	ln := v.judge(evidence.SigSpecMeanAcceptLen, "<", specLenMax)
	if !acc.present || acc.item.Value <= 0 || !ln.present {
		return nil
	}
	// Net benefit. A step with k draft tokens costs r + k·c plain decode steps (r the
	// verification's own price, c one draft token's cost relative to a target step) and
	// yields L = 1 + k·α tokens (α the per-token acceptance). The counters give α and L
	// (k = (L − 1)/α); c needs the draft kernels' share of the step (a profiler trace).
	alpha, L := acc.item.Value, ln.item.Value
	k := (L - 1) / alpha
	h := &hit{
		hypothesis: "Speculative decoding spends k draft passes and a wider verification per step, but too few draft tokens survive: acceptance × tokens saved is below the draft cost, so each token costs more than without speculation.",
		nextProbe:  fmt.Sprintf("Run the same contract with %s (one canary): compare ITL p50 and the engine's accepted/draft token counters by task type.", profileOf(v.engine).Knobs.Spec),
		impact:     impactSpec{dims: []string{dimITL, dimTPOT, dimE2E}},
		items:      []meas{asContext(acc), asContext(ln)},
	}
	// The verification itself: a step that checks k drafts computes k+1 tokens of every
	// sequence. The weights and KV are read once, so while the step is bandwidth-bound it
	// costs about one plain step (r ≈ 1); at a batch that puts batch × (k+1) tokens past the
	// GPU's ridge point it is compute-bound and costs r plain steps. The yield is L tokens
	// per step, so speculation cannot pay once L < r, whatever the drafts cost.
	r, batch, haveR := verifyCost(v, o, k)
	if !haveR {
		r = 1
	}
	d, haveCost := v.val(evidence.SigTraceDraftPct)
	if haveR && k > 0 && L < r {
		bound := L / r
		m := derivedItem("engine.spec_net_speedup_bound", bound, "<", 1, "ratio", "engine /metrics × floors", evidence.StageServingCache,
			evidence.SigSpecAcceptanceRate, evidence.SigSpecMeanAcceptLen, evidence.SigRunningMean)
		h.items = append(h.items, m)
		h.symptom = fmt.Sprintf("speculative decoding is net-negative at this batch: each step verifies %.1f tokens of each of %.0f sequences, compute-bound at %.2f× a plain decode step's floor, and yields %.2f tokens per sequence: each token costs at least %.2f× what it would without speculation", k+1, batch, r, L, 1/bound)
		h.confidence = confSupported
		h.confNote = "from the floors (datasheet FLOPs and bandwidth, the model's size): the draft passes' own cost, not counted, only adds to it"
		h.strength = clamp01(1 - bound)
		if sym, over := itlSymptom(v, o); over {
			h.items = append(h.items, sym)
			h.confidence = confCorroborated
		}
		h.cond = "the verification is compute-bound at this batch"
		h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActNoSpeculation), Expect: []evidence.Expectation{
			v.expect(evidence.SigITLP50, "<=", -(1-bound)/2, true),
		}, Note: fmt.Sprintf("At a batch under the ridge point (about %.0f sequences here) the same drafts pay again: fewer drafts per step, or speculation only at low load, does the same.", batch/r)}
		return h
	}
	if !haveCost || k <= 0 || d <= 0 || d >= 100 {
		// Without the draft's cost the sign of the benefit is unknown: acceptance alone cannot
		// condemn speculation (α = 0.5 pays whenever a draft token costs under half a step).
		h.symptom = fmt.Sprintf("speculative decoding accepts %.0f%% of draft tokens (%.2f tokens per step): it pays only if a draft token costs under %.0f%% of a target step", alpha*100, L, alpha*100)
		h.confidence = confDoubtful
		h.confNote = "the draft's cost is not measured: the net benefit cannot be judged from acceptance alone"
		h.missing = append(h.missing, "a profiler trace (pel analyze DIR --trace FILE): the draft kernels' share of each step gives the draft cost", "a canary with speculation off: ITL with and without")
		h.cond = "speculation is net-negative"
		h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActNoSpeculation), Expect: []evidence.Expectation{
			v.expect(evidence.SigITLP50, "<=", 0, true),
		}, Note: fmt.Sprintf("If it pays (a draft token costs under %.0f%% of a step), ITL p50 rises instead.", alpha*100)}
		h.strength = 0.1
		return h
	}
	// The draft kernels' share d of a step that costs r + k·c plain steps is k·c/(r + k·c),
	// so c = d·r/(k·(1 − d)).
	c := d / 100 * r / (k * (1 - d/100))
	net := L / (r + k*c)
	m := derivedItem("engine.spec_net_speedup", net, "<", 1, "ratio", "engine /metrics × trace", evidence.StageServingCache, evidence.SigSpecAcceptanceRate, evidence.SigSpecMeanAcceptLen, evidence.SigTraceDraftPct)
	h.items = append(h.items, m, asContext(v.judge(evidence.SigTraceDraftPct, ">", 0)))
	if !m.holds {
		return nil // speculation pays at this acceptance and cost
	}
	h.symptom = fmt.Sprintf("speculative decoding is net-negative: %.0f%% of draft tokens accepted (%.2f tokens per step) while a draft token costs %.0f%% of a target step (drafts take %.0f%% of kernel time): each token costs %.2f× what it would without speculation", alpha*100, L, c*100, d, 1/net)
	h.confidence = confCorroborated
	h.strength = clamp01(1 - net)
	if sym, over := itlSymptom(v, o); over {
		h.items = append(h.items, sym)
		h.confidence += confCorroboration
	}
	// Half the computed gain is the bound: the verification is priced only where the floors
	// are known (r = 1 otherwise), and the trace's window stands for every step.
	h.cond = "speculation is net-negative"
	h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActNoSpeculation), Expect: []evidence.Expectation{
		v.expect(evidence.SigITLP50, "<=", -(1-net)/2, true),
	}, Note: fmt.Sprintf("The cost model says about %.0f%%; a draft accepted above %.0f%% (a better-matched draft) does the same.", (1-net)*100, c*100)}
	return h
}

// verifyCost is how many plain decode steps one verification of k drafts per sequence costs
// at the floors, for the run's batch (the engine's running mean, else the client's in
// flight) and mean context; ok is false without the floors' inputs or a batch.
func verifyCost(v *view, o *Options, k float64) (r, batch float64, ok bool) {
	engines := 1
	if n, ok := v.val(evidence.SigEngines); ok && n >= 1 {
		engines = int(n)
	}
	sys := systemOf(v.config, o, engines)
	if !sys.ready() || k <= 0 {
		return 0, 0, false
	}
	if run, ok := v.val(evidence.SigRunningMean); ok && run > 0 {
		batch = run
	} else if f, ok := v.val(evidence.SigInFlightMean); ok && f > 0 {
		batch = math.Max(1, f/float64(engines))
	} else {
		return 0, 0, false
	}
	plain, _ := sys.stepOf(batch, v.context, 1)
	spec, _ := sys.stepOf(batch, v.context, k+1)
	if plain <= 0 {
		return 0, 0, false
	}
	return spec / plain, batch, true
}

func ruleAppGap(v *view, o *Options) *hit {
	var gap meas
	haveGap := false
	// The client is part of the path it measures: a load generator that starts requests late
	// (a loaded machine) also reads their first bytes late, so the gap must exceed the
	// client's own p99 lateness before the path between engine and client is blamed.
	lag := v.judge(evidence.SigScheduleLagP99, ">", 0)
	// Best evidence first: the engine's own llm_request spans joined to each task (exact,
	// per request); else the difference of the client's and the /metrics histogram's p50s.
	if g, ok := v.val(evidence.SigTTFTGapP50); ok {
		s, _ := v.val(evidence.SigOTLPTTFTP50)
		thr := math.Max(appGapMinMs, appGapShare*s)
		if lag.present {
			thr = math.Max(thr, lag.item.Value)
		}
		gap = derivedItem(evidence.SigTTFTGapP50, g, ">=", thr, "ms", "client ⋈ otlp spans", evidence.StageServingCache, evidence.SigTTFTGapP50)
		haveGap = true
	} else if c, ok := v.val(evidence.SigTTFTFromSentP50); ok {
		if s, ok2 := v.val(evidence.SigServerTTFTP50); ok2 {
			thr := math.Max(appGapMinMs, appGapShare*s)
			if lag.present {
				thr = math.Max(thr, lag.item.Value)
			}
			// An engine TTFT that starts at scheduling leaves the engine's own queue out:
			// added back, it is the engine's time from arrival, and only what is left is
			// outside the engine. The sum of two medians stands in for the median of the
			// sum: the queue is what the gap is made of here, so the difference it leaves
			// is small either way, and it is the time budget that charges time.
			name, srcs := "client_minus_server.ttft_p50_ms", []string{evidence.SigTTFTFromSentP50, evidence.SigServerTTFTP50}
			if q, ok := v.val(evidence.SigServerQueueP50); ok && !engineTTFTClock(v).fromArrival {
				s += q
				name, srcs = "client_minus_server.ttft_with_queue_p50_ms", append(srcs, evidence.SigServerQueueP50)
			}
			gap = derivedItem(name, c-s, ">=", thr, "ms", "client − engine /metrics", evidence.StageRequestTrace, srcs...)
			haveGap = true
		}
	}
	tpc := v.judge(evidence.SigTokensPerChunk, ">=", tokensPerChunkMin)
	// A speculative engine legitimately sends several tokens per event.
	if sl, ok := v.val(evidence.SigSpecMeanAcceptLen); ok && tpc.present && tpc.item.Value < 2*sl {
		tpc.holds = false
	}
	// Events closer together than any engine step were held and released together on the
	// way, whatever each event carries (a proxy that buffers whole responses re-emits them
	// one token per event, all at once).
	coal := v.judge(evidence.SigCoalescedShare, ">=", coalescedMin)
	if !(haveGap && gap.holds) && !(tpc.present && tpc.holds) && !(coal.present && coal.holds) {
		return nil
	}
	h := &hit{
		symptom:    "users wait longer than the server reports",
		hypothesis: "Time is lost between the engine and the client: a buffering proxy, a large stream interval, or serialization coalesces tokens and delays the first one, while the engine's own timings look fine.",
		cond:       "the stream is buffered on the way",
		nextProbe:  "Timestamp the response at the gateway and the client (curl -N through and around the proxy); compare time to headers and chunk rhythm.",
		impact:     impactSpec{dims: []string{dimTTFT, dimITL, dimTPOT, dimE2E}},
		strength:   0.6,
	}
	if haveGap {
		h.items = append(h.items, gap)
		if lag.present && lag.item.Value > appGapMinMs {
			h.items = append(h.items, asContext(lag))
		}
	}
	if tpc.present {
		h.items = append(h.items, tpc)
	}
	if hd := v.judge(evidence.SigHeadersP50, ">", 0); hd.present {
		h.items = append(h.items, hd)
	}
	if coal.present && (coal.holds || !(tpc.present && tpc.holds)) {
		h.items = append(h.items, coal)
	}
	if sh := v.judge(evidence.SigTTFTShareE2E, ">=", ttftShareE2EMin); sh.present && sh.holds {
		h.items = append(h.items, asContext(sh))
	}
	switch {
	case coal.present && coal.holds && !(haveGap && gap.holds):
		h.symptom = fmt.Sprintf("%.0f%% of token events reach the client less than %v after the previous one: the stream arrives in bursts", coal.item.Value*100, stats.CoalescedGap)
		if sh, ok := v.val(evidence.SigTTFTShareE2E); ok && sh >= ttftShareE2EMin {
			h.symptom += fmt.Sprintf(", the first token with the last (TTFT is %.0f%% of E2E)", sh*100)
		}
		// No engine emits steps that close together: the coalescing is on the way. Only a
		// client too late to read its socket could cause it, which its schedule lag shows.
		h.confidence = confSupported
		if lag.present && lag.item.Value > scheduleLagMaxMs {
			h.confidence = confEven
			h.confNote = fmt.Sprintf("the load generator ran %.0f ms late at p99: a client that reads late also reads events together", lag.item.Value)
		}
	case haveGap && gap.holds:
		h.symptom = fmt.Sprintf("client TTFT p50 is %.0f ms longer than the server's", gap.item.Value)
		h.confidence = confCorroborated
		if tpc.present && tpc.holds {
			h.symptom += fmt.Sprintf(", with %.1f tokens per SSE event", tpc.item.Value)
			h.confidence = confDirect
		}
	default:
		h.symptom = fmt.Sprintf("%.1f tokens arrive per SSE event: the stream is coalesced", tpc.item.Value)
		h.confidence = confLikely
		if !v.stages[evidence.StageServingCache] {
			h.confidence = confShort
			h.missing = append(h.missing, missMetrics)
			h.confNote = "server-side TTFT not seen: cannot show the server was fine"
		}
	}
	// What unbuffering moves: the signals that showed the buffering, and the wait it added.
	h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActNoProxyBuffering), Note: "The engine's own metrics stay as they are."}
	if coal.present && coal.holds {
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigCoalescedShare, "<=", unbufferedShare, false))
	}
	if tpc.present && tpc.holds {
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigTokensPerChunk, "<=", 1.5, false))
	}
	if c, ok := v.val(evidence.SigTTFTFromSentP50); ok && c > 0 {
		extra := 0.0
		if haveGap && gap.holds {
			extra = gap.item.Value // the gap over the engine's own TTFT is what unbuffering gives back
		}
		if extra > 0 {
			// Half of the excess is the bound: the rest of the path keeps its own delays.
			h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigTTFTFromSentP50, "<=", -math.Min(0.9, extra/c/2), true))
		}
	}
	return h
}

func ruleColdStart(v *view, o *Options) *hit {
	r := v.judge(evidence.SigColdWarmTTFTRatio, ">=", coldRatioMin)
	if !r.present || !r.holds {
		return nil
	}
	h := &hit{
		symptom:    fmt.Sprintf("the first requests wait %.1f× longer for their first token than warm ones", r.item.Value),
		hypothesis: "The first steps compile kernels and capture graphs (torch.compile, CUDA graph capture, autotuning) on the request path, so early requests pay the warm-up.",
		items:      []meas{r},
		cond:       "warm-up work sits on the request path",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActPrewarm), Expect: []evidence.Expectation{
			v.expect(evidence.SigColdWarmTTFTRatio, "<=", 1.5, false),
		}, Note: "A second run against the same process shows no cold penalty either."},
		nextProbe: "Trace the first requests after start (torch.compile logs with TORCH_LOGS=recompiles, or a trace with compile regions), and rerun against the warm process.",
		impact:    impactSpec{dims: []string{dimTTFT, dimE2E}, phase: evidence.PhaseCold},
		strength:  clamp01((r.item.Value - coldRatioMin) / 10),
	}
	// The engine's own TTFT decides whether the first requests waited inside it: warm-up
	// work on the request path shows there; a cold excess only the client saw (connection
	// set-up, a proxy, a simulator or client falling behind) does not belong to the kernels.
	// A start burst is not a cold start: the first task, sent to an idle server, must be slow
	// too (nothing was ahead of it in any queue).
	if c, ok := v.cold[sigColdFirstTTFT]; ok {
		if w, ok2 := v.sig[evidence.SigTTFTFromSentP50]; ok2 && w.Value > 0 {
			first := derivedItem("client.cold_first_over_warm_ttft", c.Value/w.Value, ">=", coldRatioMin, "ratio", "client",
				evidence.StageRequestTrace, evidence.SigTTFTFromSentP50)
			if !first.holds {
				return nil // the first task was served at warm speed: the rest queued behind a burst
			}
			h.items = append(h.items, first)
		}
	}
	srv, seen := v.coldWarmRatio(evidence.SigServerTTFTP50, "engine.cold_warm_ttft_ratio", ">=", coldServerRatioMin)
	lag := v.judgeCold(evidence.SigScheduleLagP99, ">", scheduleLagMaxMs)
	switch {
	case seen && !srv.holds:
		return nil
	case seen:
		h.items = append(h.items, srv)
		h.confidence = confCorroborated
	default:
		// TTFT counts from scheduled_at, so a load generator that fell behind at start (a
		// busy machine starting its threads, connections and the engine at once) inflates
		// the cold figure by its own lateness: without the engine's view, the symptom must
		// hold from the send time too.
		sent, ok := v.coldWarmRatio(evidence.SigTTFTFromSentP50, "client.cold_warm_ttft_from_sent_ratio", ">=", coldRatioMin)
		if !ok || !sent.holds {
			return nil
		}
		h.items = append(h.items, sent)
		h.confidence = confEven
		h.missing = append(h.missing, missMetrics)
		h.confNote = "the engine's cold-phase TTFT not seen: the client alone cannot tell warm-up inside the engine from a cold path to it"
	}
	if lag.present && lag.holds {
		h.items = append(h.items, asContext(lag))
	}
	if c := v.judge(evidence.SigTraceCompileRegions, ">", 0); c.present && c.holds {
		h.items = append(h.items, c)
		h.confidence += confDirectCause
	}
	// pel sim's loop falling behind shifts what the client sees, never the engine's own
	// timings; say so when it happened in the cold phase.
	if sl := v.judgeCold(evidence.SigEngineStepLagMs, ">", simStepLagMaxMs); sl.present && sl.holds {
		h.items = append(h.items, asContext(sl))
		h.confNote = joinNote(h.confNote, fmt.Sprintf("the simulated engine's step loop ran %.0f ms behind in the cold phase; only the engine's own timings are free of it", sl.item.Value))
		if !seen {
			h.confidence *= lagSeverePenalty
		}
	}
	return h
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }
