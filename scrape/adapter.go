package scrape

import (
	"fmt"
	"sort"
	"strings"
)

// Normalized quantities: what an adapter extracts from a page before any windowing.
// Units are fixed: counts, ratios 0..1, seconds, tokens, MiB, bytes/s.
const (
	qWaiting        = "waiting"          // gauge, requests
	qRunning        = "running"          // gauge, requests
	qKVUsage        = "kv_usage"         // gauge, ratio
	qPreemptions    = "preemptions"      // counter
	qPrefixQueries  = "prefix_queries"   // counter, tokens (or blocks, engine-defined)
	qPrefixHits     = "prefix_hits"      // counter
	qPrefixHitGauge = "prefix_hit_rate"  // gauge, ratio (engines without the counters)
	qPromptTokens   = "prompt_tokens"    // counter
	qGenTokens      = "gen_tokens"       // counter
	qTTFT           = "ttft"             // histogram, seconds
	qITL            = "itl"              // histogram, seconds
	qE2E            = "e2e"              // histogram, seconds
	qQueue          = "queue"            // histogram, seconds
	qPrefill        = "prefill"          // histogram, seconds
	qDecode         = "decode"           // histogram, seconds
	qIterTokens     = "iteration_tokens" // histogram, tokens per engine step
	qSpecDrafts     = "spec_drafts"      // counter
	qSpecDraftTok   = "spec_draft_tokens"
	qSpecAccepted   = "spec_accepted_tokens"
	qSpecRateGauge  = "spec_accept_rate" // gauge, ratio (SGLang)
	qSpecLenGauge   = "spec_accept_len"  // gauge, tokens (SGLang)
	qServiceSeconds = "service_seconds"  // counter, seconds: per-request processing time, summed (llama.cpp)
	qSteps          = "steps"            // counter: engine forward passes (llama.cpp llama_decode calls)
	qTokensMax      = "tokens_max"       // gauge, tokens: the largest context any sequence has held
	qStepLag        = "step_lag"         // gauge, seconds (pel sim only)
	qClockSkipped   = "clock_skipped"    // counter, seconds (pel sim only)

	qGPUUtil      = "gpu_util"      // gauge, ratio
	qSMActive     = "sm_active"     // gauge, ratio
	qSMOccupancy  = "sm_occupancy"  // gauge, ratio
	qTensorActive = "tensor_active" // gauge, ratio
	qDRAMActive   = "dram_active"   // gauge, ratio
	qFBUsed       = "fb_used"       // gauge, MiB
	qNVLink       = "nvlink_bps"    // gauge, bytes/s (TX+RX)
	qPCIe         = "pcie_bps"      // gauge, bytes/s (TX+RX)
)

type qkind int

const (
	kGauge qkind = iota
	kCounter
	kHist
)

// target maps one normalized quantity to the families that carry it on one engine.
type target struct {
	q     string
	kind  qkind
	fams  []string          // candidates, most preferred first: the first one present on an endpoint wins
	match map[string]string // label filter (TRT-LLM discriminator labels)
	scale float64           // multiply to reach the normalized unit (0 means 1)
	all   bool              // use every candidate present and add them (TX + RX)
	ratio bool              // within one replica, average several series instead of adding them
}

// Adapter maps one engine's /metrics names to the normalized quantities.
type Adapter struct {
	Engine string // vllm, sglang, tgi, triton, trtllm-serve, llamacpp, dcgm
	Kind   string // engine | dcgm
	// Replica lists the labels that tell replicas (data-parallel engines, GPUs, MIG
	// instances) apart on one endpoint; series that differ only in other labels
	// (model_name, finished_reason...) belong to the same replica.
	Replica []string
	// targets in preference order: per quantity, the first one present on a page wins.
	targets []target
	// prefixes identify the engine's families in auto-detection.
	prefixes []string
}

func (a *Adapter) source() string {
	if a.Kind == KindDCGM {
		return "dcgm"
	}
	return a.Engine + " /metrics"
}

// What the quantities mean per engine (not only their names):
//   - vLLM V1: num_requests_running is the requests in the scheduler's running set (decoding
//     or prefilling this step); num_requests_waiting the waiting queue, preempted requests
//     included; kv_cache_usage_perc the share of KV blocks in use (1 = full, when preemption
//     by recompute starts); request_queue_time_seconds the time a request spent WAITING before
//     its first schedule, request_prefill_time_seconds from first schedule to first token; the
//     engine's TTFT starts at arrival in the engine core, after the API server's
//     tokenization, so client TTFT − engine TTFT is the HTTP/API path.
//   - SGLang: num_queue_reqs is the waiting queue; token_usage the share of the KV token pool
//     in use; num_retracted_requests_total its preemption (requests pushed back to the queue
//     when the pool runs out).
//   - TGI: tgi_queue_size the waiting queue; tgi_batch_current_size the running batch; no KV
//     usage is exposed (TGI admits by token budget: --max-batch-total-tokens).
//   - llama.cpp: see its adapter below (slots, no preemption, summed processing seconds).
//
// Sources (cite in reviews): vLLM V1 names from vllm/v1/metrics/loggers.py
// (PrometheusStatLogger) and vllm/v1/spec_decode/metrics.py (SpecDecodingProm);
// prometheus_client appends "_total" to counters on exposition. SGLang names from
// python/sglang/srt/metrics/collector.py. TGI names from its docs/source/reference/metrics.md.
// Triton/TRT-LLM from triton-inference-server/tensorrtllm_backend README "Triton Metrics".
// llama.cpp from tools/server (llamacpp: prefix). DCGM field names from dcgm-exporter
// etc/default-counters.csv and DCGM's field documentation.
var adapters = []*Adapter{
	{
		Engine: "vllm", Kind: KindEngine, Replica: []string{"engine"}, prefixes: []string{"vllm:"},
		targets: []target{
			{q: qWaiting, kind: kGauge, fams: []string{"vllm:num_requests_waiting"}},
			{q: qRunning, kind: kGauge, fams: []string{"vllm:num_requests_running"}},
			// "perc" is a misnomer: vLLM documents 1 = 100 %. kv_cache_usage_perc (≥0.9)
			// replaces gpu_cache_usage_perc; both are exposed for a while: prefer the new.
			{q: qKVUsage, kind: kGauge, ratio: true, fams: []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
			{q: qPreemptions, kind: kCounter, fams: []string{"vllm:num_preemptions_total"}},
			{q: qPrefixQueries, kind: kCounter, fams: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}},
			{q: qPrefixHits, kind: kCounter, fams: []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}},
			{q: qPrefixHitGauge, kind: kGauge, ratio: true, fams: []string{"vllm:gpu_prefix_cache_hit_rate"}},
			{q: qPromptTokens, kind: kCounter, fams: []string{"vllm:prompt_tokens_total"}},
			{q: qGenTokens, kind: kCounter, fams: []string{"vllm:generation_tokens_total"}},
			{q: qTTFT, kind: kHist, fams: []string{"vllm:time_to_first_token_seconds"}},
			{q: qITL, kind: kHist, fams: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
			{q: qE2E, kind: kHist, fams: []string{"vllm:e2e_request_latency_seconds"}},
			{q: qQueue, kind: kHist, fams: []string{"vllm:request_queue_time_seconds"}},
			{q: qPrefill, kind: kHist, fams: []string{"vllm:request_prefill_time_seconds"}},
			{q: qDecode, kind: kHist, fams: []string{"vllm:request_decode_time_seconds"}},
			{q: qIterTokens, kind: kHist, fams: []string{"vllm:iteration_tokens_total"}},
			{q: qSpecDrafts, kind: kCounter, fams: []string{"vllm:spec_decode_num_drafts_total"}},
			{q: qSpecDraftTok, kind: kCounter, fams: []string{"vllm:spec_decode_num_draft_tokens_total"}},
			{q: qSpecAccepted, kind: kCounter, fams: []string{"vllm:spec_decode_num_accepted_tokens_total"}},
			// pel sim's own health next to its vLLM names (not vLLM metrics): how far its
			// real-time step loop ran behind schedule, and the schedule it dropped, so a run
			// can tell "the simulator was overloaded" from the scenario's fault.
			{q: qStepLag, kind: kGauge, fams: []string{"pel_sim_step_lag_seconds"}},
			{q: qClockSkipped, kind: kCounter, fams: []string{"pel_sim_clock_skipped_seconds_total"}},
		},
	},
	{
		Engine: "sglang", Kind: KindEngine, Replica: []string{"dp_rank", "engine"}, prefixes: []string{"sglang:"},
		targets: []target{
			{q: qWaiting, kind: kGauge, fams: []string{"sglang:num_queue_reqs", "sglang:num_requests_waiting", "sglang:queue_req"}},
			{q: qRunning, kind: kGauge, fams: []string{"sglang:num_running_reqs", "sglang:num_requests_running"}},
			{q: qKVUsage, kind: kGauge, ratio: true, fams: []string{"sglang:token_usage"}},
			// SGLang "retracts" running requests when the KV pool runs out: its preemption.
			{q: qPreemptions, kind: kCounter, fams: []string{"sglang:num_retracted_requests_total"}},
			{q: qPrefixHitGauge, kind: kGauge, ratio: true, fams: []string{"sglang:cache_hit_rate"}},
			{q: qPromptTokens, kind: kCounter, fams: []string{"sglang:prompt_tokens_total"}},
			{q: qGenTokens, kind: kCounter, fams: []string{"sglang:generation_tokens_total"}},
			{q: qTTFT, kind: kHist, fams: []string{"sglang:time_to_first_token_seconds"}},
			{q: qITL, kind: kHist, fams: []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"}},
			{q: qE2E, kind: kHist, fams: []string{"sglang:e2e_request_latency_seconds"}},
			{q: qQueue, kind: kHist, fams: []string{"sglang:queue_time_seconds", "sglang:waiting_request_latency_seconds"}},
			{q: qSpecRateGauge, kind: kGauge, ratio: true, fams: []string{"sglang:spec_accept_rate"}},
			{q: qSpecLenGauge, kind: kGauge, ratio: true, fams: []string{"sglang:spec_accept_length"}},
		},
	},
	{
		Engine: "tgi", Kind: KindEngine, prefixes: []string{"tgi_"},
		targets: []target{
			{q: qWaiting, kind: kGauge, fams: []string{"tgi_queue_size"}},
			{q: qRunning, kind: kGauge, fams: []string{"tgi_batch_current_size"}},
			{q: qPromptTokens, kind: kCounter, fams: []string{"tgi_request_input_length_sum"}},
			{q: qGenTokens, kind: kCounter, fams: []string{"tgi_request_generated_tokens_sum"}},
			// TGI has no TTFT histogram; its per-request mean time per token stands in for ITL.
			{q: qITL, kind: kHist, fams: []string{"tgi_request_mean_time_per_token_duration"}},
			{q: qE2E, kind: kHist, fams: []string{"tgi_request_duration"}},
			{q: qQueue, kind: kHist, fams: []string{"tgi_request_queue_duration"}},
		},
	},
	{
		Engine: "triton", Kind: KindEngine, Replica: []string{"gpu_uuid"}, prefixes: []string{"nv_trt_llm_", "nv_inference_"},
		targets: []target{
			{q: qWaiting, kind: kGauge, fams: []string{"nv_trt_llm_request_metrics"}, match: map[string]string{"request_type": "waiting"}},
			// Triton without the TRT-LLM backend: requests queued per model.
			{q: qWaiting, kind: kGauge, fams: []string{"nv_inference_pending_request_count"}},
			{q: qRunning, kind: kGauge, fams: []string{"nv_trt_llm_request_metrics"}, match: map[string]string{"request_type": "active"}},
			{q: qKVUsage, kind: kGauge, ratio: true, fams: []string{"nv_trt_llm_kv_cache_block_metrics"}, match: map[string]string{"kv_cache_block_type": "fraction"}},
			{q: qTTFT, kind: kHist, scale: 1e-3, fams: []string{"nv_inference_first_response_histogram_ms"}},
		},
	},
	{
		// trtllm-serve (TensorRT-LLM's OpenAI server) exposes vLLM-like names without a prefix.
		Engine: "trtllm-serve", Kind: KindEngine, prefixes: []string{"trtllm_"},
		targets: []target{
			{q: qTTFT, kind: kHist, fams: []string{"time_to_first_token_seconds", "trtllm_time_to_first_token_seconds"}},
			{q: qITL, kind: kHist, fams: []string{"time_per_output_token_seconds", "trtllm_time_per_output_token_seconds"}},
			{q: qE2E, kind: kHist, fams: []string{"e2e_request_latency_seconds", "trtllm_e2e_request_latency_seconds"}},
			{q: qQueue, kind: kHist, fams: []string{"request_queue_time_seconds", "trtllm_request_queue_time_seconds"}},
		},
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
		Engine: "llamacpp", Kind: KindEngine, prefixes: []string{"llamacpp:"},
		targets: []target{
			{q: qWaiting, kind: kGauge, fams: []string{"llamacpp:requests_deferred"}},
			{q: qRunning, kind: kGauge, fams: []string{"llamacpp:requests_processing"}},
			{q: qKVUsage, kind: kGauge, ratio: true, fams: []string{"llamacpp:kv_cache_usage_ratio"}},
			{q: qPromptTokens, kind: kCounter, fams: []string{"llamacpp:prompt_tokens_total"}},
			{q: qGenTokens, kind: kCounter, fams: []string{"llamacpp:tokens_predicted_total"}},
			{q: qServiceSeconds, kind: kCounter, all: true, fams: []string{"llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_seconds_total"}},
			{q: qSteps, kind: kCounter, fams: []string{"llamacpp:n_decode_total"}},
			{q: qTokensMax, kind: kGauge, fams: []string{"llamacpp:n_tokens_max"}},
			{q: qSpecDrafts, kind: kCounter, fams: []string{"llamacpp:spec_decode_num_drafts_total"}},
			{q: qSpecDraftTok, kind: kCounter, fams: []string{"llamacpp:spec_decode_num_draft_tokens_total"}},
			{q: qSpecAccepted, kind: kCounter, fams: []string{"llamacpp:spec_decode_num_accepted_tokens_total"}},
		},
	},
	{
		// dcgm-exporter. PROF_* activity fields are ratios 0..1; GPU_UTIL is a percent.
		// PROF_{NVLINK,PCIE}_{TX,RX}_BYTES are rates in bytes/s whatever TYPE the
		// exporter's CSV declares for them. MIG instances are told apart by GPU_I_ID.
		Engine: "dcgm", Kind: KindDCGM, Replica: []string{"gpu", "GPU_I_ID"}, prefixes: []string{"DCGM_FI_"},
		targets: []target{
			{q: qGPUUtil, kind: kGauge, ratio: true, scale: 0.01, fams: []string{"DCGM_FI_DEV_GPU_UTIL"}},
			{q: qSMActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_SM_ACTIVE"}},
			{q: qSMOccupancy, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_SM_OCCUPANCY"}},
			{q: qTensorActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}},
			{q: qDRAMActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_DRAM_ACTIVE"}},
			{q: qFBUsed, kind: kGauge, fams: []string{"DCGM_FI_DEV_FB_USED"}},
			{q: qNVLink, kind: kGauge, all: true, fams: []string{"DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"}},
			{q: qPCIe, kind: kGauge, all: true, fams: []string{"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"}},
		},
	},
}

// Engines lists the engine names accepted as an override.
func Engines() []string {
	var out []string
	for _, a := range adapters {
		if a.Kind == KindEngine {
			out = append(out, a.Engine)
		}
	}
	return out
}

// AdapterFor returns the adapter named engine ("sim" reads as vllm: pel sim serves
// vLLM V1 names).
func AdapterFor(engine string) (*Adapter, error) {
	e := strings.ToLower(strings.TrimSpace(engine))
	switch e {
	case "sim", "vllm-v1", "vllm-v0":
		e = "vllm"
	case "tensorrt-llm", "trtllm":
		e = "trtllm-serve"
	case "llama.cpp", "llama-cpp":
		e = "llamacpp"
	case "tensorrtllm_backend", "triton-trtllm":
		e = "triton"
	}
	for _, a := range adapters {
		if a.Engine == e {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown engine %q (known: %s, dcgm)", engine, strings.Join(Engines(), ", "))
}

// Detect picks the adapter whose families are on the page(s): the one with the most
// families carrying its prefix, then the one whose target families match most names
// (trtllm-serve has no prefix). nil when nothing is recognised.
func Detect(names map[string]bool) *Adapter {
	var best *Adapter
	bestScore := 0
	for _, a := range adapters {
		score := 0
		for n := range names {
			for _, p := range a.prefixes {
				if strings.HasPrefix(n, p) {
					score += 2
					break
				}
			}
		}
		for _, t := range a.targets {
			for _, f := range t.fams {
				if names[f] {
					score++
				}
			}
		}
		if score > bestScore {
			best, bestScore = a, score
		}
	}
	return best
}

// MappingTable renders the adapters as a Markdown table (the package doc carries a copy;
// a test keeps them in step).
func MappingTable() string {
	var b strings.Builder
	b.WriteString("| engine | quantity | families (first present wins) |\n|---|---|---|\n")
	for _, a := range adapters {
		for _, t := range a.targets {
			fams := strings.Join(t.fams, ", ")
			if t.all {
				fams = strings.Join(t.fams, " + ")
			}
			if len(t.match) > 0 {
				var m []string
				for k, v := range t.match {
					m = append(m, k+"="+v)
				}
				sort.Strings(m)
				fams += " {" + strings.Join(m, ",") + "}"
			}
			if t.scale != 0 && t.scale != 1 {
				fams += fmt.Sprintf(" ×%g", t.scale)
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", a.Engine, t.q, fams)
		}
	}
	return b.String()
}
