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
// DIFFERENCES from HTA (all deliberate, all documented where computed):
//   - launch delay is GPU start − end of the launching call, as HTA documents it; HTA's code
//     computes gpu_ts − cpu_ts + cpu_dur (an operator-precedence slip).
//   - launch statistics include every kernel-launch API (cuLaunchKernel for Triton, hip* for
//     ROCm, cudaLaunchKernelExC) besides HTA's cudaLaunchKernel/cudaMemcpyAsync/
//     cudaMemsetAsync; on traces that only use those three the figures are identical.
//   - communication kernels are names containing "ncclKernel" (HTA) or "ncclDevKernel"
//     (NCCL ≥ 2.19 naming, which HTA would count as computation).
//   - a host API's "stream" arg (HIP writes "0x0") never makes it a GPU event.
//   - kernel-type times are per rank, with memory kernels included.
//
// As in HTA, GPU-side synchronization records (Kineto cat "cuda_sync", CUPTI
// SYNCHRONIZATION rows: Stream Sync, Stream Wait Event, Context Sync on "stream" 4294967295)
// count as GPU events of their stream in the temporal and idle breakdowns.
package trace
