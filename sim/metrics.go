package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM V1's Prometheus metrics, with the exact names, types, help texts, labels
// (model_name, engine) and buckets of vllm/v1/metrics/loggers.py (PrometheusStatLogger,
// vllm-project/vllm) and vllm/v1/spec_decode/metrics.py (SpecDecodingProm). Python's
// prometheus_client appends _total to counters; client_golang does not, so the suffix is
// written here. The python client's *_created gauges are not reproduced.

// vLLM's histogram buckets (loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
		5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
		7.5, 10.0, 20.0, 40.0, 80.0}
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// build125Buckets is vLLM's build_1_2_5_buckets(max_value): 1, 2, 5, 10, 20, 50, ... ≤ max.
func build125Buckets(maxValue int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > maxValue {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// finishReasons are vLLM's FinishReason values as their str() (all pre-registered).
var finishReasons = []string{"stop", "length", "abort"}

type engineMetrics struct {
	running, waiting, kvUsage, gpuCacheUsage, lag           prometheus.Gauge
	skipped                                                 prometheus.Counter
	preemptions, promptTokens, genTokens                    prometheus.Counter
	prefixQueries, prefixHits, gpuPrefixQueries, gpuPrefHit prometheus.Counter
	success                                                 map[string]prometheus.Counter
	ttft, itl, tpot, e2e, queue, inference, prefill, decode prometheus.Observer
	iterTokens, promptHist, genHist, maxTokensHist          prometheus.Observer
	specDrafts, specDraftTokens, specAccepted               prometheus.Counter
	specPerPos                                              []prometheus.Counter
}

type vllmMetrics struct {
	reg     *prometheus.Registry
	engines []*engineMetrics
}

func newVLLMMetrics(modelName string, engines int, cfg EngineConfig, spec bool, gpuMemUtil float64, cacheDType string) *vllmMetrics {
	reg := prometheus.NewRegistry()
	labels := []string{"model_name", "engine"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, labels...), extra...))
		reg.MustRegister(v)
		return v
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v
	}
	running := gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	waiting := gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	gpuCache := gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.")
	gpuPQ := counter("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead.")
	gpuPH := counter("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.")
	kv := gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
	pq := counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.")
	ph := counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.")
	pre := counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.")
	pt := counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	gt := counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	succ := counter("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason")
	tokBuckets := build125Buckets(cfg.MaxModelLen)
	promptHist := hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokBuckets)
	genHist := hist("vllm:request_generation_tokens", "Number of generation tokens processed.", tokBuckets)
	iter := hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokenBuckets)
	maxTok := hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tokBuckets)
	ttft := hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	tpot := hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.", itlBuckets)
	itl := hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	e2e := hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets)
	queue := hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets)
	inf := hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestLatencyBuckets)
	prefill := hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets)
	decode := hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets)
	// pel's own gauge, not vLLM's: how far the simulator's step loop runs behind its virtual
	// schedule, so a run can tell "sim overloaded" from a scenario's fault.
	lag := gauge("pel_sim_step_lag_seconds", "How far pel sim's step loop ran behind its schedule at the last step (wall seconds; 0 when keeping up).")
	skipped := counter("pel_sim_clock_skipped_seconds_total", "Wall seconds of schedule pel sim dropped because its step loop fell more than 50 ms behind (the simulator, not the scenario, was overloaded).")

	// vllm:cache_config_info: an info gauge (value 1) carrying the cache configuration.
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig"},
		[]string{"block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization", "num_gpu_blocks", "engine"})
	reg.MustRegister(info)

	var sd, sdt, sa, spp *prometheus.CounterVec
	if spec {
		sd = counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.")
		sdt = counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.")
		sa = counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.")
		spp = counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "position")
	}
	m := &vllmMetrics{reg: reg}
	for i := 0; i < engines; i++ {
		e := strconv.Itoa(i)
		em := &engineMetrics{
			running: running.WithLabelValues(modelName, e), waiting: waiting.WithLabelValues(modelName, e),
			kvUsage: kv.WithLabelValues(modelName, e), gpuCacheUsage: gpuCache.WithLabelValues(modelName, e),
			lag: lag.WithLabelValues(modelName, e), skipped: skipped.WithLabelValues(modelName, e),
			preemptions: pre.WithLabelValues(modelName, e), promptTokens: pt.WithLabelValues(modelName, e),
			genTokens: gt.WithLabelValues(modelName, e), prefixQueries: pq.WithLabelValues(modelName, e),
			prefixHits: ph.WithLabelValues(modelName, e), gpuPrefixQueries: gpuPQ.WithLabelValues(modelName, e),
			gpuPrefHit: gpuPH.WithLabelValues(modelName, e), success: map[string]prometheus.Counter{},
			ttft: ttft.WithLabelValues(modelName, e), itl: itl.WithLabelValues(modelName, e),
			tpot: tpot.WithLabelValues(modelName, e), e2e: e2e.WithLabelValues(modelName, e),
			queue: queue.WithLabelValues(modelName, e), inference: inf.WithLabelValues(modelName, e),
			prefill: prefill.WithLabelValues(modelName, e), decode: decode.WithLabelValues(modelName, e),
			iterTokens: iter.WithLabelValues(modelName, e), promptHist: promptHist.WithLabelValues(modelName, e),
			genHist: genHist.WithLabelValues(modelName, e), maxTokensHist: maxTok.WithLabelValues(modelName, e),
		}
		for _, r := range finishReasons {
			em.success[r] = succ.WithLabelValues(modelName, e, r)
		}
		if spec {
			em.specDrafts = sd.WithLabelValues(modelName, e)
			em.specDraftTokens = sdt.WithLabelValues(modelName, e)
			em.specAccepted = sa.WithLabelValues(modelName, e)
			for p := 0; p < cfg.SpecK; p++ {
				em.specPerPos = append(em.specPerPos, spp.WithLabelValues(modelName, e, strconv.Itoa(p)))
			}
		}
		info.WithLabelValues(strconv.Itoa(cfg.BlockSize), cacheDType, strconv.FormatBool(cfg.PrefixCaching),
			strconv.FormatFloat(gpuMemUtil, 'g', -1, 64), strconv.Itoa(cfg.KVBlocks), e).Set(1)
		m.engines = append(m.engines, em)
	}
	return m
}

// record applies one step's stats, as PrometheusStatLogger.record does; ts converts virtual
// seconds to the seconds an observer sees (virtual / speed).
func (m *vllmMetrics) record(engine int, r *StepResult, ts func(float64) float64) {
	em := m.engines[engine]
	em.running.Set(float64(r.Running))
	em.waiting.Set(float64(r.Waiting))
	em.kvUsage.Set(r.KVUsage)
	em.gpuCacheUsage.Set(r.KVUsage)
	em.prefixQueries.Add(float64(r.PrefixQuery))
	em.prefixHits.Add(float64(r.PrefixHits))
	em.gpuPrefixQueries.Add(float64(r.PrefixQuery))
	em.gpuPrefHit.Add(float64(r.PrefixHits))
	if em.specDrafts != nil && r.SpecDrafts > 0 {
		em.specDrafts.Add(float64(r.SpecDrafts))
		em.specDraftTokens.Add(float64(r.SpecDraftTok))
		em.specAccepted.Add(float64(r.SpecAccepted))
		for p, n := range r.SpecPerPos {
			if p < len(em.specPerPos) {
				em.specPerPos[p].Add(float64(n))
			}
		}
	}
	em.preemptions.Add(float64(r.Preempted))
	em.promptTokens.Add(float64(r.PromptTokens))
	em.genTokens.Add(float64(r.GenTokens))
	if n := r.PromptTokens + r.GenTokens; n > 0 {
		em.iterTokens.Observe(float64(n))
	}
	for _, v := range r.TTFTs {
		em.ttft.Observe(ts(v))
	}
	for _, v := range r.ITLs {
		em.itl.Observe(ts(v))
		em.tpot.Observe(ts(v))
	}
	for i := range r.Finished {
		f := &r.Finished[i]
		em.success[f.Reason].Inc()
		em.e2e.Observe(ts(f.E2E))
		em.queue.Observe(ts(f.Queue))
		em.prefill.Observe(ts(f.Prefill))
		em.inference.Observe(ts(f.Inference))
		em.decode.Observe(ts(f.Decode))
		em.promptHist.Observe(float64(f.PromptTokens))
		em.genHist.Observe(float64(f.GenerationTokens))
		if f.MaxTokensParam > 0 {
			em.maxTokensHist.Observe(float64(f.MaxTokensParam))
		}
	}
}
