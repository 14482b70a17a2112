package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

func TestSpreadTokens(t *testing.T) {
	cases := []struct {
		w     []int
		total int
		want  []int
	}{
		{[]int{4, 4, 4}, 3, []int{1, 1, 1}},
		{[]int{4, 4, 4}, 6, []int{2, 2, 2}},
		{[]int{12, 4, 4}, 7, []int{3, 2, 2}}, // extra 4 by 12:4:4 → 2.4, .8, .8 → 2+1, 0+1(.8), 0+1(.8)
		{[]int{1, 1}, 1, []int{1, 1}},        // fewer tokens than chunks: one each
		{[]int{0, 0}, 4, []int{2, 2}},
		{[]int{8, 0}, 5, []int{4, 1}},
		{nil, 5, nil},
	}
	for _, c := range cases {
		w := append([]int(nil), c.w...)
		spreadTokens(w, c.total)
		if fmt.Sprint(w) != fmt.Sprint(c.want) {
			t.Errorf("spreadTokens(%v, %d) = %v, want %v", c.w, c.total, w, c.want)
		}
		sum := 0
		for _, x := range w {
			sum += x
		}
		if len(w) > 0 && c.total >= len(w) && sum != c.total {
			t.Errorf("sum %d != usage %d", sum, c.total)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	for _, c := range []struct{ ct, body, want string }{
		{"application/json", `{"error":{"message":"Rate limit","type":"rate_limit_error","code":429}}`, "Rate limit (rate_limit_error)"},
		{"application/json", `{"error":"model not loaded"}`, "model not loaded"},
		{"application/json", `{"detail":"Not Found"}`, "Not Found"},
		{"application/json", `{"object":"error","message":"bad  max_tokens\n"}`, "bad max_tokens"},
		{"text/html", "<html><body>502 Bad Gateway</body></html>", "an HTML page, not an OpenAI API response"},
		{"", "<!DOCTYPE html><html>", "an HTML page, not an OpenAI API response"},
		{"text/plain", "upstream connect error\n", "upstream connect error"},
		{"", "", "(empty body)"},
	} {
		if got := ErrorMessage(c.ct, []byte(c.body)); got != c.want {
			t.Errorf("ErrorMessage(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}

func TestTraceparent(t *testing.T) {
	tp := Traceparent([16]byte{0xab, 1}, [8]byte{0xcd})
	if tp != "00-ab010000000000000000000000000000-cd00000000000000-01" {
		t.Error(tp)
	}
}

// doOnce runs one attempt of a request with max_tokens maxTok against a loadgentest server.
func doOnce(t *testing.T, api string, noStream bool, b loadgentest.Behavior, maxTok int) (*record.Record, string, loadgentest.Request) {
	t.Helper()
	h := &loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior { return b }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL + "/v1/", API: api, Model: "m", NoStream: noStream, APIKey: "k", KeepOutput: true})
	req := &workload.Request{Task: "t", MaxTokens: maxTok, PromptTokens: 5, Messages: []workload.Message{{Role: "user", Content: "hi"}}, Prompt: "hi"}
	body, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{ID: "rid-1"}
	out, chars := c.Do(context.Background(), req, body, rec, Traceparent([16]byte{1}, [8]byte{2}))
	if chars != len([]rune(out)) {
		t.Errorf("chars %d for %q", chars, out)
	}
	seen := h.Seen()
	if len(seen) != 1 {
		t.Fatalf("server saw %d requests", len(seen))
	}
	return rec, out, seen[0]
}

func TestClientStreams(t *testing.T) {
	cases := []struct {
		name     string
		api      string
		noStream bool
		b        loadgentest.Behavior
		maxTok   int
		status   string
		http     int
		outTok   int
		chunks   []int
		source   string
		errHas   string
		out      string
	}{
		{name: "chat with role chunk and usage", b: loadgentest.Behavior{}, maxTok: 3, status: record.StatusOK, http: 200, outTok: 3, chunks: []int{1, 1, 1}, source: "usage", out: "tok tok tok "},
		{name: "multi-token chunks", b: loadgentest.Behavior{TokensPerChunk: 3}, maxTok: 7, status: record.StatusOK, http: 200, outTok: 7, chunks: []int{3, 3, 1}, source: "usage"},
		{name: "usage differs from words", b: loadgentest.Behavior{TokensPerChunk: 2, Word: "ab"}, maxTok: 4, status: record.StatusOK, http: 200, outTok: 4, chunks: []int{2, 2}, source: "usage"},
		{name: "completions api", api: APICompletions, b: loadgentest.Behavior{NoRoleChunk: true}, maxTok: 2, status: record.StatusOK, http: 200, outTok: 2, chunks: []int{1, 1}, source: "usage"},
		{name: "no usage: estimate", b: loadgentest.Behavior{NoUsage: true, TokensPerChunk: 2}, maxTok: 4, status: record.StatusOK, http: 200, outTok: 2, chunks: []int{1, 1}, source: "estimate"},
		{name: "no [DONE] but finished", b: loadgentest.Behavior{NoDone: true}, maxTok: 2, status: record.StatusOK, http: 200, outTok: 2, chunks: []int{1, 1}, source: "usage"},
		{name: "429 json", b: loadgentest.Behavior{Status: 429}, status: record.StatusHTTPError, http: 429, errHas: "http 429: injected 429"},
		{name: "503 plain text", b: loadgentest.Behavior{Status: 503, ErrorBody: "overloaded"}, status: record.StatusHTTPError, http: 503, errHas: "http 503: overloaded"},
		{name: "cut mid-stream", b: loadgentest.Behavior{CutAfter: 2}, maxTok: 5, status: record.StatusStreamError, http: 200, outTok: 2, chunks: []int{1, 1}, source: "estimate", errHas: "stream"},
		{name: "error event mid-stream", b: loadgentest.Behavior{ErrorEventAfter: 1}, maxTok: 5, status: record.StatusStreamError, http: 200, outTok: 1, chunks: []int{1}, source: "estimate", errHas: "injected mid-stream failure"},
		{name: "non-streaming", noStream: true, b: loadgentest.Behavior{}, maxTok: 3, status: record.StatusOK, http: 200, outTok: 3, source: "usage", out: "tok tok tok "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, out, seen := doOnce(t, c.api, c.noStream, c.b, c.maxTok)
			if rec.Status != c.status || rec.HTTPStatus != c.http {
				t.Fatalf("status %s/%d (%s), want %s/%d", rec.Status, rec.HTTPStatus, rec.Error, c.status, c.http)
			}
			if c.errHas != "" && !strings.Contains(rec.Error, c.errHas) {
				t.Errorf("error %q lacks %q", rec.Error, c.errHas)
			}
			if rec.OutputTokens != c.outTok || fmt.Sprint(rec.ChunkTokens) != fmt.Sprint(c.chunks) || rec.TokenSource != c.source {
				t.Errorf("tokens %d chunks %v source %q; want %d %v %q", rec.OutputTokens, rec.ChunkTokens, rec.TokenSource, c.outTok, c.chunks, c.source)
			}
			if len(rec.ChunkUS) != len(rec.ChunkTokens) {
				t.Errorf("chunk times %d vs counts %d", len(rec.ChunkUS), len(rec.ChunkTokens))
			}
			if len(c.chunks) > 0 && (rec.FirstTokenAt.IsZero() || rec.FirstTokenAt.Before(rec.HeadersAt) || rec.HeadersAt.Before(rec.SentAt)) {
				t.Errorf("times out of order: sent %v headers %v first %v", rec.SentAt, rec.HeadersAt, rec.FirstTokenAt)
			}
			if c.out != "" && out != c.out {
				t.Errorf("output %q", out)
			}
			if c.source == "usage" && rec.PromptTokens != 7 {
				t.Errorf("prompt tokens %d, want usage's 7", rec.PromptTokens)
			}
			if seen.RequestID != "rid-1" || !strings.HasPrefix(seen.Traceparent, "00-01") || seen.Auth != "Bearer k" || seen.Model != "m" {
				t.Errorf("headers seen: %+v", seen)
			}
			if seen.Stream == c.noStream || seen.UsageAsked == c.noStream {
				t.Errorf("stream %v include_usage %v", seen.Stream, seen.UsageAsked)
			}
		})
	}
}

func TestCheckReady(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>hello</body></html>"))
	}))
	defer html.Close()
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		http.NotFound(w, r)
	}))
	defer health.Close()
	ok := httptest.NewServer(&loadgentest.Handler{Models: []string{"a", "b"}})
	defer ok.Close()
	auth := httptest.NewServer(&loadgentest.Handler{RequireAuth: "Bearer right"})
	defer auth.Close()
	// A proxy that quotes the credential back in its error page.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream refused "+r.Header.Get("Authorization"), http.StatusBadGateway)
	}))
	defer echo.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		name, url, key, errHas, via string
		models                      int
	}{
		{"openai", ok.URL, "", "", "/v1/models", 2},
		{"openai with /v1", ok.URL + "/v1", "", "", "/v1/models", 2},
		{"health only", health.URL, "", "", "/health", 0},
		{"html", html.URL, "", "not an OpenAI-compatible server", "", 0},
		{"unreachable", closed, "", "not reachable", "", 0},
		{"bad key", auth.URL, "wrong", "refused the API key that was sent", "", 0},
		{"no key", auth.URL, "", "wants an API key and none was sent", "", 0},
		{"good key", auth.URL, "right", "", "/v1/models", 1},
		{"no scheme", "localhost:1", "", "must start with http", "", 0},
		{"key echoed", echo.URL, "sk-echo-7", "upstream refused Bearer [API key]", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := CheckReady(context.Background(), nil, c.url, c.key)
			if c.errHas != "" {
				if err == nil || !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err %v, want one containing %q", err, c.errHas)
				}
				if c.key != "" && strings.Contains(err.Error(), c.key) {
					t.Errorf("error quotes the API key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Via != c.via || len(r.Models) != c.models {
				t.Errorf("%+v", r)
			}
		})
	}
}

// A request skips http.Client only where http.Client adds nothing: a target that carries a
// user name and password still reaches the server as basic auth.
func TestDirectTransportKeepsURLCredentials(t *testing.T) {
	h := &loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior { return loadgentest.Behavior{} }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	cases := []struct {
		name, base, auth string
		direct           bool
	}{
		{name: "plain target", base: srv.URL, auth: "", direct: true},
		{name: "user and password in the target", base: strings.Replace(srv.URL, "http://", "http://u:p@", 1), auth: "Basic dTpw", direct: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := NewClient(ClientConfig{BaseURL: c.base, Model: "m"})
			if (cl.direct != nil) != c.direct {
				t.Fatalf("direct transport %v, want %v", cl.direct != nil, c.direct)
			}
			req := &workload.Request{MaxTokens: 2, Messages: []workload.Message{{Role: "user", Content: "hi"}}}
			body, err := cl.Body(req)
			if err != nil {
				t.Fatal(err)
			}
			rec := &record.Record{ID: "rid"}
			cl.Do(context.Background(), req, body, rec, Traceparent([16]byte{1}, [8]byte{2}))
			if rec.Status != record.StatusOK {
				t.Fatalf("status %s: %s", rec.Status, rec.Error)
			}
			seen := h.Seen()
			if len(seen) != i+1 || seen[i].Auth != c.auth {
				t.Fatalf("server saw %d requests, the last with Authorization %q; want %q", len(seen), seen[len(seen)-1].Auth, c.auth)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ target, path, want string }{
		{"http://h:8000", "/v1/models", "http://h:8000/v1/models"},
		{"http://h:8000/v1/", "/v1/models", "http://h:8000/v1/models"},
		{" http://h/openai/v1?api-version=2024-10-21 ", "/v1/chat/completions", "http://h/openai/v1/chat/completions?api-version=2024-10-21"},
		{"http://h/?a=1&b=2#frag", "/metrics", "http://h/metrics?a=1&b=2"},
		{"http://h/?", "/v1/models", "http://h/v1/models"},
	} {
		if got := Endpoint(tc.target, tc.path); got != tc.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", tc.target, tc.path, got, tc.want)
		}
	}
	if got := BaseURL("http://h/v1?api-version=1"); got != "http://h" {
		t.Errorf("BaseURL with a query = %q", got)
	}
}
