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
