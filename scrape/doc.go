// Package scrape samples engine and GPU /metrics endpoints during a run, keeps every
// sample in DIR/metrics.jsonl, and turns the samples into pel's normalized signals:
// stage 4 (serving scheduler & KV cache, from the engine), stage 2 (GPU execution &
// memory, from dcgm-exporter) and stage 5 (how many engine replicas, how evenly loaded).
//
// # Sampling
//
// A Collector (NewCollector) samples any number of endpoints, each on its own goroutine,
// every Config.Interval (default 1 s). Start takes the first sample of every endpoint
// before it returns (so before the load starts); Stop takes the last one after the load.
// Each request is bounded by a timeout shorter than the interval, so a slow or dead
// endpoint loses its own samples and never stalls the load or the other endpoints. A
// failed request is still written (ok=false, with its error): gaps are evidence. Pages
// are parsed by prometheus/common/expfmt (text format, OpenMetrics by Content-Type,
// delimited protobuf), never by hand.
//
// With Config.Prometheus (+ Selector, label matchers such as job="vllm"), the same series
// are read after the run from a Prometheus server with query_range over the run window
// (step = Interval) and written as the same samples (origin "prometheus", endpoint
// "prom:<instance>"), so one analysis serves both paths. Error of that path: each
// query_range point is the newest raw sample at or before the step, so a value may be up
// to one Prometheus scrape interval old and each window edge may shift by that much —
// a counter's increase can differ by what happened in one scrape interval at each edge
// (relative rate error ≤ 2 × scrape interval / window), a gauge mean by its change over
// one scrape interval, and a quantile by as much as the latency distribution changes
// within one scrape interval (none when it is steady: same bucket, same value).
// test/prometheus checks this against a real Prometheus scraping a stand-in engine and
// pel sim. QueryRange makes the same read for any selector and window without a run: pel
// canary reads a production canary's two sides with it. Config.File names the samples file
// (an interleaved canary run samples its candidate into canary-metrics.jsonl).
//
// # metrics.jsonl
//
// One JSON object per line, appended and flushed as samples arrive (file mode 0600):
//
//	{"t":"2026-11-29T16:25:15.123Z",        // request time (Prometheus path: step time)
//	 "ep":"http://127.0.0.1:8000/metrics", // endpoint URL, or "prom:<instance>"
//	 "kind":"engine",                      // engine | dcgm
//	 "origin":"scrape",                    // scrape | prometheus
//	 "ok":true, "err":"...",               // err only when ok is false (a gap)
//	 "dur_ms":2.1,                         // request duration (scrape origin)
//	 "fam":[                               // parsed families, sorted by name
//	   {"n":"vllm:num_requests_waiting","y":"gauge",
//	    "m":[{"l":{"engine":"0","model_name":"m"},"v":3}]},
//	   {"n":"vllm:time_to_first_token_seconds","y":"histogram",
//	    "m":[{"l":{...},"le":[0.001,0.005,...],"b":[0,2,...],"c":12,"s":3.4}]}]}
//
// "y" is counter | gauge | histogram | gaugehistogram | summary | untyped. Scalars carry
// "v"; histograms "le" (finite upper bounds), "b" (cumulative counts per bound), "c"
// (count = the +Inf bucket) and "s" (sum); summaries "q"/"qv", "c", "s". NaN and ±Inf are
// written as the strings "NaN", "+Inf", "-Inf". Counters keep their exposed "_total" name
// whatever the format; flat X_bucket/X_count/X_sum series (no TYPE line, or Prometheus
// results) are regrouped into histogram X. A torn last line (a crash) is skipped on read.
// A line is at most MaxSampleLine (16 MiB) and holds a bounded number of JSON objects: a
// longer one is refused naming the file and line, before it is decoded; the Writer keeps a
// page that would not fit as a failed sample, so pel never writes what it cannot read.
//
// # Memory
//
// FillFromDir streams the file twice and holds no sample: the first pass reads only each
// line's time, endpoint, status and family names (the engine is detected from the names of
// the whole run), the second the values. What stays is bounded by the series and windows,
// never by the run's length: per window, a gauge's sum, count and max and the gap counts;
// per raw counter or histogram series, only the points next to a window's edge or middle
// (linear interpolation there is exact with them) and the last one; per chart, at most 600
// points. Past 600 samples a chart is downsampled: consecutive samples are taken in buckets
// of equal count (doubling as the buckets fill) and each bucket is drawn at its last sample's
// time with the mean of its values, and its min and max in the series (Series.Min/Max). Replicas of one
// endpoint past the first 16 are drawn as one line per quantity, labelled "other N": their
// max for a gauge, their sum for a rate. A one-hour, 3,000-series file (~450 MB) is read
// within pel's 512 MB bound (BENCHMARKS.md). Samples of one endpoint come in time order (one
// sampler writes them); an older one is left out, with a note.
//
// # Analysis
//
// FillSamples / FillFromFile / Collector.Fill compute, for every phase of
// ev.Run.Phases (seconds since ev.Run.StartedAt; the "warm" one is the headline) — or one
// window over all samples without phases:
//   - gauges (waiting, running, KV usage, DCGM ratios): mean and max of the samples in
//     the window;
//   - counters (tokens, preemptions, prefix-cache and spec-decode counts): increase over
//     the window from the reset-corrected series linearly interpolated at the window
//     edges; a decrease is a counter reset (engine restart) handled like Prometheus
//     rate(): the new value counts from 0; a series that appears mid-run was 0 before;
//   - histograms: per-bucket deltas over the window the same way, then quantiles by
//     linear interpolation inside the bucket, like Prometheus histogram_quantile (the
//     signal note names the bucket: the true quantile lies in it);
//   - gaps: failed samples, and attempts more than 1.5 intervals apart (the interval: the
//     median spacing of the first 65,536 attempts), in the window;
//   - pel sim only: engine.step_lag_ms, the largest pel_sim_step_lag_seconds any replica
//     showed in the window (its note adds pel_sim_clock_skipped_seconds_total's increase),
//     so a diagnosis can tell "the simulator was overloaded" from the scenario's fault.
//
// Series are kept per raw series (full label set) until resets are handled, then grouped
// per replica: the endpoint plus the engine's replica labels (vLLM "engine", SGLang
// "dp_rank", DCGM "gpu" + MIG "GPU_I_ID"). Replicas are combined meaningfully, never
// summed blindly: waiting/running/KV usage report the worst replica (and each replica,
// labelled engine=<id>, when there are several); token and preemption rates add up;
// hit and acceptance ratios are pooled (Σhits/Σqueries); latency quantiles come from the
// merged histogram deltas; DCGM activity ratios are averaged over GPUs (and given per
// GPU), FB used is the peak GPU, NVLink/PCIe bytes/s add up. dist.replica_load_cv is the
// coefficient of variation of the per-replica mean running requests. A "ratio" an
// engine reports as a percent (values above 1) is divided by 100, with a note.
// GPU_UTIL is reported as a ratio with a note naming the DCGM fields that explain it
// (SM active/occupancy, tensor, DRAM); without them the note says no conclusion is drawn.
//
// # Engines
//
// The engine is detected from the family names (most names with an engine's prefix;
// trtllm-serve by its unprefixed names); Config.EngineOverride (--engine) forces one.
// Normalized quantities and the families that carry them (units: seconds, ratios 0..1,
// MiB, bytes/s; scale factors shown as ×):
//
//	| engine | quantity | families (first present wins) |
//	|---|---|---|
//	| vllm | waiting | vllm:num_requests_waiting |
//	| vllm | running | vllm:num_requests_running |
//	| vllm | kv_usage | vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc |
//	| vllm | preemptions | vllm:num_preemptions_total |
//	| vllm | prefix_queries | vllm:prefix_cache_queries_total, vllm:gpu_prefix_cache_queries_total |
//	| vllm | prefix_hits | vllm:prefix_cache_hits_total, vllm:gpu_prefix_cache_hits_total |
//	| vllm | prefix_hit_rate | vllm:gpu_prefix_cache_hit_rate |
//	| vllm | prompt_tokens | vllm:prompt_tokens_total |
//	| vllm | gen_tokens | vllm:generation_tokens_total |
//	| vllm | ttft | vllm:time_to_first_token_seconds |
//	| vllm | itl | vllm:inter_token_latency_seconds, vllm:time_per_output_token_seconds |
//	| vllm | e2e | vllm:e2e_request_latency_seconds |
//	| vllm | queue | vllm:request_queue_time_seconds |
//	| vllm | prefill | vllm:request_prefill_time_seconds |
//	| vllm | decode | vllm:request_decode_time_seconds |
//	| vllm | iteration_tokens | vllm:iteration_tokens_total |
//	| vllm | spec_drafts | vllm:spec_decode_num_drafts_total |
//	| vllm | spec_draft_tokens | vllm:spec_decode_num_draft_tokens_total |
//	| vllm | spec_accepted_tokens | vllm:spec_decode_num_accepted_tokens_total |
//	| vllm | step_lag | pel_sim_step_lag_seconds |
//	| vllm | clock_skipped | pel_sim_clock_skipped_seconds_total |
//	| sglang | waiting | sglang:num_queue_reqs, sglang:num_requests_waiting, sglang:queue_req |
//	| sglang | running | sglang:num_running_reqs, sglang:num_requests_running |
//	| sglang | kv_usage | sglang:token_usage |
//	| sglang | preemptions | sglang:num_retracted_requests_total |
//	| sglang | prefix_hit_rate | sglang:cache_hit_rate |
//	| sglang | prompt_tokens | sglang:prompt_tokens_total |
//	| sglang | gen_tokens | sglang:generation_tokens_total |
//	| sglang | ttft | sglang:time_to_first_token_seconds |
//	| sglang | itl | sglang:inter_token_latency_seconds, sglang:time_per_output_token_seconds |
//	| sglang | e2e | sglang:e2e_request_latency_seconds |
//	| sglang | queue | sglang:queue_time_seconds, sglang:waiting_request_latency_seconds |
//	| sglang | spec_accept_rate | sglang:spec_accept_rate |
//	| sglang | spec_accept_len | sglang:spec_accept_length |
//	| tgi | waiting | tgi_queue_size |
//	| tgi | running | tgi_batch_current_size |
//	| tgi | prompt_tokens | tgi_request_input_length_sum |
//	| tgi | gen_tokens | tgi_request_generated_tokens_sum |
//	| tgi | itl | tgi_request_mean_time_per_token_duration |
//	| tgi | e2e | tgi_request_duration |
//	| tgi | queue | tgi_request_queue_duration |
//	| triton | waiting | nv_trt_llm_request_metrics {request_type=waiting} |
//	| triton | waiting | nv_inference_pending_request_count |
//	| triton | running | nv_trt_llm_request_metrics {request_type=active} |
//	| triton | kv_usage | nv_trt_llm_kv_cache_block_metrics {kv_cache_block_type=fraction} |
//	| triton | ttft | nv_inference_first_response_histogram_ms ×0.001 |
//	| trtllm-serve | ttft | time_to_first_token_seconds, trtllm_time_to_first_token_seconds |
//	| trtllm-serve | itl | time_per_output_token_seconds, trtllm_time_per_output_token_seconds |
//	| trtllm-serve | e2e | e2e_request_latency_seconds, trtllm_e2e_request_latency_seconds |
//	| trtllm-serve | queue | request_queue_time_seconds, trtllm_request_queue_time_seconds |
//	| llamacpp | waiting | llamacpp:requests_deferred |
//	| llamacpp | running | llamacpp:requests_processing |
//	| llamacpp | kv_usage | llamacpp:kv_cache_usage_ratio |
//	| llamacpp | prompt_tokens | llamacpp:prompt_tokens_total |
//	| llamacpp | gen_tokens | llamacpp:tokens_predicted_total |
//	| llamacpp | service_seconds | llamacpp:prompt_seconds_total + llamacpp:tokens_predicted_seconds_total |
//	| llamacpp | steps | llamacpp:n_decode_total |
//	| llamacpp | tokens_max | llamacpp:n_tokens_max |
//	| llamacpp | spec_drafts | llamacpp:spec_decode_num_drafts_total |
//	| llamacpp | spec_draft_tokens | llamacpp:spec_decode_num_draft_tokens_total |
//	| llamacpp | spec_accepted_tokens | llamacpp:spec_decode_num_accepted_tokens_total |
//	| dcgm | gpu_util | DCGM_FI_DEV_GPU_UTIL ×0.01 |
//	| dcgm | sm_active | DCGM_FI_PROF_SM_ACTIVE |
//	| dcgm | sm_occupancy | DCGM_FI_PROF_SM_OCCUPANCY |
//	| dcgm | tensor_active | DCGM_FI_PROF_PIPE_TENSOR_ACTIVE |
//	| dcgm | dram_active | DCGM_FI_PROF_DRAM_ACTIVE |
//	| dcgm | fb_used | DCGM_FI_DEV_FB_USED |
//	| dcgm | nvlink_bps | DCGM_FI_PROF_NVLINK_TX_BYTES + DCGM_FI_PROF_NVLINK_RX_BYTES |
//	| dcgm | pcie_bps | DCGM_FI_PROF_PCIE_TX_BYTES + DCGM_FI_PROF_PCIE_RX_BYTES |
//
// Sources of the names: vLLM V1 vllm/v1/metrics/loggers.py (PrometheusStatLogger) and
// vllm/v1/spec_decode/metrics.py; older vLLM names from vLLM's design/v1/metrics.md;
// SGLang python/sglang/srt/metrics/collector.py and docs/references/production_metrics.md;
// TGI docs (reference/metrics); Triton + TRT-LLM: tensorrtllm_backend README "Triton
// Metrics"; trtllm-serve: TensorRT-LLM PR #5785; llama.cpp tools/server (llamacpp:
// prefix); DCGM: dcgm-exporter etc/default-counters.csv and DCGM field docs. Real pages
// of each are in testdata/fixtures (see testdata/SOURCES.md), pinned by golden files.
package scrape
