// Package timeline is the compact, source-neutral event model that both profiler readers
// (trace/kineto for PyTorch profiler Chrome-trace JSON, trace/nsys for Nsight Systems SQLite
// exports) fill, so that package trace writes each analysis once.
//
// It holds only what the analyses need: GPU operations (kernels, memcpy, memset, GPU-side
// synchronization) and host API calls that launch or wait for them, as fixed-size structs with
// interned names, plus step and compile-region spans. CPU operators and Python frames are
// counted, never stored, so memory grows with the number of GPU operations, not the file.
package timeline
