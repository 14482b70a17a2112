package diagnose

import "github.com/pel-ladder/pel/evidence"

// attribution is one component a rule's finding explains.
type attribution struct {
	comp int // the component slot (cQueue, cStalls...)
	// tier orders explanations of one component: the budget takes the lowest tier that has
	// a credible finding, and within it the highest-ranked finding.
	tier int
	// name is the component's name when this finding explains it, with %s for the rule's id.
	name string
	// whole: the finding says the whole wait before the engine's own processing was its
	// queue (the engine ran at its ceiling, so no wait was spent in front of it).
	whole bool
	// when, if set, says whether the attribution holds in this run.
	when func(b *budgetCtx, v *view) bool
}

// Tiers. For the engine queue: a cause the finding sees directly (the cache, lost context)
// comes first, then a slow service the queue forms behind, then the bare observation that
// the engine ran at its ceiling. For decode stalls: delivery bursts first (what the client
// saw as stalls were the path's), then co-batched prefills, then slow steps.
const (
	tierOwnCause    = 1
	tierSlowService = 2
	tierStepCause   = 3
	tierCeiling     = 3
)

// ranked is a finding with the rule that made it and its ranking score.
type ranked struct {
	f     evidence.Finding
	r     *rule
	score float64
}

// rule is one row of the symptom → layer catalog. eval returns nil when the
// symptom is absent or cannot be judged from this view.
type rule struct {
	id    string
	layer evidence.Layer
	eval  func(v *view, o *Options) *hit
	// defers lists more specific rules that, when they fire, explain this rule's symptom:
	// this finding then drops to info (e.g. DRAM is saturated in every decode, but a
	// net-negative speculation is why the bytes per token are high).
	defers []*rule
	// explains is what a credible finding of this rule explains in the time budget
	// (attribution.go): the budget reads these, never a rule's id.
	explains []attribution
	// once: the symptom happens once per server start (a cold start), so halves of one
	// warm window cannot reproduce it.
	once bool
}

// hit is what a rule found before ranking, acceptance impact and reproduction are added.
type hit struct {
	symptom, hypothesis, prediction, nextProbe string
	// predicted is the prediction as data; cond is the "if" clause Render puts before it.
	// When set, prediction is rendered from them.
	predicted  *evidence.Predicted
	cond       string
	items      []meas // evidence cited; the decisive ones hold
	confidence float64
	confNote   string
	missing    []string
	impact     impactSpec
	// strength in [0,1]: how far past its threshold the decisive signal sits (ranking only).
	strength float64
}

// What a missing source would settle; the words name the flag that adds it.
const (
	missMetrics = "engine /metrics (pel run --metrics URL): queue depth, KV-cache usage, preemptions, server-side latencies and speculative-decoding counters tell the engine's share from the rest"
	missDCGM    = "DCGM (pel run --dcgm URL): SM active, DRAM active and tensor active tell bandwidth-bound from launch-bound"
	missTrace   = "a profiler trace (pel analyze DIR --trace FILE): kernel gaps, short-kernel share and graph launches confirm launch overhead"
	missCommTr  = "a profiler trace of all ranks (pel analyze DIR --trace FILE): communication share and compute overlap"
	missSLO     = "the contract's decode objectives (an ITL or TPOT bound): whether decode is over one"
	missHostCPU = "the server's CPU time against wall time (perf stat -p PID) and the host's run queue (vmstat 1): its threads computing vs waiting for cores other processes hold"
)

// Thresholds. Each says why it sits where it does; change them only with a test that shows
// a scenario moving across the line.
//
// Sources for the quantities (their definitions, not the thresholds, which are pel's own
// judgement, checked against the simulated scenarios):
//   - vLLM "Optimization and Tuning" (docs.vllm.ai/en/stable/configuration/optimization/):
//     preemption by recompute when KV blocks run out, and the advice to lower max_num_seqs /
//     max_num_batched_tokens or raise gpu_memory_utilization; chunked prefill.
//   - DCGM feature overview, profiling metrics
//     (docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html#metrics):
//     DCGM_FI_DEV_GPU_UTIL is the share of time a kernel ran; SM_ACTIVE, DRAM_ACTIVE and
//     PIPE_TENSOR_ACTIVE are ratios of cycles each unit was active.
//   - Holistic Trace Analysis (hta/trace_analysis.py): idle time breakdown into host_wait /
//     kernel_wait, and communication-computation overlap.
const (
	// kvFullRatio: vLLM preempts only when no free KV block is left; a window whose peak
	// usage stays under 95% of blocks had room, so preemptions there come from elsewhere.
	kvFullRatio = 0.95
	// preemptRateMin: one preemption every 20 s is already a recompute of a whole prompt
	// several times a minute; below it, preemptions are incidents rather than thrashing.
	preemptRateMin = 0.05
	// kvTargetRatio: the usage a capped concurrency should aim at in the prediction, leaving
	// one block in eight for growth of running sequences.
	kvTargetRatio = 0.85

	// waitingMin: on average at least one request waiting for admission means the server,
	// not the arrival process, sets the pace.
	waitingMin = 1.0
	// kvRoomRatio: KV usage under 90% at peak means capacity did not gate admission.
	kvRoomRatio = 0.90
	// gapUtilMax: the GPU ran no kernel for more than a quarter of the time while requests
	// waited; with work queued, that idle time is the host loop, not the device.
	gapUtilMax = 0.75
	// traceIdleMin and hostWaitMin: HTA-style idle share of the trace and the share of that
	// idle attributed to the host (Holistic Trace Analysis "idle time breakdown").
	traceIdleMin = 20.0 // pct of kernel time
	hostWaitMin  = 0.5  // ratio of idle time
	// hostAwayMin: most of that host wait lies in gaps where the host issued no runtime call
	// for longer than HTA's launch-delay outlier bound (100 µs, cuda_kernel_launch_stats): a
	// launch path does not idle that long between calls, so the wait is not the launches'.
	hostAwayMin = 0.5 // ratio of host-wait time
	// bandScalingMax: goodput grew by under half of what the concurrency gain would give.
	bandScalingMax = 0.5

	// holRatioMin: short prompts take at least twice as long to their first token when a
	// long prompt is in flight: they are queued behind its prefill.
	holRatioMin = 2.0
	// itlStallRatio: p99 ITL three times p50 means decode steps stall (a prefill ran inside).
	itlStallRatio = 3.0
	// holEngineShareMin: short prompts blocked behind a long prefill wait inside the engine,
	// so the engine's own TTFT p99 carries at least half of the client's (0.85-0.91 in the
	// prefill-hol scenario; 0.32 when a starved test process, not the engine, delayed them).
	holEngineShareMin = 0.5

	// launchUtilMin / launchSMShareMax: a kernel was resident ≥60% of the time, yet SMs were
	// active for under half of that resident time: tiny kernels with launch gaps inside what
	// the utilization counter reports as activity.
	launchUtilMin    = 0.60
	launchSMShareMax = 0.50
	// dramLowMax: under half of peak DRAM bandwidth rules out a bandwidth-bound decode.
	dramLowMax = 0.50
	// shortKernelMin: at least half of all launches are short (under the trace package's
	// short-kernel bound): launch overhead is comparable to the work.
	shortKernelMin = 0.50
	// graphShareMax: under 10% of launches go through CUDA graphs: capture fell back to
	// eager launches (vLLM captures decode graphs by default).
	graphShareMax = 0.10

	// dramHighMin: DRAM busy ≥70% of cycles is the practical ceiling of HBM (DCGM
	// DRAM_ACTIVE rarely exceeds ~0.8-0.9 even in a streaming kernel).
	dramHighMin = 0.70
	// tensorLowMax: tensor pipes under 30% active while DRAM is near its ceiling: the math
	// waits for bytes.
	tensorLowMax = 0.30
	// sloMissMin: without a contract ITL bound, a 5% per-request SLO miss rate stands in.
	sloMissMin = 0.05

	// commPctMin: communication kernels take ≥15% of kernel time, half again the trace
	// package's "worth a look" bound (10%): at that share an exposed all-reduce costs more
	// than most single-kernel fixes could win. overlapMax: less than half of it hidden under
	// compute (HTA "communication computation overlap").
	commPctMin = 15.0
	overlapMax = 50.0
	// replicaCVMin: running requests per replica vary by ≥30% of their mean: the router
	// leaves replicas unevenly loaded.
	replicaCVMin = 0.30

	// specAcceptMax: fewer than half of the draft tokens survive verification.
	specAcceptMax = 0.5
	// specLenMax: under 1.5 tokens per verification step (counting the bonus token): the
	// k draft passes per step buy less than half a token.
	specLenMax = 1.5

	// appGapMinMs / appGapShare: the client waits ≥50 ms and ≥30% longer for its first token
	// than the server says it took: the difference lives between the engine and the client.
	appGapMinMs = 50.0
	appGapShare = 0.30
	// tokensPerChunkMin: four or more tokens per SSE event from a non-speculative engine
	// means something coalesces the stream (proxy buffering, stream interval).
	tokensPerChunkMin = 4.0

	// coldRatioMin: the cold phase's median TTFT at least three times the warm one.
	coldRatioMin = 3.0
	// coldServerRatioMin: the engine's own cold/warm TTFT p50 ratio. A constant client-side
	// overhead pulls the client's ratio towards 1, so warm-up inside the engine shows at
	// least as strongly there; the bar is lower than coldRatioMin only to absorb bucket
	// interpolation (adjacent vLLM TTFT buckets are up to 2.5× apart).
	coldServerRatioMin = 2.0
	// simStepLagMaxMs: pel sim lets its loop fall this far behind before it drops the debt
	// (sim/server.go lagTolerance); beyond it the client's timings carry the simulator's lag.
	simStepLagMaxMs = 50.0
)

// Rules that work from pel's own records (stats.ShapeOf) when the engine's /metrics are
// thin or absent; engine signals, where present, corroborate or overrule them.
//
// Thresholds, each by what the quantity means:
const (
	// queueShareMin: at least half of the time to first token is spent before the engine
	// starts the task: the wait, not the work, sets TTFT.
	queueShareMin = 0.5
	// queueTargetShare: what a relieved queue leaves. A continuous-batching engine admits a
	// new request only between iterations (llama.cpp's server loop takes new tasks, then runs
	// one decode of the whole batch; vLLM's scheduler runs once per step), so a task that
	// finds a free slot still waits for the iteration under way, and that iteration can carry
	// another task's whole prompt, about as long as the task's own prefill. A wait of up to
	// one service leaves a share up to one half; so with room to admit, the share falls under
	// the same line that detects the queue, and lower only where iterations are short.
	queueTargetShare = queueShareMin
	// tpotLoadMax: decode at least 1.5× slower for tasks sent under high load than under low
	// load means the device itself slows as the batch grows: it, not an admission cap, is
	// near its capacity.
	tpotLoadMax = 1.5

	// stallShareMin: 1% of per-stream gaps are stalls, so the 99th percentile of per-token
	// latency sits on a stall.
	stallShareMin = 0.01
	// stallAlignedMin: at least half of the stalls end when another task gets its first
	// token (its prefill ran in the stalled step), and stallChance: twice as often as an
	// ordinary gap does by chance.
	stallAlignedMin = 0.5
	stallChance     = 2.0

	// coalescedMin: half of the event gaps are shorter than any engine step
	// (stats.CoalescedGap): the stream was held and released in bursts on the way.
	coalescedMin = 0.5
	// ttftShareE2EMin: the first token arrived after 90% of the response time: it was not
	// streamed to the client as it was made.
	ttftShareE2EMin = 0.9

	// prefillServiceMin: three quarters of TTFT or more is service, not queue, so the first
	// token waits on the task's own prefill; prefillFitMin: prompt length explains at least
	// 80% of the variance of that service time.
	prefillServiceMin = 0.75
	prefillFitMin     = 0.8

	// errorRateMin: one task in a hundred lost outright to one cause is a rate the contract
	// will meet in production, not an incident.
	errorRateMin = 0.01
	// contextRateMin: the same for tasks that lost context (refused or truncated prompts,
	// shifted contexts): each one's output does not answer the prompt that was sent.
	contextRateMin = 0.01
)
