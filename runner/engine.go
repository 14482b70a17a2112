package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/record"
)

// Bounds on the engine-configuration probe: it is advisory, so a slow or huge answer only
// loses the configuration, never the run.
const (
	engineProbeTimeout = 3 * time.Second
	engineProbeMaxBody = 1 << 20 // /props is a few KB (it carries the chat template)
)

// Engine configuration keys recorded in evidence run.engine_config.
const (
	// ConfigSlots is the number of sequences the engine serves at once (llama.cpp
	// total_slots, i.e. -np).
	ConfigSlots = "slots"
	// ConfigSlotContext is each sequence's context in tokens (llama.cpp n_ctx per slot,
	// i.e. -c / -np).
	ConfigSlotContext = "slot_context"
	// ConfigBuild is the engine's build identity (llama.cpp build_info).
	ConfigBuild = "build"
)

// probeEngine asks the target for the configuration it exposes over HTTP: llama.cpp's GET
// /props (total_slots, default_generation_settings.n_ctx, build_info), else SGLang's GET
// /get_server_info (engine_sglang.go), else vLLM's GET /version. vLLM exposes its cache
// configuration as an *_info metric (read from /metrics). nil when nothing is exposed.
func probeEngine(ctx context.Context, hc *http.Client, target, apiKey string) map[string]string {
	if out := probeLlamaCpp(ctx, hc, target, apiKey); out != nil {
		return out
	}
	if out := probeSGLang(ctx, hc, target, apiKey); out != nil {
		return out
	}
	return probeVLLMVersion(ctx, hc, target, apiKey)
}

// probeVLLMVersion reads vLLM's GET /version ({"version": "0.9.1"}, vllm/entrypoints/openai/
// api_server.py show_version): the version first, since what its metrics mean changed
// between releases (V0 and V1 name and count them differently).
func probeVLLMVersion(ctx context.Context, hc *http.Client, target, apiKey string) map[string]string {
	resp, cancel := getJSON(ctx, hc, target, apiKey, "/version")
	if resp == nil {
		return nil
	}
	defer cancel()
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, engineProbeMaxBody)).Decode(&v); err != nil {
		return nil
	}
	ver := scrub.Text(v.Version)
	if ver == "" || len(ver) >= 64 {
		return nil
	}
	return map[string]string{ConfigEngine: "vllm", ConfigBuild: ver}
}

// getJSON fetches one engine endpoint's JSON answer, bounded in time and size; nil when the
// endpoint is absent or does not answer JSON.
func getJSON(ctx context.Context, hc *http.Client, target, apiKey, path string) (*http.Response, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, engineProbeTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loadgen.Endpoint(target, path), nil)
	if err != nil {
		cancel()
		return nil, nil
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		resp.Body.Close()
		cancel()
		return nil, nil
	}
	return resp, cancel
}

// probeLlamaCpp reads llama.cpp's GET /props.
func probeLlamaCpp(ctx context.Context, hc *http.Client, target, apiKey string) map[string]string {
	resp, cancel := getJSON(ctx, hc, target, apiKey, "/props")
	if resp == nil {
		return nil
	}
	defer cancel()
	defer resp.Body.Close()
	var p struct {
		TotalSlots int    `json:"total_slots"`
		BuildInfo  string `json:"build_info"`
		Defaults   struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, engineProbeMaxBody)).Decode(&p); err != nil {
		return nil
	}
	out := map[string]string{}
	if p.TotalSlots > 0 && p.TotalSlots < 1<<20 {
		out[ConfigSlots] = strconv.Itoa(p.TotalSlots)
	}
	if p.Defaults.NCtx > 0 && p.Defaults.NCtx < 1<<30 {
		out[ConfigSlotContext] = strconv.Itoa(p.Defaults.NCtx)
	}
	if b := scrub.Text(p.BuildInfo); b != "" && len(b) < 128 {
		out[ConfigBuild] = b
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// flagContextShift fails a completed task whose prompt and output together filled its
// sequence's context (slotContext tokens): llama.cpp then shifts the context (drops the
// oldest half after n_keep) and goes on generating without saying so in an OpenAI-style
// response, so the output does not answer the prompt that was sent: not a valid
// completion. 0 disables the check.
func flagContextShift(sink func(*record.Record) error, slotContext int) func(*record.Record) error {
	if slotContext <= 0 {
		return sink
	}
	return func(r *record.Record) error {
		// A multi-step task's counts are sums over its calls; each call was judged on its own.
		if r.OK() && !r.MultiStep() && r.TokenSource == record.TokensUsage && r.PromptTokens+r.OutputTokens >= slotContext && !r.HasFlag(record.FlagContextShift) {
			r.AddFlag(record.FlagContextShift)
			r.Accepted = false
			r.Reasons = append(r.Reasons, fmt.Sprintf("context shifted: %d prompt + %d output tokens filled the %d-token context of a slot", r.PromptTokens, r.OutputTokens, slotContext))
		}
		return sink(r)
	}
}
