package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// FuzzStream feeds arbitrary response bodies to the OpenAI stream decoder: it must never
// panic, and what it records must be self-consistent.
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a b\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":1}}\n\n",
		"event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
		"data: {\"error\":\"overloaded\"}\n\n",
		"data: not json\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens\":5}}\n\n",
		// Usage a server cannot mean.
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9223372036854775807}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2000000000}}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":-240}}\n\n",
		// llama.cpp's error line on a 200 stream.
		"error: {\"code\":400,\"message\":\"the request exceeds the available context size\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1", KeepOutput: true})
		rec := &record.Record{SentAt: time.Now()}
		var out outputSink
		out.keep = true
		fail := func(status, class, msg string) { rec.Status, rec.ErrorClass, rec.Error = status, class, msg }
		req := &workload.Request{PromptTokens: 4, MaxTokens: 8}
		u := c.readStream(strings.NewReader(body), req, rec, &out, fail)
		if (rec.Status == record.StatusOK) != (rec.ErrorClass == "") {
			t.Fatalf("status %q with error class %q", rec.Status, rec.ErrorClass)
		}
		if rec.OutputTokens < 0 || rec.OutputTokens > record.MaxTokens || rec.PromptTokens < 0 || rec.PromptTokens > record.MaxTokens {
			t.Fatalf("counts not clamped: output %d prompt %d", rec.OutputTokens, rec.PromptTokens)
		}
		implausible := u != nil && plausible(u, req) != ""
		if rec.Status != record.StatusOK && rec.Status != record.StatusStreamError {
			t.Fatalf("status %q", rec.Status)
		}
		if rec.Status == record.StatusStreamError && rec.Error == "" {
			t.Fatal("stream error without a message")
		}
		if len(rec.ChunkUS) != len(rec.ChunkTokens) {
			t.Fatalf("%d chunk times, %d counts", len(rec.ChunkUS), len(rec.ChunkTokens))
		}
		if (len(rec.ChunkUS) > 0) == rec.FirstTokenAt.IsZero() {
			t.Fatalf("first token %v with %d chunks", rec.FirstTokenAt, len(rec.ChunkUS))
		}
		sum := 0
		for _, k := range rec.ChunkTokens {
			if k < 0 {
				t.Fatalf("negative chunk tokens %v", rec.ChunkTokens)
			}
			sum += k
		}
		switch rec.TokenSource {
		case record.TokensEstimate:
			if sum != len(rec.ChunkTokens) || rec.OutputTokens != sum {
				t.Fatalf("estimate: chunks %v output %d", rec.ChunkTokens, rec.OutputTokens)
			}
		case record.TokensUsage:
			if implausible && sum != len(rec.ChunkTokens) {
				t.Fatalf("implausible usage %+v spread over chunks %v", u, rec.ChunkTokens)
			}
			if !implausible && len(rec.ChunkTokens) > 0 && rec.OutputTokens >= len(rec.ChunkTokens) && sum != rec.OutputTokens && !continuousLike(body) {
				t.Fatalf("usage %d but chunks sum to %d (%v)", rec.OutputTokens, sum, rec.ChunkTokens)
			}
		default:
			t.Fatalf("token source %q", rec.TokenSource)
		}
		// The stream's own count bounds what usage may claim: no fewer tokens than content
		// events, and none without content (usage_contradicts_stream otherwise).
		if events := max(rec.Chunks, len(rec.ChunkUS)); u != nil && !implausible && (rec.OutputTokens < events || (events == 0 && rec.OutputTokens != 0)) {
			t.Fatalf("output %d tokens for %d content events (usage %+v, flags %v)", rec.OutputTokens, events, u, rec.Flags)
		}
		if out.chars != len([]rune(out.sb.String())) {
			t.Fatalf("chars %d for %q", out.chars, out.sb.String())
		}
	})
}

// continuousLike: with per-chunk cumulative usage the chunk counts are the server's
// differences, which a hostile body can make disagree with its final total.
func continuousLike(body string) bool { return strings.Count(body, "completion_tokens") > 1 }
