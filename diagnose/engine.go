package diagnose

import (
	"strings"
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
	// queue, kv, prefill: the engine's own counters to watch for each.
	queue, kv, prefill string
	// cpu is true for an engine that commonly serves from the CPU, where device counters
	// and CUDA traces may not exist.
	cpu bool
}

func knobsFor(engine string) knobs {
	switch strings.ToLower(engine) {
	case "vllm", "sim":
		return knobs{name: "vLLM", seqs: "--max-num-seqs", context: "--max-model-len (or more KV memory: a larger share of GPU memory reserved for the cache)",
			chunk: "--enable-chunked-prefill with a lower --max-num-batched-tokens", spec: "--speculative-config (off, or fewer num_speculative_tokens)",
			queue: "vllm:num_requests_waiting and vllm:request_queue_time_seconds", kv: "vllm:kv_cache_usage_perc and vllm:num_preemptions_total",
			prefill: "vllm:request_prefill_time_seconds"}
	case "sglang":
		return knobs{name: "SGLang", seqs: "--max-running-requests", context: "--context-length (and --mem-fraction-static)",
			chunk: "a lower --chunked-prefill-size", spec: "--speculative-algorithm off, or fewer --speculative-num-draft-tokens",
			queue: "sglang:num_queue_reqs", kv: "sglang:token_usage and sglang:num_retracted_requests_total", prefill: "sglang:time_to_first_token_seconds"}
	case "tgi":
		return knobs{name: "TGI", seqs: "--max-concurrent-requests and --max-batch-total-tokens", context: "--max-input-tokens/--max-total-tokens",
			chunk: "a lower --max-batch-prefill-tokens", spec: "--speculate 0",
			queue: "tgi_queue_size and tgi_request_queue_duration", kv: "tgi_batch_current_size", prefill: "tgi_request_inference_duration"}
	case "llamacpp":
		return knobs{name: "llama.cpp", seqs: "-np (parallel slots; raise -c with it so each slot keeps its context)",
			context: "-c (the total context, split evenly over the -np slots) or fewer -np slots",
			chunk:   "a smaller -b/-ub (logical/physical batch size: a prompt is processed in batches of that many tokens)",
			spec:    "no draft model (drop -md), or a smaller --draft-max",
			queue:   "llamacpp:requests_deferred and llamacpp:requests_processing", kv: "the per-slot context (llamacpp:n_tokens_max, /slots)",
			prefill: "the per-request timings.prompt_ms", cpu: true}
	case "triton", "trtllm-serve":
		return knobs{name: "TensorRT-LLM", seqs: "max_batch_size (engine build) / --max_batch_size", context: "max_seq_len / max_input_len",
			chunk: "enable_chunked_context", spec: "the speculative decoding mode of the engine build",
			queue: "nv_trt_llm_request_metrics{request_type=\"waiting\"}", kv: "nv_trt_llm_kv_cache_block_metrics", prefill: "nv_inference_first_response_histogram_ms"}
	}
	return knobs{name: "the engine", seqs: "the engine's limit on concurrent sequences", context: "the engine's per-sequence context length",
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
