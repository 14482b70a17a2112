package trace

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/pel-ladder/pel/evidence"
)

// Thresholds of the trace findings. They are judgement calls, stated with each finding's
// evidence so a reader can disagree with a number rather than with a verdict.
const (
	idleBoundPct        = 20.0 // GPU idle share of kernel_time worth explaining
	hostWaitShareBound  = 0.5  // idle dominated by host_wait
	shortKernelBound    = 0.5  // share of launches that are short (launch-bound)
	tinyKernelP50Us     = 10.0 // median kernel duration of a tiny-kernel swarm
	tinyKernelMinCount  = 100
	graphShareFallback  = 0.5 // graphs are used, yet most launches are per-kernel
	memoryKernelBound   = 20.0
	commPctBound        = 10.0
	commOverlapBound    = 50.0
	syncWaitBound       = 10.0
	pageableCopiesBound = 1
	minKernelTimeUs     = 1000 // findings need at least 1 ms of GPU timeline...
	minGPUEvents        = 10   // ...and 10 GPU events
)

// stageOf maps each trace signal to its evidence stage (stage 2 GPU execution &
// memory, stage 3 kernels & operators, stage 5 distributed).
var stageOf = map[string]int{
	evidence.SigTraceIdlePct: 2, evidence.SigTraceComputePct: 2, evidence.SigTraceNonComputePct: 2,
	evidence.SigTraceHostWaitShare: 2, evidence.SigTraceKernelWaitShare: 2, evidence.SigTraceSyncWaitPct: 2,
	evidence.SigTraceHostAwayShare:   2,
	evidence.SigTraceMemoryKernelPct: 2, evidence.SigTraceStepP50Ms: 2,
	evidence.SigTraceShortKernelShare: 3, evidence.SigTraceLaunchDelayP50: 3, evidence.SigTraceKernelDurP50: 3,
	evidence.SigTraceGraphLaunchShare: 3, evidence.SigTraceAttentionPct: 3, evidence.SigTraceCompileRegions: 3,
	evidence.SigTraceDraftPct: 3, evidence.SigTraceCommPct: 5, evidence.SigTraceCommOverlapPct: 5,
}

var unitOf = map[string]string{
	evidence.SigTraceIdlePct: "pct", evidence.SigTraceComputePct: "pct", evidence.SigTraceNonComputePct: "pct",
	evidence.SigTraceHostWaitShare: "ratio", evidence.SigTraceKernelWaitShare: "ratio", evidence.SigTraceSyncWaitPct: "pct",
	evidence.SigTraceHostAwayShare:   "ratio",
	evidence.SigTraceMemoryKernelPct: "pct", evidence.SigTraceStepP50Ms: "ms", evidence.SigTraceShortKernelShare: "ratio",
	evidence.SigTraceLaunchDelayP50: "us", evidence.SigTraceKernelDurP50: "us", evidence.SigTraceGraphLaunchShare: "ratio",
	evidence.SigTraceAttentionPct: "pct", evidence.SigTraceCompileRegions: "count", evidence.SigTraceCommPct: "pct",
	evidence.SigTraceDraftPct:       "pct",
	evidence.SigTraceCommOverlapPct: "pct",
}

// idleShares returns host_wait and kernel_wait as shares of all per-stream idle gaps, and
// the host-away part of host_wait as a share of it (awayOK false without host_wait).
func idleShares(r RankResult) (host, kern float64, ok bool, away float64, awayOK bool) {
	var h, k, o, a float64
	for _, s := range r.IdleByStream {
		h += s.HostWaitUs
		k += s.KernelWaitUs
		o += s.OtherUs
		a += s.HostAwayUs
	}
	t := h + k + o
	if t <= 0 {
		return 0, 0, false, 0, false
	}
	if h > 0 {
		away, awayOK = round(a/h, 4), true
	}
	return round(h/t, 4), round(k/t, 4), true, away, awayOK
}

// rankSignals lists one rank's signal values (name → value); absent figures are left out.
func rankSignals(r RankResult) map[string]float64 {
	m := map[string]float64{}
	if r.Temporal == nil {
		return m
	}
	m[evidence.SigTraceIdlePct] = r.Temporal.IdlePct
	m[evidence.SigTraceComputePct] = r.Temporal.ComputePct
	m[evidence.SigTraceNonComputePct] = r.Temporal.NonComputePct
	if h, k, ok, away, awayOK := idleShares(r); ok {
		m[evidence.SigTraceHostWaitShare] = h
		m[evidence.SigTraceKernelWaitShare] = k
		if awayOK {
			m[evidence.SigTraceHostAwayShare] = away
		}
	}
	m[evidence.SigTraceSyncWaitPct] = r.Sync.SyncWaitPct
	m[evidence.SigTraceMemoryKernelPct] = r.MemoryKernelPct
	if r.Steps != nil {
		m[evidence.SigTraceStepP50Ms] = r.Steps.P50Ms
	}
	if r.Launch.Count > 0 {
		m[evidence.SigTraceShortKernelShare] = r.Launch.ShortKernelShare
		m[evidence.SigTraceLaunchDelayP50] = r.Launch.LaunchDelayP50Us
	}
	m[evidence.SigTraceKernelDurP50] = r.KernelDurP50Us
	if r.Graphs.GraphLaunches+r.Graphs.KernelLaunches > 0 {
		m[evidence.SigTraceGraphLaunchShare] = r.Graphs.GraphShare
	}
	m[evidence.SigTraceAttentionPct] = r.AttentionPct
	if r.DraftPct > 0 {
		m[evidence.SigTraceDraftPct] = r.DraftPct
	}
	m[evidence.SigTraceCompileRegions] = float64(r.Compile.Regions)
	if r.CommCompOverlapPct != nil {
		m[evidence.SigTraceCommPct] = r.CommPct
		m[evidence.SigTraceCommOverlapPct] = *r.CommCompOverlapPct
	}
	return m
}

// FillEvidence adds the trace's signals and findings to ev. With one rank the signals are
// unlabelled headline values; with several, each rank's values carry a "rank" label and the
// headline is the rank with the most idle GPU time (the one that limits a synchronous job).
func FillEvidence(ev *evidence.Evidence, r *Result) {
	if ev == nil || r == nil {
		return
	}
	head := headlineRank(r)
	for i, rk := range r.Ranks {
		sig := rankSignals(rk)
		names := make([]string, 0, len(sig))
		for n := range sig {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := evidence.Signal{Name: n, Value: sig[n], Unit: unitOf[n], Stage: stageOf[n], Source: r.Source}
			if len(r.Ranks) > 1 {
				lab := s
				lab.Labels = map[string]string{"rank": strconv.Itoa(rk.Rank)}
				ev.Add(lab)
			}
			if i == head {
				ev.Add(s)
			}
		}
	}
	for _, st := range []int{evidence.StageGPUExecution, evidence.StageKernelOperator} {
		s := ev.Stage(st)
		s.Sources = appendUnique(s.Sources, r.Source)
	}
	ev.Findings = append(ev.Findings, r.Findings...)
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// headlineRank picks the rank with the most idle GPU time; -1 when no rank ran GPU work.
func headlineRank(r *Result) int {
	best, bestIdle := -1, -1.0
	for i, rk := range r.Ranks {
		if rk.Temporal == nil {
			continue
		}
		if rk.Temporal.IdleUs > bestIdle {
			best, bestIdle = i, rk.Temporal.IdleUs
		}
	}
	return best
}

// Findings derives falsifiable findings from the headline rank (see FillEvidence).
func Findings(r *Result) []evidence.Finding {
	out := []evidence.Finding{}
	h := headlineRank(r)
	if h < 0 {
		return out
	}
	rk := r.Ranks[h]
	if rk.Temporal.KernelTimeUs < minKernelTimeUs || rk.GPUEvents < minGPUEvents {
		// too little GPU work to judge: every ratio would be noise
		return out
	}
	sig := rankSignals(rk)
	item := func(name, op string, thr float64) evidence.EvidenceItem {
		return evidence.EvidenceItem{Signal: name, Value: sig[name], Op: op, Threshold: thr, Unit: unitOf[name], Source: r.Source, Stage: stageOf[name]}
	}
	where := fmt.Sprintf("rank %d", rk.Rank)
	idle := rk.Temporal.IdlePct
	hostShare, kernShare, haveIdle, _, _ := idleShares(rk)

	if haveIdle && idle >= idleBoundPct && hostShare >= hostWaitShareBound {
		out = append(out, evidence.Finding{
			ID: "trace.host_wait_idle", Layer: evidence.LayerApplication, Severity: severity(idle, 40),
			Symptom:    fmt.Sprintf("GPU idle %.1f%% of kernel time on %s; %.0f%% of the idle gaps start before the host even issued the next operation (host_wait)", idle, where, 100*hostShare),
			Hypothesis: "the host (Python, data loading, scheduling loop, synchronization) does not enqueue work fast enough: the GPU waits for the CPU",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceIdlePct, ">=", idleBoundPct), item(evidence.SigTraceHostWaitShare, ">=", hostWaitShareBound)},
			Prediction: "if this holds, moving host work off the critical path (overlapping the scheduler with GPU execution, pinned async data loading, removing per-step syncs) cuts idle_pct by at least half of the host_wait share, and step time falls accordingly",
			NextProbe:  "py-spy / perf on the serving process during the same window; Kineto with with_stack=True to see which host op precedes each gap",
			Confidence: 0.7,
		})
	}
	if rk.Launch.Count > 0 && rk.Launch.ShortKernelShare >= shortKernelBound && (idle >= idleBoundPct || kernShare >= 0.3) {
		out = append(out, evidence.Finding{
			ID: "trace.launch_bound", Layer: evidence.LayerKernel, Severity: severity(100*rk.Launch.ShortKernelShare, 75),
			Symptom:    fmt.Sprintf("%.0f%% of %d launches on %s run shorter on the GPU than their CPU launch call (≤ %.0f µs); GPU idle %.1f%%", 100*rk.Launch.ShortKernelShare, rk.Launch.Count, where, r.Options.RuntimeCutoffUs, idle),
			Hypothesis: "launch overhead, not kernel work, sets the pace: each kernel costs more to launch than to run",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceShortKernelShare, ">=", shortKernelBound), item(evidence.SigTraceIdlePct, ">=", idleBoundPct)},
			Prediction: "if this holds, capturing the step in a CUDA graph (or fusing kernels with torch.compile) cuts launches per step by >5× and idle_pct falls below 10%",
			NextProbe:  "re-profile with CUDA graphs enabled (vLLM: no --enforce-eager) and compare graph_launch_share and idle_pct",
			Confidence: 0.7,
		})
	}
	if n := rk.Graphs.KernelLaunches; rk.KernelDurP50Us > 0 && rk.KernelDurP50Us < tinyKernelP50Us && n >= tinyKernelMinCount {
		out = append(out, evidence.Finding{
			ID: "trace.tiny_kernel_swarm", Layer: evidence.LayerKernel, Severity: evidence.SeverityWarn,
			Symptom:    fmt.Sprintf("median kernel runs %.1f µs over %d per-kernel launches on %s", rk.KernelDurP50Us, n, where),
			Hypothesis: "work is split into many tiny kernels (unfused elementwise ops, small batches): per-kernel fixed costs dominate",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceKernelDurP50, "<", tinyKernelP50Us)},
			Prediction: "if this holds, fusion (torch.compile) or larger batches raise the median kernel duration above 10 µs and cut kernel count per step",
			NextProbe:  "top kernels by count in this trace; torch.compile or a larger max batch, then re-profile",
			Confidence: 0.6,
		})
	}
	if g := rk.Graphs; g.GraphLaunches > 0 && g.GraphShare < graphShareFallback {
		out = append(out, evidence.Finding{
			ID: "trace.graph_fallback", Layer: evidence.LayerKernel, Severity: evidence.SeverityWarn,
			Symptom:    fmt.Sprintf("CUDA graphs are in use on %s, yet %d of %d launches are per-kernel", where, g.KernelLaunches, g.GraphLaunches+g.KernelLaunches),
			Hypothesis: "some steps fall back to eager launches (batch sizes outside the captured set, graph capture disabled for some shapes)",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceGraphLaunchShare, "<", graphShareFallback)},
			Prediction: "if this holds, capturing the missing batch sizes raises graph_launch_share above 0.9 and lowers step time for those batches",
			NextProbe:  "log the batch size per step next to graph replays (vLLM cudagraph_capture_sizes)",
			Confidence: 0.5,
		})
	}
	if rk.MemoryKernelPct >= memoryKernelBound {
		out = append(out, evidence.Finding{
			ID: "trace.memory_copies", Layer: evidence.LayerHardware, Severity: severity(rk.MemoryKernelPct, 40),
			Symptom:    fmt.Sprintf("memcpy/memset occupy %.1f%% of kernel time on %s", rk.MemoryKernelPct, where),
			Hypothesis: "the GPU spends its time moving bytes (host↔device copies or device copies): memory-bandwidth bound on transfers rather than compute",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceMemoryKernelPct, ">=", memoryKernelBound)},
			Prediction: "if this holds, keeping tensors resident (no per-step host round trips) or pinning host buffers cuts memory_kernel_pct by half",
			NextProbe:  "DCGM DRAM active and PCIe bytes/s during the same window; nsys with --cuda-memory-usage",
			Confidence: 0.5,
		})
	}
	if rk.CommCompOverlapPct != nil && rk.CommPct >= commPctBound && *rk.CommCompOverlapPct < commOverlapBound {
		out = append(out, evidence.Finding{
			ID: "trace.exposed_communication", Layer: evidence.LayerParallelism, Severity: severity(rk.CommPct, 25),
			Symptom:    fmt.Sprintf("communication kernels take %.1f%% of kernel time on %s, only %.1f%% of it overlapped with computation", rk.CommPct, where, *rk.CommCompOverlapPct),
			Hypothesis: "collectives (all-reduce, all-gather) run exposed on the critical path: the parallel layout pays communication it does not hide",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceCommPct, ">=", commPctBound), item(evidence.SigTraceCommOverlapPct, "<", commOverlapBound)},
			Prediction: "if this holds, a smaller tensor-parallel degree (or more data parallelism), or overlapping collectives with compute, cuts step time by up to comm_pct × (1 − overlap)",
			NextProbe:  "NCCL_DEBUG=INFO bus bandwidth vs the link's peak; compare with TP=1 on the same workload",
			Confidence: 0.6,
		})
	}
	if rk.Sync.SyncWaitPct >= syncWaitBound {
		out = append(out, evidence.Finding{
			ID: "trace.sync_waits", Layer: evidence.LayerApplication, Severity: severity(rk.Sync.SyncWaitPct, 30),
			Symptom:    fmt.Sprintf("host blocked in synchronizing calls for %.1f%% of kernel time on %s (%d calls)", rk.Sync.SyncWaitPct, where, rk.Sync.HostSyncCalls),
			Hypothesis: "the host synchronizes with the device every step (.item(), .cpu(), blocking copies), so it cannot run ahead to queue the next work",
			Evidence:   []evidence.EvidenceItem{item(evidence.SigTraceSyncWaitPct, ">=", syncWaitBound)},
			Prediction: "if this holds, removing the per-step synchronization raises queue length above 1 and lowers idle_pct",
			NextProbe:  "torch.cuda.set_sync_debug_mode('warn') to name the synchronizing call sites",
			Confidence: 0.5,
		})
	}
	if rk.MemoryOps.PageableAsyncCopies >= pageableCopiesBound {
		out = append(out, evidence.Finding{
			ID: "trace.pageable_async_copies", Layer: evidence.LayerApplication, Severity: evidence.SeverityInfo,
			Symptom:    fmt.Sprintf("%d asynchronous copies on %s use pageable host memory", rk.MemoryOps.PageableAsyncCopies, where),
			Hypothesis: "async copies from pageable memory are staged and run synchronously (nsys analyze cuda_memcpy_async): they serialize host and device",
			Evidence:   []evidence.EvidenceItem{},
			Prediction: "if this holds, pinning the host buffers (pin_memory=True) makes these copies overlap with compute",
			NextProbe:  "nsys analyze -r cuda_memcpy_async on the same run",
			Confidence: 0.6,
		})
	}
	return out
}

func severity(v, critical float64) string {
	if v >= critical {
		return evidence.SeverityCritical
	}
	return evidence.SeverityWarn
}
