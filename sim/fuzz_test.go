package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzParseRequest: request decoding never panics, and every rejection is an OpenAI-shaped
// 4xx naming a reason.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"hello","max_completion_tokens":3,"ignore_eos":true}`,
		`{"prompt":[1,2,3]}`, `{"prompt":["a"]}`, `{"prompt":[-1]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"messages":null}`, `{"max_tokens":1e99}`, `{"n":2}`, `{"prompt":"a","max_tokens":9223372036854775807}`, `[`, `null`, `""`, `{"prompt":"` + string([]byte{0xff, 0xfe}) + `"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		p, err := parseRequest(body, chat, "llama-3-8b", 8192)
		if err != nil {
			if err.Status < 400 || err.Status >= 500 || err.Message == "" || err.Type == "" {
				t.Fatalf("bad error %+v", err)
			}
			if err.Status != http.StatusBadRequest && err.Status != http.StatusNotFound {
				t.Fatalf("unexpected status %d", err.Status)
			}
			return
		}
		if len(p.promptIDs) == 0 || len(p.promptIDs) >= 8192 || p.maxTokens < 0 || p.maxTokens > 8192-len(p.promptIDs) {
			t.Fatalf("accepted an impossible request: %d prompt tokens, max_tokens %d", len(p.promptIDs), p.maxTokens)
		}
	})
}

// FuzzParseScenario: scenario files never panic the loader.
func FuzzParseScenario(f *testing.F) {
	for _, n := range Scenarios() {
		data, _ := scenarioFS.ReadFile("scenarios/" + n + ".yaml")
		f.Add(data)
	}
	f.Add([]byte("name: x\nowner_layer: none\nengine: {eos: {dist: lognormal, mean: 1, sd: 0}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(data, nil, "fuzz.yaml")
		if err != nil {
			return
		}
		if _, err := NewServer(s, Options{}); err != nil {
			return
		}
	})
}

// FuzzHandler drives the whole HTTP API in-process (no net/http panic recovery in the way):
// any route, query, request id, traceparent and body. Nothing panics; every answer is a
// 2xx or an OpenAI-shaped 4xx error object. The step loops are not started (coverage-guided
// fuzz workers stall with them running) and each request's context is already cancelled,
// so an accepted completion is queued and then abandoned by its client at once: every
// validation and response path before the engine runs is exercised, and nothing blocks.
func FuzzHandler(f *testing.F) {
	routes := []string{"POST /v1/chat/completions", "POST /v1/completions", "GET /v1/models", "GET /health",
		"GET /metrics", "GET /debug/trace", "POST /v1/embeddings", "DELETE /v1/models"}
	f.Add(uint8(0), "", "r1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		[]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add(uint8(1), "", "", "", []byte(`{"prompt":"a b","max_tokens":2}`))
	f.Add(uint8(5), "seconds=0.01&replica=0", "", "", []byte(nil))
	f.Add(uint8(5), "seconds=-1&replica=x", "", "", []byte(nil))
	f.Add(uint8(0), "", "\x00\xff", "garbage", []byte(`{"messages":[`))
	sc, err := LoadScenario("healthy")
	if err != nil {
		f.Fatal(err)
	}
	srv, err := NewServer(sc, Options{Speed: 1000, Seed: 1, Hostname: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route uint8, query, reqID, traceparent string, body []byte) {
		method, path, _ := strings.Cut(routes[int(route)%len(routes)], " ")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
		req.URL.RawQuery = query // set after parsing: any bytes a client could send
		req.Header.Set("X-Request-Id", reqID)
		req.Header.Set("traceparent", traceparent)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		u := req.URL
		switch {
		case rec.Code >= 200 && rec.Code < 300:
		case rec.Code >= 400 && rec.Code < 500:
			var e struct {
				Error *struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code != rec.Code {
				t.Fatalf("%s %s: HTTP %d body %q is not an OpenAI error object", method, u, rec.Code, rec.Body.String())
			}
		default:
			t.Fatalf("%s %s: HTTP %d %q", method, u, rec.Code, rec.Body.String())
		}
	})
}

// max_tokens 2^63-1 must not overflow prompt+max_tokens past the context check.
func TestMaxTokensOverflow(t *testing.T) {
	for _, chat := range []bool{true, false} {
		body := `{"prompt":"a b","messages":[{"role":"user","content":"a b"}],"max_tokens":9223372036854775807}`
		_, err := parseRequest([]byte(body), chat, "llama-3-8b", 8192)
		if err == nil || err.Status != http.StatusBadRequest || !strings.Contains(err.Message, "maximum context length") {
			t.Errorf("chat %v: %+v", chat, err)
		}
	}
}
