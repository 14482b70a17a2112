package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/record"
)

func TestProbeEngine(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
		want map[string]string
	}{
		{"llama.cpp /props", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Write([]byte(`{"default_generation_settings":{"n_ctx":2048,"params":{}},"total_slots":4,"model_path":"tiny.gguf","build_info":"b4750-c392e50"}`))
		}, map[string]string{ConfigSlots: "4", ConfigSlotContext: "2048", ConfigBuild: "b4750-c392e50"}},
		{"no /props (vLLM)", http.NotFound, nil},
		// SGLang's /get_server_info is ServerArgs merged with the scheduler's info; the API key
		// and model path it also carries are not kept.
		{"SGLang /get_server_info", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/get_server_info" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"model_path":"meta-llama/Llama-3.1-8B-Instruct","api_key":"sk-secret","chunked_prefill_size":8192,"max_running_requests":256,"max_prefill_tokens":16384,"kv_cache_dtype":"auto","tp_size":2,"pp_size":1,"dp_size":1,"speculative_algorithm":null,"speculative_num_draft_tokens":null,"max_total_num_tokens":480000,"internal_states":[{"avg_spec_accept_length":null}],"version":"0.5.4"}`))
		}, map[string]string{"chunked_prefill": "true", ConfigChunkedPrefillSize: "8192", "max_num_seqs": "256", "max_batched_tokens": "16384",
			"kv_cache_dtype": "auto", "tensor_parallel": "2", "pipeline_parallel": "1", ConfigDataParallel: "1", ConfigKVPoolTokens: "480000",
			"speculative": "off", ConfigEngine: "sglang", ConfigBuild: "0.5.4"}},
		{"SGLang chunking off, EAGLE draft", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/get_server_info" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"chunked_prefill_size":-1,"speculative_algorithm":"EAGLE","speculative_num_draft_tokens":4,"tp_size":99999999999}`))
		}, map[string]string{"chunked_prefill": "false", "speculative": "EAGLE", ConfigSpecDraftTokens: "4", ConfigEngine: "sglang"}},
		{"vLLM /version", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/version" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"version":"0.9.1"}`))
		}, map[string]string{ConfigEngine: "vllm", ConfigBuild: "0.9.1"}},
		{"vLLM /version too long", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"version":"` + strings.Repeat("9", 100) + `"}`))
		}, nil},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, nil},
		{"absurd values ignored", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"default_generation_settings":{"n_ctx":-5},"total_slots":9999999999,"build_info":"` + strings.Repeat("x", 500) + `"}`))
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			got := probeEngine(context.Background(), srv.Client(), srv.URL, "")
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestFlagContextShift: a task whose prompt and output filled its slot's 256 tokens had its
// context shifted by llama.cpp: flagged and not accepted; one that fit is untouched.
func TestFlagContextShift(t *testing.T) {
	var got []*record.Record
	sink := flagContextShift(func(r *record.Record) error { got = append(got, r); return nil }, 256)
	fit := &record.Record{Status: record.StatusOK, TokenSource: record.TokensUsage, PromptTokens: 200, OutputTokens: 55, Accepted: true}
	full := &record.Record{Status: record.StatusOK, TokenSource: record.TokensUsage, PromptTokens: 200, OutputTokens: 56, Accepted: true}
	sink(fit)
	sink(full)
	if fit.HasFlag(record.FlagContextShift) || !fit.Accepted {
		t.Errorf("a task that fit was flagged: %+v", fit)
	}
	if !full.HasFlag(record.FlagContextShift) || full.Accepted || len(full.Reasons) != 1 || !strings.Contains(full.Reasons[0], "256-token context") {
		t.Errorf("a task that filled its context: %+v", full)
	}
	if len(got) != 2 {
		t.Errorf("sink saw %d records", len(got))
	}
}
