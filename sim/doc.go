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
//     bytes/bandwidth) at achieved fractions of the datasheet, plus per-sequence attention and
//     per-step device overhead) laid on a launch timeline (per kernel eager, per graph with
//     CUDA graphs), plus tensor-parallel all-reduces, the host loop's CPU time (serial or
//     overlapped) and cold-start compiles. Its software constants are calibrated against
//     published vLLM measurements (calibration.go replays them; BENCHMARKS.md has the table).
//   - engine.go, kv.go: the step-driven scheduler on a virtual clock: waiting queue, token
//     budget, chunked prefill, paged KV blocks with a prefix cache, preemption by recompute,
//     speculative decoding, and the frontend that streams each step's tokens (clients see them
//     when it is done). Unit tests drive Step directly, so no test depends on wall time.
//   - server.go, openai.go, tokens.go, metrics.go, dcgm.go, trace.go, otlp.go: the real-time
//     driver, the OpenAI-compatible HTTP API (with an approximate word tokenizer), vLLM-named
//     Prometheus metrics, a DCGM-exporter-shaped page, a Kineto (PyTorch profiler) trace of a
//     window of the virtual GPU, and vLLM-shaped llm_request spans over OTLP/HTTP.
//   - scenario.go and scenarios/: the shipped faults, each with its owner layer, the
//     evidence it needs and the workload contract that exposes it.
//
// Time: the engine runs on a virtual clock. Options.Speed maps it to the wall clock and
// everything an observer sees is expressed in observed (wall) seconds: response timing,
// histogram observations (virtual / speed), DCGM rates and trace timestamps. A run at speed 10
// looks exactly like a GPU ten times faster. pel_sim_step_lag_seconds says how far the real-time
// loop falls behind that schedule, so "the simulator is overloaded" is never mistaken for a fault.
package sim
