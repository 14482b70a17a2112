// Package loadgentest is a scriptable OpenAI-compatible server for tests and benchmarks
// of the load driver (in the spirit of net/http/httptest): /v1/models, /health,
// /v1/chat/completions and /v1/completions, streaming and not, with per-request behaviour
// chosen by a Plan (delays, multi-token chunks, usage chunk, HTTP errors, error events,
// streams cut mid-way).
package loadgentest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request is what the server saw of one attempt.
type Request struct {
	Path        string
	RequestID   string
	Traceparent string
	Auth        string
	Attempt     int // 1 for the first request with this X-Request-Id
	Model       string
	MaxTokens   int
	Stream      bool
	UsageAsked  bool
	Prompt      string
}

// Behavior is how the server answers one attempt.
type Behavior struct {
	Status    int    // non-2xx: answer with this status and ErrorBody (default an OpenAI error JSON)
	ErrorBody string // raw body for Status (content type guessed: JSON if it starts with '{')
	// Streaming shape.
	FirstTokenDelay time.Duration // after headers, before the first content chunk
	InterTokenDelay time.Duration // between content chunks
	Tokens          int           // tokens to generate (default MaxTokens, else 16)
	TokensPerChunk  int           // tokens per content chunk (default 1); each token is the word "tok "
	NoRoleChunk     bool          // omit the role-only first delta
	NoUsage         bool          // omit the usage chunk even when asked
	NoDone          bool          // omit "data: [DONE]"
	CutAfter        int           // abort the connection after this many content chunks (0: never)
	ErrorEventAfter int           // send an error object after this many content chunks (0: never)
	Word            string        // the token text (default "tok ")
	PromptTokens    int           // reported in usage (default: the prompt's words + 6)
}

// Plan picks the behaviour of each attempt.
type Plan func(r Request) Behavior

// Handler serves the fake API. Models lists /v1/models (nil: one model "test-model").
type Handler struct {
	Plan   Plan
	Models []string
	// RequireAuth, when set, answers 401 to requests without this exact Authorization.
	RequireAuth string
	// Forget keeps no history (Seen returns nothing, every attempt counts as the first):
	// a benchmark server that answers millions of requests stays the same size.
	Forget bool

	mu       sync.Mutex
	attempts map[string]int
	seen     []Request
}

// Seen returns every completion request received, in arrival order.
func (h *Handler) Seen() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.seen...)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.RequireAuth != "" && r.Header.Get("Authorization") != h.RequireAuth {
		writeErr(w, 401, `{"error":{"message":"bad key","type":"auth"}}`)
		return
	}
	switch r.URL.Path {
	case "/v1/models":
		models := h.Models
		if models == nil {
			models = []string{"test-model"}
		}
		var data []map[string]any
		for _, m := range models {
			data = append(data, map[string]any{"id": m, "object": "model"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	case "/health":
		w.WriteHeader(200)
	case "/v1/chat/completions", "/v1/completions":
		h.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeErr(w http.ResponseWriter, code int, body string) {
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain")
	}
	w.WriteHeader(code)
	io.WriteString(w, body)
}

type reqBody struct {
	Model         string `json:"model"`
	MaxTokens     int    `json:"max_tokens"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Prompt   string `json:"prompt"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

func (h *Handler) complete(w http.ResponseWriter, r *http.Request) {
	var b reqBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeErr(w, 400, fmt.Sprintf(`{"error":{"message":%q}}`, err.Error()))
		return
	}
	req := Request{Path: r.URL.Path, RequestID: r.Header.Get("X-Request-Id"), Traceparent: r.Header.Get("Traceparent"),
		Auth: r.Header.Get("Authorization"), Model: b.Model, MaxTokens: b.MaxTokens, Stream: b.Stream,
		UsageAsked: b.StreamOptions != nil && b.StreamOptions.IncludeUsage, Prompt: b.Prompt}
	for _, m := range b.Messages {
		req.Prompt += m.Content
	}
	req.Attempt = 1
	if !h.Forget {
		h.mu.Lock()
		if h.attempts == nil {
			h.attempts = map[string]int{}
		}
		h.attempts[req.RequestID]++
		req.Attempt = h.attempts[req.RequestID]
		h.seen = append(h.seen, req)
		h.mu.Unlock()
	}
	var bh Behavior
	if h.Plan != nil {
		bh = h.Plan(req)
	}
	if bh.Status != 0 && (bh.Status < 200 || bh.Status > 299) {
		body := bh.ErrorBody
		if body == "" {
			body = fmt.Sprintf(`{"error":{"message":"injected %d","type":"server_error","code":%d}}`, bh.Status, bh.Status)
		}
		writeErr(w, bh.Status, body)
		return
	}
	n := bh.Tokens
	if n == 0 {
		n = b.MaxTokens
	}
	if n == 0 {
		n = 16
	}
	per := max(bh.TokensPerChunk, 1)
	word := bh.Word
	if word == "" {
		word = "tok "
	}
	pt := bh.PromptTokens
	if pt == 0 {
		// Like a real server: one token per word of the prompt plus a chat template's 6
		// (so "hi" counts 7), never fewer than pel planned.
		pt = len(strings.Fields(req.Prompt)) + 6
	}
	chat := r.URL.Path == "/v1/chat/completions"
	ctx := r.Context()
	// Delays run on an absolute schedule from the request's arrival (first token at
	// FirstTokenDelay, token chunk k at FirstTokenDelay + k·InterTokenDelay), so timer
	// lateness does not accumulate and the median gap is the configured one.
	began := time.Now()
	next := began
	sleep := func(d time.Duration) bool { // false when the client went away
		next = next.Add(d)
		d = time.Until(next)
		if d <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !b.Stream {
		if !sleep(bh.FirstTokenDelay) {
			return
		}
		text := strings.Repeat(word, n)
		var choice string
		if chat {
			choice = fmt.Sprintf(`{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"length"}`, text)
		} else {
			choice = fmt.Sprintf(`{"index":0,"text":%q,"finish_reason":"length"}`, text)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[%s],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, choice, pt, n, pt+n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	w.WriteHeader(200)
	fl.Flush()
	send := func(s string) {
		io.WriteString(w, "data: "+s+"\n\n")
		fl.Flush()
	}
	delta := func(content string, finish string) string {
		fr := "null"
		if finish != "" {
			fr = `"` + finish + `"`
		}
		if chat {
			return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`, content, fr)
		}
		return fmt.Sprintf(`{"id":"x","object":"text_completion","choices":[{"index":0,"text":%q,"finish_reason":%s}]}`, content, fr)
	}
	if chat && !bh.NoRoleChunk {
		send(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	}
	if !sleep(bh.FirstTokenDelay) {
		return
	}
	chunks := 0
	for left := n; left > 0; {
		k := min(per, left)
		left -= k
		if chunks > 0 && !sleep(bh.InterTokenDelay) {
			return
		}
		fin := ""
		if left == 0 {
			fin = "length"
		}
		send(delta(strings.Repeat(word, k), fin))
		chunks++
		if bh.CutAfter > 0 && chunks >= bh.CutAfter && left > 0 {
			panic(http.ErrAbortHandler) // the server drops the connection mid-stream
		}
		if bh.ErrorEventAfter > 0 && chunks >= bh.ErrorEventAfter && left > 0 {
			send(`{"error":{"message":"injected mid-stream failure","type":"internal_error","code":500}}`)
			return
		}
	}
	if req.UsageAsked && !bh.NoUsage {
		send(fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, pt, n, pt+n))
	}
	if !bh.NoDone {
		send("[DONE]")
	}
}
