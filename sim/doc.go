// Package sim is pel's simulated LLM-serving engine: a faithful, explainable model of a
// continuous-batching server (vLLM V1 is the reference) that speaks the real wire formats.
//
// It exists so the whole evidence ladder can run, be learnt and be tested without a GPU, and so
// every diagnosis rule has a ground truth: each shipped scenario (sim/scenarios/*.yaml) injects
// one fault whose owner layer is known, and the diagnosis must name that layer from the outside
// (client records, /metrics, a DCGM-exporter page and a Kineto trace), never from sim internals.
//
// The pieces, from the bottom up:
//   - catalog.go: GPUs and models with published figures (bandwidth, FLOP/s, shapes).
//   - cost.go: the per-step cost model, a roofline per kernel (time = max(FLOPs/peak,
//     bytes/bandwidth)) laid on a launch timeline (per kernel eager, per graph with CUDA
//     graphs), plus tensor-parallel all-reduces, scheduler CPU time and cold-start compiles.
//   - engine.go, kv.go: the step-driven scheduler on a virtual clock: waiting queue, token
//     budget, chunked prefill, paged KV blocks with a prefix cache, preemption by recompute,
//     speculative decoding. Unit tests drive Step directly, so no test depends on wall time.
//   - server.go, openai.go, metrics.go, dcgm.go, trace.go: the real-time driver (with a
//     --speed factor that compresses virtual time consistently everywhere), the
//     OpenAI-compatible HTTP API, vLLM-named Prometheus metrics, a DCGM-exporter-shaped page
//     and a Kineto (PyTorch profiler) trace of a window of the virtual GPU.
package sim
