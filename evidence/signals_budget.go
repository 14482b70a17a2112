package evidence

// Means of the engine's request-phase histograms (sum ÷ count deltas over the window), in
// ms: the time budget adds means, which quantiles do not allow. vLLM's phases (v1
// metrics): queue is WAITING (queued → first scheduled), prefill is first scheduled →
// first token, decode first → last token; TTFT is the engine's arrival → first token.
const (
	SigServerQueueMean   = "engine.queue_mean_ms"
	SigServerPrefillMean = "engine.prefill_mean_ms"
	SigServerDecodeMean  = "engine.decode_mean_ms"
	SigServerTTFTMean    = "engine.ttft_mean_ms"
	SigServerE2EMean     = "engine.e2e_mean_ms"
)

// Run.EngineConfig keys the system reports of itself (scrape, the engine probe) and the
// budget's floors and predictions read. A key that is absent was not reported.
const (
	ConfigGPUModel        = "gpu_model"       // DCGM modelName label
	ConfigGPUCount        = "gpu_count"       // distinct DCGM gpu labels
	ConfigKVDType         = "kv_cache_dtype"  // vllm:cache_config_info cache_dtype
	ConfigBlockSize       = "block_size"      // vllm:cache_config_info block_size
	ConfigPrefixCaching   = "prefix_caching"  // vllm:cache_config_info enable_prefix_caching
	ConfigNumGPUBlocks    = "num_gpu_blocks"  // vllm:cache_config_info num_gpu_blocks
	ConfigChunkedPrefill  = "chunked_prefill" // SGLang server info chunked_prefill_size > 0, or the engine's args
	ConfigMaxNumSeqs      = "max_num_seqs"    // vLLM --max-num-seqs, SGLang max_running_requests, llama.cpp slots
	ConfigMaxBatchedTok   = "max_batched_tokens"
	ConfigTensorParallel  = "tensor_parallel"
	ConfigPipelineParalel = "pipeline_parallel"
	ConfigSpeculative     = "speculative"
	ConfigModelParams     = "model_params" // llama.cpp /v1/models meta.n_params
)
