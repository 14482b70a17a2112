package engine

// What the quantities mean per engine (not only their names):
//   - vLLM V1: num_requests_running is the requests in the scheduler's running set (decoding
//     or prefilling this step); num_requests_waiting the waiting queue, preempted requests
//     included; kv_cache_usage_perc the share of KV blocks in use (1 = full, when preemption
//     by recompute starts); request_queue_time_seconds the time a request spent WAITING before
//     its first schedule, request_prefill_time_seconds from first schedule to first token,
//     request_decode_time_seconds from first to last token: the engine core's own
//     timestamps. The engine's TTFT and E2E run from the request's arrival at the API server
//     to the API server's handling of the first (last) output (vllm/v1/metrics/stats.py,
//     IterationStats), so client TTFT − engine TTFT is the HTTP path, and engine E2E − queue
//     − prefill − decode the API server's own time. The API server runs apart from the
//     engine core (AsyncLLM over EngineCoreClient; --api-server-count more of them):
//     detokenizing and streaming cost the frontend, not the core's steps.
//   - SGLang: num_queue_reqs is the waiting queue; token_usage the share of the KV token pool
//     in use; num_retracted_requests_total its preemption (requests pushed back to the queue
//     when the pool runs out). Its tokenizer manager and detokenizer run as processes apart
//     from the scheduler.
//   - TGI: tgi_queue_size the waiting queue; tgi_batch_current_size the running batch; no KV
//     usage is exposed (TGI admits by token budget: --max-batch-total-tokens).
//   - llama.cpp: continuous batching over -np slots, no preemption, one process.
//
// Sources (cite in reviews): vLLM V1 names from vllm/v1/metrics/loggers.py
// (PrometheusStatLogger) and vllm/v1/spec_decode/metrics.py (SpecDecodingProm);
// prometheus_client appends "_total" to counters on exposition. vLLM engine arguments
// (docs.vllm.ai/en/stable/configuration/engine_args). SGLang names from
// python/sglang/srt/metrics/collector.py and its server arguments
// (docs.sglang.ai/backend/server_arguments). TGI names from its
// docs/source/reference/metrics.md and launcher arguments
// (huggingface.co/docs/text-generation-inference/reference/launcher). Triton/TRT-LLM from
// triton-inference-server/tensorrtllm_backend README "Triton Metrics". llama.cpp from
// tools/server (llamacpp: prefix; b4750: examples/server) and its README.

// Profiles is the table, in detection's order of preference.
var Profiles = []*Profile{
	{
		Name: "vllm", Title: "vLLM", Aliases: []string{"sim", "vllm-v1", "vllm-v0"}, Replica: []string{"engine"}, Prefixes: []string{"vllm:"},
		Processes: "two", QueuesWhenFull: true,
		Metrics: []Metric{
			{Q: QWaiting, Kind: Gauge, Families: []string{"vllm:num_requests_waiting"}},
			{Q: QRunning, Kind: Gauge, Families: []string{"vllm:num_requests_running"}},
			// "perc" is a misnomer: vLLM documents 1 = 100 %. kv_cache_usage_perc (≥0.9)
			// replaces gpu_cache_usage_perc; both are exposed for a while: prefer the new.
			{Q: QKVUsage, Kind: Gauge, Ratio: true, Families: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
			{Q: QPreemptions, Kind: Counter, Families: []string{"vllm:num_preemptions_total"}},
			{Q: QPrefixQueries, Kind: Counter, Families: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}},
			{Q: QPrefixHits, Kind: Counter, Families: []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}},
			{Q: QPrefixHitGauge, Kind: Gauge, Ratio: true, Families: []string{"vllm:gpu_prefix_cache_hit_rate"}},
			{Q: QPromptTokens, Kind: Counter, Families: []string{"vllm:prompt_tokens_total"}},
			{Q: QGenTokens, Kind: Counter, Families: []string{"vllm:generation_tokens_total"}},
			{Q: QTTFT, Kind: Hist, Families: []string{"vllm:time_to_first_token_seconds"}},
			{Q: QITL, Kind: Hist, Families: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
			{Q: QE2E, Kind: Hist, Families: []string{"vllm:e2e_request_latency_seconds"}},
			{Q: QQueue, Kind: Hist, Families: []string{"vllm:request_queue_time_seconds"}},
			{Q: QPrefill, Kind: Hist, Families: []string{"vllm:request_prefill_time_seconds"}},
			{Q: QDecode, Kind: Hist, Families: []string{"vllm:request_decode_time_seconds"}},
			{Q: QIterTokens, Kind: Hist, Families: []string{"vllm:iteration_tokens_total"}},
			{Q: QSpecDrafts, Kind: Counter, Families: []string{"vllm:spec_decode_num_drafts_total"}},
			{Q: QSpecDraftTok, Kind: Counter, Families: []string{"vllm:spec_decode_num_draft_tokens_total"}},
			{Q: QSpecAccepted, Kind: Counter, Families: []string{"vllm:spec_decode_num_accepted_tokens_total"}},
			// pel sim's own health next to its vLLM names (not vLLM metrics): how far its
			// real-time step loop ran behind schedule, and the schedule it dropped, so a run
			// can tell "the simulator was overloaded" from the scenario's fault.
			{Q: QStepLag, Kind: Gauge, Families: []string{"pel_sim_step_lag_seconds"}},
			{Q: QClockSkipped, Kind: Counter, Families: []string{"pel_sim_clock_skipped_seconds_total"}},
		},
		Knobs: Knobs{Seqs: "--max-num-seqs", KVMem: "a larger --gpu-memory-utilization for the cache, or --kv-cache-dtype fp8",
			Context:  "--max-model-len (or more KV memory: a larger --gpu-memory-utilization)",
			Chunk:    "--enable-chunked-prefill with --long-prefill-token-threshold (a per-step cap on each long prompt, e.g. a quarter of --max-num-batched-tokens)",
			ChunkCap: "--long-prefill-token-threshold (a per-step cap on each long prompt) or a smaller --max-num-batched-tokens",
			Spec:     "--speculative-config (off, or fewer num_speculative_tokens)",
			Queue:    "vllm:num_requests_waiting and vllm:request_queue_time_seconds", KV: "vllm:kv_cache_usage_perc and vllm:num_preemptions_total",
			Prefill: "vllm:request_prefill_time_seconds"},
	},
	{
		Name: "sglang", Title: "SGLang", Replica: []string{"dp_rank", "engine"}, Prefixes: []string{"sglang:"}, Processes: "two", QueuesWhenFull: true,
		Metrics: []Metric{
			{Q: QWaiting, Kind: Gauge, Families: []string{"sglang:num_queue_reqs", "sglang:num_requests_waiting", "sglang:queue_req"}},
			{Q: QRunning, Kind: Gauge, Families: []string{"sglang:num_running_reqs", "sglang:num_requests_running"}},
			{Q: QKVUsage, Kind: Gauge, Ratio: true, Families: []string{"sglang:token_usage"}},
			// SGLang "retracts" running requests when the KV pool runs out: its preemption.
			{Q: QPreemptions, Kind: Counter, Families: []string{"sglang:num_retracted_requests_total"}},
			{Q: QPrefixHitGauge, Kind: Gauge, Ratio: true, Families: []string{"sglang:cache_hit_rate"}},
			{Q: QPromptTokens, Kind: Counter, Families: []string{"sglang:prompt_tokens_total"}},
			{Q: QGenTokens, Kind: Counter, Families: []string{"sglang:generation_tokens_total"}},
			{Q: QTTFT, Kind: Hist, Families: []string{"sglang:time_to_first_token_seconds"}},
			{Q: QITL, Kind: Hist, Families: []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
			{Q: QE2E, Kind: Hist, Families: []string{"sglang:e2e_request_latency_seconds"}},
			{Q: QQueue, Kind: Hist, Families: []string{"sglang:queue_time_seconds", "sglang:waiting_request_latency_seconds"}},
			{Q: QSpecRateGauge, Kind: Gauge, Ratio: true, Families: []string{"sglang:spec_accept_rate"}},
			{Q: QSpecLenGauge, Kind: Gauge, Ratio: true, Families: []string{"sglang:spec_accept_length"}},
		},
		Knobs: Knobs{Seqs: "--max-running-requests", KVMem: "a larger --mem-fraction-static (or --kv-cache-dtype fp8_e5m2)", Context: "--context-length (and --mem-fraction-static)",
			Chunk: "a lower --chunked-prefill-size", ChunkCap: "a lower --chunked-prefill-size",
			Spec:  "--speculative-algorithm off, or fewer --speculative-num-draft-tokens",
			Queue: "sglang:num_queue_reqs", KV: "sglang:token_usage and sglang:num_retracted_requests_total", Prefill: "sglang:time_to_first_token_seconds"},
	},
	{
		Name: "tgi", Title: "TGI", Aliases: []string{"text-generation-inference"}, Prefixes: []string{"tgi_"}, Processes: "two",
		Metrics: []Metric{
			{Q: QWaiting, Kind: Gauge, Families: []string{"tgi_queue_size"}},
			{Q: QRunning, Kind: Gauge, Families: []string{"tgi_batch_current_size"}},
			{Q: QPromptTokens, Kind: Counter, Families: []string{"tgi_request_input_length_sum"}},
			{Q: QGenTokens, Kind: Counter, Families: []string{"tgi_request_generated_tokens_sum"}},
			// TGI has no TTFT histogram; its per-request mean time per token stands in for ITL.
			{Q: QITL, Kind: Hist, Families: []string{"tgi_request_mean_time_per_token_duration"}},
			{Q: QE2E, Kind: Hist, Families: []string{"tgi_request_duration"}},
			{Q: QQueue, Kind: Hist, Families: []string{"tgi_request_queue_duration"}},
		},
		Knobs: Knobs{Seqs: "--max-concurrent-requests and --max-batch-total-tokens", KVMem: "a larger --max-batch-total-tokens on a larger device", Context: "--max-input-tokens/--max-total-tokens",
			Chunk: "a lower --max-batch-prefill-tokens", ChunkCap: "a lower --max-batch-prefill-tokens", Spec: "--speculate 0",
			Queue: "tgi_queue_size and tgi_request_queue_duration", KV: "tgi_batch_current_size", Prefill: "tgi_request_inference_duration"},
	},
	{
		Name: "triton", Title: "TensorRT-LLM (Triton)", Aliases: []string{"tensorrtllm_backend", "triton-trtllm"}, Replica: []string{"gpu_uuid"},
		Prefixes: []string{"nv_trt_llm_", "nv_inference_"},
		Metrics: []Metric{
			{Q: QWaiting, Kind: Gauge, Families: []string{"nv_trt_llm_request_metrics"}, Match: map[string]string{"request_type": "waiting"}},
			// Triton without the TRT-LLM backend: requests queued per model.
			{Q: QWaiting, Kind: Gauge, Families: []string{"nv_inference_pending_request_count"}},
			{Q: QRunning, Kind: Gauge, Families: []string{"nv_trt_llm_request_metrics"}, Match: map[string]string{"request_type": "active"}},
			{Q: QKVUsage, Kind: Gauge, Ratio: true, Families: []string{"nv_trt_llm_kv_cache_block_metrics"}, Match: map[string]string{"kv_cache_block_type": "fraction"}},
			{Q: QTTFT, Kind: Hist, Scale: 1e-3, Families: []string{"nv_inference_first_response_histogram_ms"}},
		},
		Knobs: trtKnobs,
	},
	{
		// trtllm-serve (TensorRT-LLM's OpenAI server) exposes vLLM-like names without a prefix.
		Name: "trtllm-serve", Title: "TensorRT-LLM (trtllm-serve)", Aliases: []string{"tensorrt-llm", "trtllm"}, Prefixes: []string{"trtllm_"},
		Metrics: []Metric{
			{Q: QTTFT, Kind: Hist, Families: []string{"time_to_first_token_seconds", "trtllm_time_to_first_token_seconds"}},
			{Q: QITL, Kind: Hist, Families: []string{"time_per_output_token_seconds", "trtllm_time_per_output_token_seconds"}},
			{Q: QE2E, Kind: Hist, Families: []string{"e2e_request_latency_seconds", "trtllm_e2e_request_latency_seconds"}},
			{Q: QQueue, Kind: Hist, Families: []string{"request_queue_time_seconds", "trtllm_request_queue_time_seconds"}},
		},
		Knobs: trtKnobs,
	},
	{
		// llama.cpp (examples/server/server.cpp at b4750; tools/server/server-context.cpp in
		// 2026): continuous batching over -np slots, no preemption. requests_deferred counts
		// tasks that found no free slot (requests still waiting for an HTTP worker thread are
		// not counted anywhere); requests_processing, slots busy. prompt_seconds_total and
		// tokens_predicted_seconds_total add up each request's own processing time (ms
		// precision, counted when its prompt, resp. its generation, ends), so their rate is
		// the mean number of requests in service: Little's law, exact between scrapes, where
		// the gauges are samples. n_tokens_max is the largest context any slot has held since
		// start (current releases; compare with the per-slot context -c/-np). 2026 releases
		// dropped kv_cache_usage_ratio and added the spec_decode_* counters.
		Name: "llamacpp", Title: "llama.cpp", Aliases: []string{"llama.cpp", "llama-cpp"}, Prefixes: []string{"llamacpp:"},
		CPU: true, SlotCache: true, ClosesStreams: true, Processes: "one", QueuesWhenFull: true,
		Metrics: []Metric{
			{Q: QWaiting, Kind: Gauge, Families: []string{"llamacpp:requests_deferred"}},
			{Q: QRunning, Kind: Gauge, Families: []string{"llamacpp:requests_processing"}},
			{Q: QKVUsage, Kind: Gauge, Ratio: true, Families: []string{"llamacpp:kv_cache_usage_ratio"}},
			{Q: QPromptTokens, Kind: Counter, Families: []string{"llamacpp:prompt_tokens_total"}},
			{Q: QGenTokens, Kind: Counter, Families: []string{"llamacpp:tokens_predicted_total"}},
			{Q: QServiceSeconds, Kind: Counter, All: true, Families: []string{"llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total"}},
			{Q: QSteps, Kind: Counter, Families: []string{"llamacpp:n_decode_total"}},
			{Q: QTokensMax, Kind: Gauge, Families: []string{"llamacpp:n_tokens_max"}},
			{Q: QSpecDrafts, Kind: Counter, Families: []string{"llamacpp:spec_decode_num_drafts_total"}},
			{Q: QSpecDraftTok, Kind: Counter, Families: []string{"llamacpp:spec_decode_num_draft_tokens_total"}},
			{Q: QSpecAccepted, Kind: Counter, Families: []string{"llamacpp:spec_decode_num_accepted_tokens_total"}},
		},
		Knobs: Knobs{Seqs: "-np (parallel slots; raise -c with it so each slot keeps its context)", KVMem: "a larger -c, or a quantized KV cache (-ctk/-ctv q8_0)",
			Context:  "-c (the total context, split evenly over the -np slots) or fewer -np slots",
			Chunk:    "a smaller -b/-ub (logical/physical batch size: a prompt is processed in batches of that many tokens)",
			ChunkCap: "a smaller -b/-ub (logical/physical batch size)",
			Spec:     "no draft model (drop -md), or a smaller --draft-max",
			Queue:    "llamacpp:requests_deferred and llamacpp:requests_processing", KV: "the per-slot context (llamacpp:n_tokens_max, /slots)",
			Prefill: "the per-request timings.prompt_ms", SeqsConfig: "slots", ContextConfig: "slot_context"},
	},
}

// trtKnobs are TensorRT-LLM's, under Triton or trtllm-serve.
var trtKnobs = Knobs{Seqs: "max_batch_size (engine build) / --max_batch_size", KVMem: "a larger kv_cache_free_gpu_mem_fraction", Context: "max_seq_len / max_input_len",
	Chunk: "enable_chunked_context", ChunkCap: "a smaller max_num_tokens (the per-step token budget)", Spec: "the speculative decoding mode of the engine build",
	Queue: "nv_trt_llm_request_metrics{request_type=\"waiting\"}", KV: "nv_trt_llm_kv_cache_block_metrics", Prefill: "nv_inference_first_response_histogram_ms"}
