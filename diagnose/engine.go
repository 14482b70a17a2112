package diagnose

import (
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// knobs names a change in the detected engine's own terms, so a prediction or a next probe
// never asks a llama.cpp user for a vLLM flag. Sources: vLLM engine arguments
// (docs.vllm.ai/en/stable/configuration/engine_args), SGLang server arguments
// (docs.sglang.ai/backend/server_arguments), TGI launcher arguments
// (huggingface.co/docs/text-generation-inference/reference/launcher), llama.cpp
// tools/server/README.md (b4750: examples/server/README.md).
type knobs struct {
	name string // the engine as a reader knows it
	// seqs raises or caps the number of sequences decoded together.
	seqs string
	// context gives each sequence more context (or fewer sequences the same memory).
	context string
	// chunk splits long prefills over several steps.
	chunk string
	// spec turns speculative decoding off or down.
	spec string
	// kvmem gives the KV cache more memory.
	kvmem string
	// queue, kv, prefill: the engine's own counters to watch for each.
	queue, kv, prefill string
	// cpu is true for an engine that commonly serves from the CPU, where device counters
	// and CUDA traces may not exist.
	cpu bool
}

func knobsFor(engine string) knobs {
	switch strings.ToLower(engine) {
	case "vllm", "sim":
		return knobs{name: "vLLM", seqs: "--max-num-seqs", kvmem: "a larger share of GPU memory for the cache, or --kv-cache-dtype fp8", context: "--max-model-len (or more KV memory: a larger share of GPU memory reserved for the cache)",
			chunk: "--enable-chunked-prefill with --long-prefill-token-threshold (a per-step cap on each long prompt, e.g. a quarter of --max-num-batched-tokens)", spec: "--speculative-config (off, or fewer num_speculative_tokens)",
			queue: "vllm:num_requests_waiting and vllm:request_queue_time_seconds", kv: "vllm:kv_cache_usage_perc and vllm:num_preemptions_total",
			prefill: "vllm:request_prefill_time_seconds"}
	case "sglang":
		return knobs{name: "SGLang", seqs: "--max-running-requests", kvmem: "a larger --mem-fraction-static", context: "--context-length (and --mem-fraction-static)",
			chunk: "a lower --chunked-prefill-size", spec: "--speculative-algorithm off, or fewer --speculative-num-draft-tokens",
			queue: "sglang:num_queue_reqs", kv: "sglang:token_usage and sglang:num_retracted_requests_total", prefill: "sglang:time_to_first_token_seconds"}
	case "tgi":
		return knobs{name: "TGI", seqs: "--max-concurrent-requests and --max-batch-total-tokens", kvmem: "a larger --max-batch-total-tokens on a larger device", context: "--max-input-tokens/--max-total-tokens",
			chunk: "a lower --max-batch-prefill-tokens", spec: "--speculate 0",
			queue: "tgi_queue_size and tgi_request_queue_duration", kv: "tgi_batch_current_size", prefill: "tgi_request_inference_duration"}
	case "llamacpp":
		return knobs{name: "llama.cpp", seqs: "-np (parallel slots; raise -c with it so each slot keeps its context)", kvmem: "a larger -c, or a quantized KV cache (-ctk/-ctv q8_0)",
			context: "-c (the total context, split evenly over the -np slots) or fewer -np slots",
			chunk:   "a smaller -b/-ub (logical/physical batch size: a prompt is processed in batches of that many tokens)",
			spec:    "no draft model (drop -md), or a smaller --draft-max",
			queue:   "llamacpp:requests_deferred and llamacpp:requests_processing", kv: "the per-slot context (llamacpp:n_tokens_max, /slots)",
			prefill: "the per-request timings.prompt_ms", cpu: true}
	case "triton", "trtllm-serve":
		return knobs{name: "TensorRT-LLM", seqs: "max_batch_size (engine build) / --max_batch_size", kvmem: "a larger kv_cache_free_gpu_mem_fraction", context: "max_seq_len / max_input_len",
			chunk: "enable_chunked_context", spec: "the speculative decoding mode of the engine build",
			queue: "nv_trt_llm_request_metrics{request_type=\"waiting\"}", kv: "nv_trt_llm_kv_cache_block_metrics", prefill: "nv_inference_first_response_histogram_ms"}
	}
	return knobs{name: "the engine", seqs: "the engine's limit on concurrent sequences", kvmem: "more memory for the KV cache", context: "the engine's per-sequence context length",
		chunk: "chunked prefill (or a smaller prefill token budget)", spec: "speculative decoding off",
		queue: "the engine's waiting-request gauge", kv: "the engine's KV-cache usage", prefill: "the engine's prefill time"}
}

// phraseMissing rewrites a missing-source note for the engine: a CPU-serving engine is not
// asked for DCGM or a CUDA trace without saying they apply only on a GPU, with the CPU
// equivalent next to them.
func phraseMissing(engine, s string) string {
	if !knobsFor(engine).cpu {
		return s
	}
	switch {
	case strings.HasPrefix(s, "DCGM"):
		return "if the engine runs on an NVIDIA GPU, " + s + "; on a CPU, the server's per-thread CPU time (perf stat -p PID, top -H) tells compute-bound from threads waiting"
	case strings.HasPrefix(s, "a profiler trace"):
		return "if the engine runs on a GPU, " + s + "; on a CPU, perf record -g -p PID of the server shows where a step's time goes"
	}
	return s
}

// change names an action in the engine's own terms, with the engine_config key that shows it
// was made where the engine exposes one.
func change(engine string, a evidence.Action) evidence.Change {
	k := knobsFor(engine)
	c := evidence.Change{Action: a}
	switch a {
	case evidence.ActRaiseSeqs:
		c.Knob = "raising " + k.seqs
		if k.name == "llama.cpp" {
			c.Config = "slots"
		}
	case evidence.ActCapSeqs:
		c.Knob = "capping concurrent sequences (" + k.seqs + ")"
		if k.name == "llama.cpp" {
			c.Config = "slots"
		}
	case evidence.ActMoreKV:
		c.Knob = "giving the KV cache more memory (" + k.kvmem + ")"
	case evidence.ActMoreContext:
		c.Knob = "giving every sequence room for the longest prompt plus max_tokens (" + k.context + ")"
		if k.name == "llama.cpp" {
			c.Config = "slot_context"
		}
	case evidence.ActChunkPrefill:
		c.Knob = k.chunk
	case evidence.ActCUDAGraphs:
		c.Knob = "capturing decode in CUDA graphs (or fixing the capture fallback)"
	case evidence.ActAsyncScheduling:
		c.Knob = "overlapping scheduling with execution (async scheduling, or a faster host loop)"
	case evidence.ActFewerBytes:
		c.Knob = "halving the bytes per step (FP8/INT8 weights or KV cache)"
	case evidence.ActHalveTP:
		c.Knob = "halving the tensor-parallel degree (serving the freed GPUs as replicas)"
	case evidence.ActBalanceRouting:
		c.Knob = "least-loaded routing across replicas"
	case evidence.ActNoSpeculation:
		c.Knob = "turning speculation off (" + k.spec + ")"
	case evidence.ActNoProxyBuffering:
		c.Knob = "turning off response buffering on the way (proxy buffering, stream interval 1)"
	case evidence.ActPrewarm:
		c.Knob = "running the warm-up before admitting traffic (warm-up requests, cached compile artifacts)"
	case evidence.ActShorterPrompts:
		c.Knob = "halving the prompts (or a faster prefill: FlashAttention, lower-precision GEMMs, a larger device)"
	case evidence.ActFixErrors:
		c.Knob = "fixing the cause the errors name"
	case evidence.ActLessLoad:
		c.Knob = "offering less load"
	}
	return c
}

// expect builds one expectation; its unit comes from the signal when the view has it.
func (v *view) expect(sig, op string, bound float64, relative bool) evidence.Expectation {
	e := evidence.Expectation{Signal: sig, Op: op, Bound: bound, Relative: relative}
	if s, ok := v.sig[sig]; ok && !relative {
		e.Unit = s.Unit
	}
	return e
}

// rateGone expects a rate that is only reported when non-zero to fall to 0.
func rateGone(sig string) evidence.Expectation {
	return evidence.Expectation{Signal: sig, Op: "<=", Bound: 0, AbsentIsZero: true}
}
