// Package trace turns a profiler timeline into stage 2-3 evidence: where GPU time went
// (temporal breakdown, idle-time causes, kernel types, communication overlap), how kernels
// were launched (launch delay, short kernels, queue length, CUDA graphs), synchronization
// waits, torch.compile regions and attention share, and the findings they imply.
//
// Inputs are PyTorch profiler (Kineto) Chrome-trace JSON(.gz), read by trace/kineto, and
// Nsight Systems SQLite exports, read by trace/nsys; both fill the source-neutral
// trace/timeline model so each analysis is written once. Where Meta's Holistic Trace Analysis
// (HTA) defines a quantity, pel reports it under HTA's name with HTA's definition and
// defaults (last ProfilerStep dropped, float timestamps rounded to whole microseconds).
// TestAgainstHTA runs HTA itself (commit f4d0062, unmodified, from the shared oracles folder)
// on every Kineto fixture with both last-step settings and compares each such figure.
//
// # What HTA computes (file:function in HolisticTraceAnalysis at f4d0062)
//
//   - Loading (hta/common/trace_parser.py _parse_trace_dataframe_json, _compress_df,
//     round_down_time_stamps): every event with "dur" and "cat" except cat "Trace"; when
//     timestamps are floats, start = ceil(ts) and end = floor(ts + dur) in whole µs. A
//     non-numeric args.stream becomes −1 (utils.py normalize_gpu_stream_numbers).
//   - Last-step filter (hta/common/trace.py _filter_irrelevant_gpu_kernels), with two or more
//     ProfilerStep names: host events (trace_filter.py CPUOperatorFilter: all but
//     stream ≥ 0 ∧ correlation ≥ 0, and but "Event Sync"/"Context Sync") starting before the
//     last step stay, and a GPU event stays when a kept host event has its correlation id.
//     include_last_profiler_step compares aligned starts with the step's "end", which was
//     computed before _align_all_ranks shifted the starts, so it keeps every host event.
//   - Temporal breakdown (hta/analyzers/breakdown_analysis.py get_temporal_breakdown): every
//     event whose stream is not −1 — kernels, memcpy, memset and cuda_sync records, including
//     CUPTI's "no stream" 4294967295 — merged (utils.py merge_kernel_intervals). kernel_time
//     = last merged end − first start, idle = kernel_time − merged busy time, compute = merged
//     time of COMPUTATION kernels, non_compute = the rest (memory, communication and "other").
//   - Kernel type (hta/utils/utils.py get_kernel_type, patterns in hta/common/types.py):
//     COMMUNICATION names start with nccl, hip or hccl or contain ncclKernel; MEMORY names
//     start with Memcpy, Memset or dma; COMPUTATION is what matches none of the compute
//     exclusions (…Memcpy, …Memset, …dma, …Sync, Stream Wait Event, cuda…LaunchKernel, …);
//     everything else is OTHER, e.g. the cuda_sync records "Stream Sync", "Context Sync".
//   - Kernel-type shares (breakdown_analysis.py _get_gpu_kernel_type_time): a sweep over the
//     merged intervals of COMPUTATION, COMMUNICATION and MEMORY (OTHER is left out), labelled
//     "COMPUTATION overlapping COMMUNICATION" etc., percentages rounded to 1 decimal.
//   - Idle-time breakdown (breakdown_analysis.py get_idle_time_breakdown,
//     _analyze_idle_time_for_stream): only categories kernel, gpu_memcpy and gpu_memset ("Need
//     to filter out events with `cuda_sync` category"), per stream sorted by start; the gap
//     before an operation is host_wait when its launching call (by correlation) started after
//     the previous operation ended, else kernel_wait when shorter than
//     consecutive_kernel_delay (30 µs, hta/trace_analysis.py), else other.
//   - Communication overlap (hta/analyzers/communication_analysis.py get_comm_comp_overlap):
//     merged COMMUNICATION time also covered by merged COMPUTATION, over merged COMMUNICATION.
//   - Kernel breakdown (breakdown_analysis.py get_gpu_kernel_breakdown,
//     _aggr_gpu_kernel_time): sum/min/max/mean of durations per name over events with a
//     stream, for the three analysed types.
//   - Launch statistics (hta/analyzers/cuda_kernel_analysis.py cuda_kernel_launch_stats):
//     host events on stream −1 joined by correlation to events with a stream, for
//     cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync and cudaMemsetAsync;
//     launch_delay = GPU ts − host ts − host dur, clipped at 0.
//   - Queue length (hta/analyzers/trace_counters.py): +1 at a launch call of
//     trace_symbol_table.py get_runtime_launch_events_mask, −1 when its operation starts;
//     get_queue_length_summary describes the running count over its change points.
//
// # DIFFERENCES from HTA (deliberate), and their size on the fixtures
//
// TestAgainstHTA lists each difference that shows on a fixture in htaDeliberate with HTA's
// figure and pel's, so a change in either fails the test.
//   - A host cpu_op carrying args.stream (Inductor writes "stream": 0 on its Triton
//     cpu_op) is GPU work to HTA, which takes any event whose stream is not −1; pel counts
//     only kernel, memcpy, memset and cuda_sync records. a100-triton-compiled: kernel_time
//     and compute 94 µs (HTA) vs 1 µs (pel), kernel triton_poi_fused_add_cos_sin_0 sum 95 vs
//     1 µs, max 94 vs 1 µs. No other fixture has such an event.
//   - gpu_user_annotation events are dropped by pel. HTA keeps them
//     (ParserConfig.drop_gpu_user_annotation is never read at f4d0062), so one carrying
//     args.stream would be GPU time there. None in the fixtures carries a stream: no effect.
//   - Queue length at tied timestamps: pel counts an operation's start before a launch in
//     the same µs; HTA's order is numpy's unstable quicksort over its frame's row order. The
//     mean can differ by up to 2·(tied pairs)/points, the max by the largest tie:
//     a100-ddp-nccl stream 7 mean 0.807 vs 0.8137 (41 tied pairs in 5,004 points; with the
//     last step 0.810 vs 0.8168), v100-ns-resolution stream 7 812.400 vs 812.4128 (131 in
//     9,752; 847.037 vs 847.0488), a100-simple-add equal (1 tie). Maxima agree.
//   - Launch (pel's own launch figures) counts every kernel-launch API (cuLaunchKernel for
//     Triton, hip* for ROCm, cooperative launches) and async copy/set; Launch.HTA keeps
//     HTA's four names and equals HTA's figures on every fixture. Launch counts pel vs HTA:
//     a100-triton-compiled 1 vs 0, mi250-rocm 14 vs 0; equal elsewhere.
//   - HTA's whole-µs rounding gives an event shorter than 1 µs that crosses no µs tick a
//     duration of −1 µs (ceil(ts) > floor(ts + dur)); pel ends it at its start (0 µs), so no
//     duration is ever negative. The fixtures hold such host events (runtime calls:
//     a100-ddp-nccl 837, v100-ns-resolution 1,887, mi250-rocm 1; cpu_ops: v100 3,182) but no
//     such GPU operation; no compared figure changes.
//   - An operation that starts before the previous one on its stream has ended
//     (programmatic dependent launch, or a clock problem) makes HTA's gap negative; pel
//     measures each gap from the latest end so far on the stream, so idle time is never
//     negative, and says in a note how many operations overlapped. None in the fixtures.
//   - Where HTA raises (no GPU events: a100-cupti-counters and cpu-only raise IndexError in
//     _get_idle_time_for_kernels), pel reports a null temporal breakdown.
//   - top_kernels lists the 10 kernels with the most total time across types with no
//     "others" folding, and leaves cuda_sync records out (they are OTHER to HTA too); a
//     kernel whose name makes it OTHER (e.g. one containing "Sync") is listed with type
//     "other", which HTA's breakdown leaves out. Per-kernel sum/min/max/mean agree.
//   - Figures are per rank; HTA pools the kernel-type percentages over the ranks of a Trace
//     (one rank per Kineto file: no effect; an nsys export with several GPUs differs).
//   - HTA joins GPU events without a correlation id on −1 to every such host event
//     (duplicating them), and one whose launch is missing to the trace's first row (via the
//     fallback index_correlation 0); pel keeps each once and treats it as launched before
//     its gap. HTA rounds only when the timestamp column is float (a trace with integer ts
//     and fractional dur keeps fractional ends there); pel rounds every event. Equal
//     timestamps on one stream keep file order in pel, quicksort order in HTA. With the last
//     step kept, pel keeps host events that start before the last step ends, HTA every host
//     event (above). None of these changes a figure on the fixtures.
//
// Percentages are rounded as numpy rounds (half to even of the scaled value), as HTA's are.
//
// # Hostile input
//
// Every bound on what a trace can make pel hold is named once with its reason:
// trace/timeline/limits.go (records kept, name length, name table) and
// trace/kineto/limits.go (string and number tokens, nesting, devices). Exceeding one is a
// counted drop in the notes (names cut or not kept) or a clear error (too many records, a
// number token too long, nesting too deep), never a crash, and memory grows with the
// operations kept, not with the bytes read. A trace whose times would make a duration,
// share or idle time negative (negative ts or dur, times beyond ±9e15 µs) is reported as
// malformed with the count of such events (timeline.MalformedError), and a last check
// (checkNonNegative) turns any negative figure into an error instead of printing it.
package trace
