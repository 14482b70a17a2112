package evidence

// The normalized signal vocabulary. Producers emit these names with these units; the
// diagnosis reads only these. A signal may carry Labels (task, engine, gpu, stream, rank) and
// a Phase; the unlabelled, phase-"warm" value is the headline one. Add names here, never
// inline strings elsewhere.
//
// Units: "ms", "us", "s", "ratio" (0..1), "pct" (0..100), "1/s", "tokens", "tokens/s",
// "count", "bytes", "bytes/s", "MiB".
const (
	// Stage 1: client request trace (source "client").
	SigTTFTP50          = "client.ttft_p50_ms"
	SigTTFTP95          = "client.ttft_p95_ms"
	SigTTFTP99          = "client.ttft_p99_ms"
	SigTTFTFromSentP50  = "client.ttft_from_sent_p50_ms"
	SigITLP50           = "client.itl_p50_ms"
	SigITLP99           = "client.itl_p99_ms"
	SigTPOTP50          = "client.tpot_p50_ms"
	SigE2EP50           = "client.e2e_p50_ms"
	SigE2EP99           = "client.e2e_p99_ms"
	SigHeadersP50       = "client.time_to_headers_p50_ms" // send → response headers
	SigScheduleLagP99   = "client.schedule_lag_p99_ms"
	SigClientQueueP99   = "client.client_queue_p99_ms"
	SigTokensPerChunk   = "client.tokens_per_chunk_mean" // tokens per content SSE event
	SigChunkGapP50      = "client.chunk_gap_p50_ms"      // per SSE event, not per token
	SigAcceptanceRate   = "client.acceptance_rate"       // ratio
	SigErrorRate        = "client.error_rate"            // ratio
	SigRetryRate        = "client.retry_rate"            // ratio of tasks that needed >1 attempt
	SigGoodput          = "client.goodput_rps"           // accepted tasks / s
	SigThroughput       = "client.throughput_rps"        // completed tasks / s
	SigOutputTokensRate = "client.output_tokens_per_s"
	SigInFlightMean     = "client.in_flight_mean"
	SigSLOMissRate      = "client.slo_miss_rate" // ratio of completed tasks that missed a per-request SLO
	// Cold vs warm: ratio of cold-phase TTFT p50 to warm-phase TTFT p50.
	SigColdWarmTTFTRatio = "client.cold_warm_ttft_ratio"
	// Throughput-vs-concurrency: ratio of goodput gain to concurrency gain between the lowest
	// and highest band (1 = linear scaling, ~0 = flat), and the band where the knee sits.
	SigBandScaling = "client.band_scaling_ratio"
	SigKneeBand    = "client.knee_in_flight"
	// Short-prompt TTFT while a long prompt was in flight vs. not (ratio of p50s).
	SigHOLTTFTRatio = "client.hol_ttft_ratio"

	// Stage 4: serving scheduler & KV cache (source "<engine> /metrics").
	SigWaitingMean        = "engine.requests_waiting_mean"
	SigWaitingMax         = "engine.requests_waiting_max"
	SigRunningMean        = "engine.requests_running_mean"
	SigRunningMax         = "engine.requests_running_max"
	SigKVUsageMean        = "engine.kv_usage_mean" // ratio
	SigKVUsageMax         = "engine.kv_usage_max"  // ratio
	SigPreemptionRate     = "engine.preemptions_per_s"
	SigPreemptions        = "engine.preemptions" // count over the window
	SigPrefixHitRate      = "engine.prefix_cache_hit_rate"
	SigPromptTokensRate   = "engine.prompt_tokens_per_s"
	SigGenTokensRate      = "engine.generation_tokens_per_s"
	SigServerTTFTP50      = "engine.ttft_p50_ms" // from histogram deltas, bucket-interpolated
	SigServerTTFTP99      = "engine.ttft_p99_ms"
	SigServerITLP50       = "engine.itl_p50_ms"
	SigServerITLP99       = "engine.itl_p99_ms"
	SigServerE2EP50       = "engine.e2e_p50_ms"
	SigServerE2EP99       = "engine.e2e_p99_ms"
	SigServerQueueP50     = "engine.queue_p50_ms"
	SigServerQueueP99     = "engine.queue_p99_ms"
	SigServerPrefillP50   = "engine.prefill_p50_ms"
	SigServerPrefillP99   = "engine.prefill_p99_ms"
	SigServerDecodeP50    = "engine.decode_p50_ms"
	SigServerDecodeP99    = "engine.decode_p99_ms" // added by scrape
	SigIterationTokensAvg = "engine.iteration_tokens_mean"
	SigSpecAcceptanceRate = "engine.spec_acceptance_rate" // accepted / draft tokens
	SigSpecMeanAcceptLen  = "engine.spec_mean_accepted_len"
	SigEngineStepLagMs    = "engine.step_lag_ms" // pel sim only: its own loop falling behind
	SigScrapeGaps         = "engine.scrape_gaps" // failed or late samples over the window

	// Stage 4 from OTLP spans (source "otlp"): the engine's own per-request latencies
	// (vLLM llm_request span gen_ai.latency.* attributes), joined to client records by trace
	// id, so percentiles are exact, not bucket-interpolated.
	SigOTLPQueueP50     = "otlp.queue_p50_ms"
	SigOTLPQueueP99     = "otlp.queue_p99_ms"
	SigOTLPPrefillP50   = "otlp.prefill_p50_ms"
	SigOTLPPrefillP99   = "otlp.prefill_p99_ms"
	SigOTLPDecodeP50    = "otlp.decode_p50_ms"
	SigOTLPDecodeP99    = "otlp.decode_p99_ms"
	SigOTLPTTFTP50      = "otlp.ttft_p50_ms"
	SigOTLPTTFTP99      = "otlp.ttft_p99_ms"
	SigOTLPE2EP50       = "otlp.e2e_p50_ms"
	SigOTLPE2EP99       = "otlp.e2e_p99_ms"
	SigOTLPJoinCoverage = "otlp.join_coverage" // ratio of completed records with a span
	// Per request: client TTFT (from sent) − server TTFT. Large while server TTFT is fine
	// points at the application layer (HTTP, tokenization, proxy buffering, chunking).
	SigTTFTGapP50 = "otlp.client_server_ttft_gap_p50_ms"
	SigTTFTGapP99 = "otlp.client_server_ttft_gap_p99_ms"

	// Stage 4 time series (evidence.Series names, added by scrape): one point per sample.
	// Rates and DCGM ratios over time reuse their signal names (engine.preemptions_per_s,
	// engine.generation_tokens_per_s, gpu.*_ratio).
	SeriesWaiting = "engine.requests_waiting" // count
	SeriesRunning = "engine.requests_running" // count
	SeriesKVUsage = "engine.kv_usage"         // ratio

	// Stage 2: GPU execution & memory (source "dcgm", or a trace).
	SigGPUUtil       = "gpu.util_ratio" // DCGM_FI_DEV_GPU_UTIL / 100: "a kernel was running", not work done
	SigSMActive      = "gpu.sm_active_ratio"
	SigSMOccupancy   = "gpu.sm_occupancy_ratio"
	SigTensorActive  = "gpu.tensor_active_ratio"
	SigDRAMActive    = "gpu.dram_active_ratio"
	SigFBUsedMiB     = "gpu.fb_used_mib"
	SigNVLinkBytesPS = "gpu.nvlink_bytes_per_s"
	SigPCIeBytesPS   = "gpu.pcie_bytes_per_s"

	// Stages 2-3 from a profiler timeline (source "kineto:FILE" / "nsys:FILE").
	SigTraceIdlePct         = "trace.idle_pct"          // GPU idle share of kernel_time (stage 2)
	SigTraceComputePct      = "trace.compute_pct"       // stage 2
	SigTraceNonComputePct   = "trace.non_compute_pct"   // stage 2
	SigTraceHostWaitShare   = "trace.host_wait_share"   // of idle time (stage 2)
	SigTraceKernelWaitShare = "trace.kernel_wait_share" // of idle time (stage 2)
	// SigTraceHostAwayShare: of host_wait time, the share in gaps where the host had issued
	// no runtime call for over 100 µs before the next launch (stage 2).
	SigTraceHostAwayShare    = "trace.host_away_share"
	SigTraceSyncWaitPct      = "trace.sync_wait_pct" // of kernel_time (stage 2)
	SigTraceCommPct          = "trace.comm_pct"      // communication kernels, of kernel_time (stage 5)
	SigTraceCommOverlapPct   = "trace.comm_comp_overlap_pct"
	SigTraceShortKernelShare = "trace.short_kernel_share" // of launches (stage 3)
	SigTraceLaunchDelayP50   = "trace.launch_delay_p50_us"
	SigTraceKernelDurP50     = "trace.kernel_duration_p50_us"
	SigTraceGraphLaunchShare = "trace.graph_launch_share" // graph launches / (graph + kernel launches)
	SigTraceAttentionPct     = "trace.attention_pct"      // attention kernels, of kernel time
	SigTraceMemoryKernelPct  = "trace.memory_kernel_pct"
	SigTraceCompileRegions   = "trace.compile_regions"
	SigTraceStepP50Ms        = "trace.step_p50_ms"

	// Stage 5: distributed & capacity.
	SigReplicaImbalanceCV = "dist.replica_load_cv" // coefficient of variation of per-engine running requests
	SigEngines            = "dist.engines"         // distinct engine/replica label values seen
)
