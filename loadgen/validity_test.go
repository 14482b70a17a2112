package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// serveFile answers every completion request with testdata/responses/NAME, as SSE (.sse) or
// JSON (.json), HTTP 200 unless code says otherwise.
func serveFile(t *testing.T, name string, code int) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "responses", name))
	if err != nil {
		t.Fatal(err)
	}
	ct := "text/event-stream"
	if strings.HasSuffix(name, ".json") {
		ct = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// doFile runs one attempt of a 100-token synthetic prompt with max_tokens 16.
func doFile(t *testing.T, url string, noStream bool) *record.Record {
	t.Helper()
	c := NewClient(ClientConfig{BaseURL: url, Model: "m", NoStream: noStream, APIKey: "sk-test"})
	req := &workload.Request{Task: "t", MaxTokens: 16, PromptTokens: 100, PlannedPromptTokens: 100, Prompt: "p"}
	body, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{ID: "r"}
	c.Do(context.Background(), req, body, rec, Traceparent([16]byte{1}, [8]byte{2}))
	return rec
}

// Accepted means a valid completion: every
// response shape a server really sends, with the status, error class, flags and rejection
// reason pel must give it. Response bodies are in testdata/responses.
func TestCompletionValidity(t *testing.T) {
	cases := []struct {
		file, status, class, errHas, reason string
		flags                               []string
		code                                int
		outTok                              int
	}{
		{file: "ok.sse", status: record.StatusOK, outTok: 2},
		{file: "ok.json", status: record.StatusOK, outTok: 1},
		{file: "tool-calls.sse", status: record.StatusOK, outTok: 9},
		// llama.cpp: a prompt longer than the slot's context is an "error:" line on HTTP 200.
		{file: "llamacpp-context-error.sse", status: record.StatusStreamError, class: record.ErrRefused, errHas: "exceeds the available context size", reason: "error: stream_error"},
		{file: "vllm-error-500.sse", status: record.StatusStreamError, class: record.ErrServer, errHas: "Engine loop has died"},
		{file: "error-503.sse", status: record.StatusStreamError, class: record.ErrOverloaded, errHas: "overloaded"},
		{file: "error-event-no-code.sse", status: record.StatusStreamError, class: record.ErrStreamEvent, errHas: "boom"},
		{file: "error-code-string.sse", status: record.StatusStreamError, class: record.ErrRefused, errHas: "too many tokens"},
		{file: "error-429.json", code: 429, status: record.StatusHTTPError, class: record.ErrOverloaded, errHas: "Rate limit reached", reason: "error: http_error"},
		{file: "no-finish-reason.sse", status: record.StatusStreamError, class: record.ErrNoFinish, errHas: "no choice had a finish_reason"},
		{file: "cut.sse", status: record.StatusStreamError, class: record.ErrIncomplete, errHas: "without [DONE] or finish_reason"},
		{file: "not-json.sse", status: record.StatusStreamError, class: record.ErrServer, errHas: "not JSON"},
		{file: "no-output.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "no output (max_tokens 16, finish_reason stop)", reason: "invalid: no output"},
		{file: "no-output.json", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "no output", reason: "invalid: no output"},
		{file: "prompt-truncated.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "prompt truncated (sent 100, server counted 50)",
			reason: "invalid: prompt truncated", flags: []string{record.FlagPromptTruncated}, outTok: 2},
		{file: "llamacpp-context-shift.sse", status: record.StatusOK, flags: []string{record.FlagContextShift}, outTok: 2},
		{file: "usage-maxint.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "completion_tokens 9223372036854775807", reason: "invalid: implausible usage", outTok: record.MaxTokens},
		{file: "usage-maxint.json", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "implausible usage", outTok: record.MaxTokens},
		{file: "usage-2e9.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "completion_tokens 2000000000"},
		{file: "usage-negative.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "negative usage", reason: "invalid: negative usage"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			code := c.code
			if code == 0 {
				code = 200
			}
			srv := serveFile(t, c.file, code)
			rec := doFile(t, srv.URL, strings.HasSuffix(c.file, ".json"))
			if rec.Status != c.status || rec.ErrorClass != c.class {
				t.Fatalf("status %q class %q (%s), want %q %q", rec.Status, rec.ErrorClass, rec.Error, c.status, c.class)
			}
			if !strings.Contains(rec.Error, c.errHas) {
				t.Errorf("error %q lacks %q", rec.Error, c.errHas)
			}
			if !slices.Equal(rec.Flags, c.flags) {
				t.Errorf("flags %v, want %v", rec.Flags, c.flags)
			}
			if rec.SentPromptTokens != 100 {
				t.Errorf("sent_prompt_tokens %d, want the planned 100", rec.SentPromptTokens)
			}
			if rec.OutputTokens < 0 || rec.OutputTokens > record.MaxTokens || rec.PromptTokens < 0 {
				t.Errorf("counts not clamped: output %d prompt %d", rec.OutputTokens, rec.PromptTokens)
			}
			if c.outTok != 0 && rec.OutputTokens != c.outTok {
				t.Errorf("output tokens %d, want %d", rec.OutputTokens, c.outTok)
			}
			sum := 0
			for _, k := range rec.ChunkTokens {
				sum += k
			}
			if sum > 2*16+maxTokensPad {
				t.Errorf("chunk tokens %v: a per-token loop would run %d times", rec.ChunkTokens, sum)
			}
			// The reason the driver's default judge gives.
			d := NewDriver(DriverConfig{})
			rec.Reasons, rec.Accepted = nil, false
			d.finish(rec, &workload.Request{}, "", 0)
			if rec.Accepted != (c.status == record.StatusOK) {
				t.Errorf("accepted %v for status %s", rec.Accepted, rec.Status)
			}
			if c.reason != "" && (len(rec.Reasons) != 1 || rec.Reasons[0] != c.reason) {
				t.Errorf("reasons %q, want %q", rec.Reasons, c.reason)
			}
		})
	}
}

// ClassOfCode follows the lead's table: 4xx other than 408/429 refused, 429/503 overloaded,
// other 5xx server_error, 408 timeout, 3xx redirect.
func TestClassOfCode(t *testing.T) {
	for code, want := range map[int]string{
		400: record.ErrRefused, 401: record.ErrRefused, 404: record.ErrRefused, 413: record.ErrRefused, 422: record.ErrRefused,
		408: record.ErrTimeout, 429: record.ErrOverloaded, 503: record.ErrOverloaded,
		500: record.ErrServer, 502: record.ErrServer, 504: record.ErrServer, 301: record.ErrRedirect, 307: record.ErrRedirect,
	} {
		if got := ClassOfCode(code); got != want {
			t.Errorf("ClassOfCode(%d) = %q, want %q", code, got, want)
		}
	}
}

// A redirect is not followed; the task fails naming the Location, and the
// key never reaches the other server (another port of the same host).
func TestRedirectNotFollowed(t *testing.T) {
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"evil"}]}`))
	}))
	defer other.Close()
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path+"?token=secret", http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	for _, hc := range []*http.Client{nil, {Transport: NewTransport()}} {
		c := NewClient(ClientConfig{BaseURL: redir.URL, Model: "m", APIKey: "sk-test", HTTP: hc})
		req := &workload.Request{MaxTokens: 4, Prompt: "p"}
		body, _ := c.Body(req)
		rec := &record.Record{}
		c.Do(context.Background(), req, body, rec, "")
		if rec.Status != record.StatusHTTPError || rec.ErrorClass != record.ErrRedirect || rec.HTTPStatus != 307 {
			t.Fatalf("status %s class %s http %d: %s", rec.Status, rec.ErrorClass, rec.HTTPStatus, rec.Error)
		}
		if !strings.Contains(rec.Error, other.URL+"/v1/chat/completions?token=REDACTED") || strings.Contains(rec.Error, "secret") {
			t.Errorf("error %q should name the Location, without its token", rec.Error)
		}
	}
	_, err := CheckReady(context.Background(), nil, redir.URL, "sk-test")
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("readiness through a redirect: %v", err)
	}
	if len(leaked) > 0 {
		t.Errorf("the other server got %d requests (Authorization %q)", len(leaked), leaked)
	}
}

// Server text reaches records without terminal escapes, and a
// gzip-encoded error body is decoded, not recorded as binary.
func TestServerTextScrubbed(t *testing.T) {
	gz := []byte{0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x4a, 0xca, 0xcf, 0xcf, 0x05, 0x04, 0x00, 0x00, 0xff, 0xff, 0x03, 0x00, 0x4b, 0x2e, 0x2e, 0xb8, 0x04, 0x00, 0x00, 0x00} // gzip("boom")
	for _, c := range []struct {
		name, want string
		h          http.HandlerFunc
	}{
		{"ansi", "http 500: ]0;pwned title [2J [H cleared", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(500)
			w.Write([]byte("\x1b]0;pwned\x07title \x1b[2J\x1b[H\r\ncleared"))
		}},
		{"gzip", "http 502: boom", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(502)
			w.Write(gz)
		}},
		{"brotli", "http 502: (5 bytes of br-encoded body)", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			w.WriteHeader(502)
			w.Write([]byte{0x8b, 1, 2, 3, 4})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			rec := doFile(t, srv.URL, false)
			if rec.Error != c.want {
				t.Errorf("error %q, want %q", rec.Error, c.want)
			}
		})
	}
}

// A header that never ends (one endless line, or endless lines) fails the
// attempt at MaxResponseHeaderBytes instead of filling memory.
func TestEndlessHeader(t *testing.T) {
	for _, c := range []struct {
		name string
		line string
	}{{"one endless line", "X-A: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"endless lines", "X-A: a\r\n"}} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.Write([]byte("HTTP/1.1 200 OK\r\n"))
				chunk := []byte(strings.Repeat(c.line, 64<<10/len(c.line)))
				for sent := 0; sent < 64*MaxResponseHeaderBytes; sent += len(chunk) {
					if _, err := conn.Write(chunk); err != nil {
						return // the client gave up: what we want
					}
				}
			}()
			rec := doFile(t, "http://"+ln.Addr().String(), false)
			if rec.Status != record.StatusConnError || !strings.Contains(rec.Error, "MaxResponseHeaderBytes") {
				t.Fatalf("status %s: %s", rec.Status, rec.Error)
			}
		})
	}
}
