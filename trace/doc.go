// Package trace turns a profiler timeline into stage 2-3 evidence: where GPU time went
// (temporal breakdown, idle-time causes, kernel types, communication overlap), how kernels
// were launched (launch delay, short kernels, queue length, CUDA graphs), synchronization
// waits, torch.compile regions and attention share, and the findings they imply.
//
// Inputs are PyTorch profiler (Kineto) Chrome-trace JSON(.gz), read by trace/kineto, and
// Nsight Systems SQLite exports, read by trace/nsys; both fill the source-neutral
// trace/timeline model so each analysis is written once. Where Meta's Holistic Trace Analysis
// (HTA) defines a quantity, the definition here follows HTA's source (each function cites the
// file) and the defaults match HTA's (last ProfilerStep dropped, float timestamps rounded to
// whole microseconds); deliberate differences are listed on Options and in DIFFERENCES below.
//
// DIFFERENCES from HTA (all deliberate). trace/testdata/hta_ref/hta_ref.py transcribes HTA's
// code (loading, last-step filter, each analysis) without pandas; TestHTAReference pins pel
// to its output on every Kineto fixture and lists, per fixture, the differences below.
//   - launch statistics include every kernel-launch API (cuLaunchKernel for Triton, hip* for
//     ROCm, cudaLaunchKernelExC) besides HTA's cudaLaunchKernel/cudaMemcpyAsync/
//     cudaMemsetAsync, and launch delay is GPU start − end of the launching call, as HTA
//     documents it (its code computes gpu_ts − cpu_ts + cpu_dur, an operator-precedence
//     slip). Launch.HTA repeats HTA's computation exactly (its API list, its formula); HTA
//     itself raises KeyError when one of its three API names is absent from the trace.
//   - GPU events are Kineto kernel, gpu_memcpy, gpu_memset and cuda_sync events with a stream;
//     HTA takes any event whose args.stream is not −1, so an Inductor cpu_op carrying
//     "stream": 0 counts as a GPU kernel there (a100-triton-compiled). A host API's "stream"
//     arg ("0x0" in HIP) is a host event in both (HTA coerces it to −1).
//   - HTA's last-step filter keeps only GPU events with stream > 0 (trace_filter.py
//     GPUKernelFilter), so on ROCm, where work runs on stream 0, it drops every GPU op and its
//     breakdowns fail (mi250-rocm); pel keeps the ops of any stream whose launch survives.
//     GPU events without a correlation id (none in the fixtures) are joined by HTA on −1
//     against every host event, which duplicates them; pel keeps each once if it starts
//     before the last step.
//   - KeepLastStep keeps host events that start before the last step ends. HTA's
//     include_last_profiler_step=True compares aligned start times with the unaligned end of
//     the last step and so keeps every host event; the figures agree on every fixture.
//   - top_kernels lists the 10 kernels with the most total time across types and leaves
//     cuda_sync records out; HTA's kernel breakdown lists them as computation kernels and
//     folds the tail per type into "others". Per-kernel count/sum/min/max/mean agree.
//   - where HTA sorts rows with equal timestamps (an unstable quicksort, so the order may
//     vary between runs and machines), pel keeps file order, launch before start for queue
//     length; only queue-length means on traces with tied timestamps can be affected.
//   - where HTA raises (no GPU events in get_temporal_breakdown), pel reports null.
//   - communication kernels are names containing "ncclKernel" (HTA) or "ncclDevKernel"
//     (NCCL ≥ 2.19 naming, which HTA would count as computation; no fixture has one).
//   - figures are per rank (HTA's kernel-type percentages pool all ranks of a Trace).
//
// Percentages are rounded as numpy rounds (half to even), as HTA's are.
//
// As in HTA, GPU-side synchronization records (Kineto cat "cuda_sync", CUPTI
// SYNCHRONIZATION rows: Stream Sync, Stream Wait Event, Context Sync on "stream" 4294967295)
// count as GPU events of their stream in the temporal and idle breakdowns.
package trace
