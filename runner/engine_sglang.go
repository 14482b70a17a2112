package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/scrub"
)

// ConfigEngine names the engine whose own configuration endpoint answered.
const ConfigEngine = "engine"

// SGLang's settings that have no vLLM-named key: its chunk size in tokens, data-parallel
// size, KV pool in tokens and draft tokens per step.
const (
	ConfigChunkedPrefillSize = "chunked_prefill_size"
	ConfigDataParallel       = "data_parallel"
	ConfigKVPoolTokens       = "kv_pool_tokens"
	ConfigSpecDraftTokens    = "speculative_draft_tokens"
)

// SGLang's GET /get_server_info (python/sglang/srt/entrypoints/http_server.py,
// get_server_info) returns dataclasses.asdict(server_args) merged with the scheduler's
// info, so the field names are ServerArgs's (python/sglang/srt/server_args.py):
// chunked_prefill_size ("-1 means disabling chunked prefill"), max_running_requests,
// max_prefill_tokens, kv_cache_dtype, tp_size, pp_size, dp_size, speculative_algorithm
// (null without a draft), speculative_num_draft_tokens; and the scheduler's
// max_total_num_tokens (the KV pool) beside them.

// probeSGLang reads SGLang's GET /get_server_info. The answer also carries the model path,
// API key settings and internal states; only the fields above are kept, each bounded. nil
// when the endpoint is absent or names none of them.
func probeSGLang(ctx context.Context, hc *http.Client, target, apiKey string) map[string]string {
	resp, cancel := getJSON(ctx, hc, target, apiKey, "/get_server_info")
	if resp == nil {
		return nil
	}
	defer cancel()
	defer resp.Body.Close()
	var p map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, engineProbeMaxBody)).Decode(&p); err != nil {
		return nil
	}
	out := map[string]string{}
	num := func(field string) (int, bool) {
		var n int
		if err := json.Unmarshal(p[field], &n); err != nil || n >= 1<<30 || n <= -1<<30 {
			return 0, false
		}
		return n, true
	}
	count := func(k, field string) {
		if n, ok := num(field); ok && n >= 1 {
			out[k] = strconv.Itoa(n)
		}
	}
	text := func(k, field string) {
		var s string
		if json.Unmarshal(p[field], &s) != nil {
			return
		}
		if v := scrub.Text(s); v != "" && len(v) < 64 {
			out[k] = v
		}
	}
	if c, ok := num("chunked_prefill_size"); ok {
		// -1 (or 0) disables chunking; a positive size turns it on.
		out[evidence.ConfigChunkedPrefill] = strconv.FormatBool(c > 0)
		count(ConfigChunkedPrefillSize, "chunked_prefill_size")
	}
	count(evidence.ConfigMaxNumSeqs, "max_running_requests")
	count(evidence.ConfigMaxBatchedTok, "max_prefill_tokens")
	count(evidence.ConfigTensorParallel, "tp_size")
	count(evidence.ConfigPipelineParalel, "pp_size")
	count(ConfigDataParallel, "dp_size")
	count(ConfigKVPoolTokens, "max_total_num_tokens")
	text(evidence.ConfigKVDType, "kv_cache_dtype")
	if raw, ok := p["speculative_algorithm"]; ok {
		if string(raw) == "null" {
			out[evidence.ConfigSpeculative] = "off"
		} else {
			text(evidence.ConfigSpeculative, "speculative_algorithm")
			count(ConfigSpecDraftTokens, "speculative_num_draft_tokens")
		}
	}
	if len(out) == 0 {
		return nil
	}
	out[ConfigEngine] = "sglang"
	text(ConfigBuild, "version")
	return out
}
