package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// API names (the contract's "api" field).
const (
	APIChat        = "chat"
	APICompletions = "completions"
)

// ClientConfig configures the OpenAI-compatible client.
type ClientConfig struct {
	BaseURL string // scheme://host[:port][/prefix], with or without a trailing /v1
	API     string // APIChat (default) or APICompletions
	Model   string
	// NoStream sends "stream": false (TTFT and ITL are then not measurable).
	NoStream bool
	// APIKey is sent as "Authorization: Bearer ..."; it is never logged or recorded.
	APIKey string
	// Timeout bounds one attempt, from send to the end of the body (0: none).
	Timeout time.Duration
	Clock   Clock
	// HTTP is the client to use; nil means one over NewTransport().
	HTTP *http.Client
	// BufSize is the SSE read buffer per stream (default 2048; longer lines still work).
	BufSize int
	// KeepOutput accumulates the generated text (for acceptance checks and --keep-text).
	KeepOutput bool
}

// Client performs single attempts; the driver owns retries and timing of the schedule.
type Client struct {
	cfg     ClientConfig
	http    *http.Client
	url     string
	auth    string
	accept  string
	bufSize int
}

// NewTransport returns a net/http Transport (the alternative to RawTransport) tuned for many concurrent HTTP/1.1 streams to one
// host: no connection cap, a large idle pool so bursts reuse connections, no transparent
// compression (it would add Accept-Encoding and buffer SSE), HTTP/2 off (one stream per
// connection keeps timing independent across requests), no proxy from the environment (a
// proxy would silently become part of every measurement).
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1 << 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		ReadBufferSize:      1024,
		WriteBufferSize:     1024,
	}
}

// DefaultHTTPClient is the client pel uses for load and readiness: RawTransport (one
// goroutine and ~1.5 KiB of buffers per open stream, HTTP/1.1, no proxy).
func DefaultHTTPClient() *http.Client { return &http.Client{Transport: &RawTransport{}} }

// BaseURL normalises a target: no trailing slash, no trailing /v1 (paths are added per call).
func BaseURL(target string) string {
	t := strings.TrimRight(strings.TrimSpace(target), "/")
	t = strings.TrimSuffix(t, "/v1")
	return t
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.API == "" {
		cfg.API = APIChat
	}
	c := &Client{cfg: cfg, http: cfg.HTTP, bufSize: cfg.BufSize}
	if c.http == nil {
		c.http = DefaultHTTPClient()
	}
	if c.bufSize <= 0 {
		c.bufSize = 512
	}
	path := "/v1/chat/completions"
	if cfg.API == APICompletions {
		path = "/v1/completions"
	}
	c.url = BaseURL(cfg.BaseURL) + path
	if cfg.APIKey != "" {
		c.auth = "Bearer " + cfg.APIKey
	}
	c.accept = "text/event-stream"
	if cfg.NoStream {
		c.accept = "application/json"
	}
	return c
}

// Model returns the model name requests carry.
func (c *Client) Model() string { return c.cfg.Model }

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type requestBody struct {
	Model         string             `json:"model,omitempty"`
	Messages      []workload.Message `json:"messages,omitempty"`
	Prompt        *string            `json:"prompt,omitempty"`
	MaxTokens     int                `json:"max_tokens,omitempty"`
	Stream        bool               `json:"stream"`
	StreamOptions *streamOptions     `json:"stream_options,omitempty"`
	// IgnoreEOS is a vLLM/SGLang extension; sent only when the contract asks for it.
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// Body returns the JSON request body for r.
func (c *Client) Body(r *workload.Request) ([]byte, error) {
	b := requestBody{Model: c.cfg.Model, MaxTokens: r.MaxTokens, Stream: !c.cfg.NoStream, IgnoreEOS: r.IgnoreEOS}
	if b.Stream {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if c.cfg.API == APICompletions {
		p := r.Prompt
		if p == "" && len(r.Messages) > 0 {
			p = joinMessages(r.Messages)
		}
		b.Prompt = &p
	} else {
		b.Messages = r.Messages
		if len(b.Messages) == 0 {
			b.Messages = []workload.Message{{Role: "user", Content: r.Prompt}}
		}
	}
	return json.Marshal(b)
}

func joinMessages(ms []workload.Message) string {
	var sb strings.Builder
	for i, m := range ms {
		if i > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString(m.Content)
	}
	return sb.String()
}

// PromptText is the text a request sends (for hashing and --keep-text).
func PromptText(r *workload.Request) string {
	if len(r.Messages) > 0 {
		return joinMessages(r.Messages)
	}
	return r.Prompt
}

// Traceparent formats a W3C trace context header (version 00, sampled).
// https://www.w3.org/TR/trace-context/#traceparent-header
func Traceparent(trace [16]byte, span [8]byte) string {
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], trace[:])
	b[35] = '-'
	hex.Encode(b[36:52], span[:])
	copy(b[52:], "-01")
	return string(b[:])
}

// resetAttempt clears what one attempt fills, so a retried task reports its final attempt.
func resetAttempt(rec *record.Record) {
	rec.SentAt, rec.HeadersAt, rec.FirstTokenAt, rec.LastTokenAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	rec.ChunkUS, rec.ChunkTokens = rec.ChunkUS[:0], rec.ChunkTokens[:0]
	rec.OutputTokens, rec.TokenSource, rec.CachedPromptTokens = 0, "", 0
	rec.Server = nil
	rec.Status, rec.HTTPStatus, rec.Error, rec.FinishReason = "", 0, "", ""
}

// Do performs one attempt of request r and fills rec's per-attempt fields (SentAt,
// HeadersAt, FirstTokenAt, LastTokenAt, chunks, token counts, Status, HTTPStatus, Error,
// FinishReason). It returns the generated text when KeepOutput is set, and its length in
// characters either way. taskCtx is the task's context: its cancellation means the run
// stopped (StatusCancelled), while the attempt's own Timeout gives StatusTimeout.
func (c *Client) Do(taskCtx context.Context, r *workload.Request, body []byte, rec *record.Record, traceparent string) (output string, chars int) {
	resetAttempt(rec)
	ctx := taskCtx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(taskCtx, c.cfg.Timeout)
		defer cancel()
	}
	fail := func(status, msg string) {
		if taskCtx.Err() != nil {
			status, msg = record.StatusCancelled, "run stopped before the task ended"
		} else if ctx.Err() != nil {
			status, msg = record.StatusTimeout, fmt.Sprintf("no complete response within %v", c.cfg.Timeout)
		}
		// Error text can quote the server's body, and some servers and proxies echo the
		// credential they refused: the record (written to requests.jsonl) must never hold it.
		rec.Status, rec.Error = status, redactKey(msg, c.cfg.APIKey)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		fail(record.StatusConnError, err.Error())
		return "", 0
	}
	h := hreq.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{c.accept}
	h["X-Request-Id"] = []string{rec.ID}
	h["Traceparent"] = []string{traceparent}
	if c.auth != "" {
		h["Authorization"] = []string{c.auth}
	}
	rec.SentAt = c.cfg.Clock.Now()
	resp, err := c.http.Do(hreq)
	if err != nil {
		fail(record.StatusConnError, connMessage(err))
		return "", 0
	}
	defer resp.Body.Close()
	rec.HeadersAt = c.cfg.Clock.Now()
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		fail(record.StatusHTTPError, fmt.Sprintf("http %d: %s", resp.StatusCode, ErrorMessage(resp.Header.Get("Content-Type"), b)))
		return "", 0
	}
	ct := resp.Header.Get("Content-Type")
	var out outputSink
	out.keep = c.cfg.KeepOutput
	if strings.HasPrefix(ct, "text/event-stream") {
		c.readStream(resp.Body, r, rec, &out, fail)
	} else if c.cfg.NoStream || strings.Contains(ct, "json") {
		// Also taken when a server ignores "stream": true and answers with one JSON object.
		c.readJSON(resp.Body, r, rec, &out, fail)
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		fail(record.StatusStreamError, fmt.Sprintf("unexpected content-type %q: %s", ct, ErrorMessage(ct, b)))
	}
	return out.sb.String(), out.chars
}

type outputSink struct {
	keep  bool
	sb    strings.Builder
	chars int
}

func (o *outputSink) add(s string) {
	o.chars += utf8.RuneCountInString(s)
	if o.keep {
		o.sb.WriteString(s)
	}
}

// chunk is one streamed (or whole) completion object; fields of both APIs. Shapes follow
// OpenAI's API reference (https://platform.openai.com/docs/api-reference/chat/streaming, the
// chat.completion.chunk object): with stream_options.include_usage the last chunk before
// [DONE] has empty choices and the whole request's usage, earlier chunks a null usage.
// Servers differ: llama.cpp's server has put usage on the final content chunk instead
// (https://github.com/ggml-org/llama.cpp/issues/15443), and vLLM and SGLang can put a
// running usage on every chunk (stream_options.continuous_usage_stats), so usage is taken
// from whichever chunk carries it. reasoning_content/reasoning are the reasoning-model
// deltas of vLLM and SGLang; they are generated tokens too.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Timings *serverTimings  `json:"timings"` // llama.cpp's per-request engine timings
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (c *Client) readStream(body io.Reader, r *workload.Request, rec *record.Record, out *outputSink, fail func(string, string)) {
	sse := NewSSEReader(body, c.bufSize, 0)
	var (
		last       *usage
		done       bool
		continuous = true // every content chunk carried a cumulative usage (vLLM continuous_usage_stats)
		prevCum    int
		events     int
	)
	for {
		ev, err := sse.Next()
		if err != nil {
			if err == io.EOF {
				if done || rec.FinishReason != "" {
					break
				}
				fail(record.StatusStreamError, fmt.Sprintf("stream ended after %d events without [DONE] or finish_reason", events))
			} else {
				fail(record.StatusStreamError, "stream broken: "+connMessage(err))
			}
			finishTokens(rec, r, last, false)
			return
		}
		now := c.cfg.Clock.Now()
		events++
		if done {
			continue // anything after [DONE] is ignored; reading on lets the connection be reused
		}
		if ev.Type == "error" {
			fail(record.StatusStreamError, "error event: "+ErrorMessage("application/json", ev.Data))
			finishTokens(rec, r, last, false)
			return
		}
		if string(ev.Data) == "[DONE]" {
			done = true
			continue
		}
		var ch chunk
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			fail(record.StatusStreamError, fmt.Sprintf("event %d is not JSON: %v", events, err))
			finishTokens(rec, r, last, false)
			return
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			fail(record.StatusStreamError, "error in stream: "+errorField(ch.Error))
			finishTokens(rec, r, last, false)
			return
		}
		content := 0
		for i := range ch.Choices {
			cc := &ch.Choices[i]
			for _, s := range [...]string{cc.Delta.Content, cc.Delta.ReasoningContent, cc.Delta.Reasoning, cc.Text} {
				if s != "" {
					content += len(s)
					out.add(s)
				}
			}
			if len(cc.Delta.ToolCalls) > 0 && string(cc.Delta.ToolCalls) != "null" {
				content += len(cc.Delta.ToolCalls)
			}
			if cc.FinishReason != nil && *cc.FinishReason != "" {
				rec.FinishReason = *cc.FinishReason
			}
		}
		if ch.Usage != nil {
			last = ch.Usage
		}
		ch.Timings.apply(rec)
		// A role-only or empty first delta carries no generated text: it is not a token.
		if content == 0 {
			continue
		}
		if rec.FirstTokenAt.IsZero() {
			rec.FirstTokenAt = now
		}
		rec.LastTokenAt = now
		rec.ChunkUS = append(rec.ChunkUS, now.Sub(rec.SentAt).Microseconds())
		if ch.Usage != nil && continuous {
			rec.ChunkTokens = append(rec.ChunkTokens, max(ch.Usage.CompletionTokens-prevCum, 0))
			prevCum = max(ch.Usage.CompletionTokens, prevCum)
		} else {
			continuous = false
			// Until the end, ChunkTokens holds each chunk's byte length (weights for spreadTokens).
			rec.ChunkTokens = append(rec.ChunkTokens, content)
		}
	}
	rec.Status = record.StatusOK
	finishTokens(rec, r, last, continuous && len(rec.ChunkTokens) > 0)
}

// finishTokens settles the token counts of an attempt.
//
// With a usage block (asked for with stream_options.include_usage), OutputTokens and
// PromptTokens are the server's and TokenSource is "usage". Per-chunk counts: when every
// content chunk carried a cumulative usage (vLLM's continuous_usage_stats) they are the
// differences; otherwise the server's total is spread over the chunks in proportion to each
// chunk's text length, at least one token per chunk, with largest-remainder rounding so the
// counts sum exactly to usage.completion_tokens (a chunk of 3 words carries ~3x the tokens of
// a chunk of 1). Without usage, each content event counts as one token (TokenSource
// "estimate") and PromptTokens is the length the workload asked for.
func finishTokens(rec *record.Record, r *workload.Request, u *usage, continuous bool) {
	if u == nil {
		rec.TokenSource = record.TokensEstimate
		rec.PromptTokens = r.PromptTokens
		for i := range rec.ChunkTokens {
			rec.ChunkTokens[i] = 1
		}
		rec.OutputTokens = len(rec.ChunkTokens)
		return
	}
	rec.TokenSource = record.TokensUsage
	rec.PromptTokens = u.PromptTokens
	rec.OutputTokens = u.CompletionTokens
	if u.PromptTokensDetails != nil {
		rec.CachedPromptTokens = u.PromptTokensDetails.CachedTokens
	}
	if !continuous {
		spreadTokens(rec.ChunkTokens, u.CompletionTokens)
	}
}

// spreadTokens replaces the weights w (chunk byte lengths) by token counts summing to total:
// one per chunk plus the rest shared in proportion to w, largest remainder first. When the
// server reports fewer tokens than there were chunks (it should not), every chunk counts 1.
func spreadTokens(w []int, total int) {
	n := len(w)
	if n == 0 {
		return
	}
	extra := total - n
	if extra <= 0 {
		for i := range w {
			w[i] = 1
		}
		return
	}
	sum := 0
	for _, x := range w {
		sum += x
	}
	if sum == 0 {
		for i := range w {
			w[i] = 1
		}
		sum = n
	}
	rem := make([]int, n) // remainder numerators of extra*w[i]/sum
	given := 0
	for i, x := range w {
		q := extra * x / sum
		rem[i] = extra*x - q*sum
		w[i] = 1 + q
		given += q
	}
	for left := extra - given; left > 0; left-- {
		best := 0
		for i := 1; i < n; i++ {
			if rem[i] > rem[best] {
				best = i
			}
		}
		w[best]++
		rem[best] = -1
	}
}

func (c *Client) readJSON(body io.Reader, r *workload.Request, rec *record.Record, out *outputSink, fail func(string, string)) {
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		fail(record.StatusStreamError, "response body broken: "+connMessage(err))
		return
	}
	var ch chunk
	if err := json.Unmarshal(b, &ch); err != nil {
		fail(record.StatusStreamError, "response is not JSON: "+ErrorMessage("", b))
		return
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		fail(record.StatusStreamError, "error in response: "+errorField(ch.Error))
		return
	}
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		out.add(cc.Message.Content)
		out.add(cc.Text)
		if cc.FinishReason != nil {
			rec.FinishReason = *cc.FinishReason
		}
	}
	rec.Status = record.StatusOK
	ch.Timings.apply(rec)
	if ch.Usage != nil {
		rec.TokenSource = record.TokensUsage
		rec.PromptTokens, rec.OutputTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		if ch.Usage.PromptTokensDetails != nil {
			rec.CachedPromptTokens = ch.Usage.PromptTokensDetails.CachedTokens
		}
	} else {
		// No usage and no per-token events: ~4 characters per token, the usual English rule.
		rec.TokenSource = record.TokensEstimate
		rec.PromptTokens = r.PromptTokens
		rec.OutputTokens = (out.chars + 3) / 4
	}
}

// ErrorMessage extracts a one-line message from an error body: OpenAI's
// {"error":{"message":...}}, {"error":"..."}, FastAPI's {"detail":...}, {"message":...},
// an HTML page (named as such), or plain text.
func ErrorMessage(contentType string, b []byte) string {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return "(empty body)"
	}
	if t[0] == '{' {
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) == nil {
			for _, k := range []string{"error", "detail", "message"} {
				if v, ok := m[k]; ok {
					return errorField(v)
				}
			}
		}
	}
	if strings.Contains(contentType, "html") || looksHTML(t) {
		return "an HTML page, not an OpenAI API response"
	}
	return oneLine(string(t), 200)
}

func looksHTML(b []byte) bool {
	p := strings.ToLower(string(b[:min(len(b), 64)]))
	return strings.HasPrefix(p, "<!doctype html") || strings.HasPrefix(p, "<html")
}

// errorField renders an "error" value: an object with message/type/code, or a string.
func errorField(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return oneLine(s, 300)
	}
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(v, &e) == nil && (e.Message != "" || e.Type != "") {
		msg := e.Message
		if e.Type != "" {
			msg += " (" + e.Type + ")"
		}
		return oneLine(msg, 300)
	}
	return oneLine(string(v), 300)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// connMessage shortens transport errors: net/http wraps them in a *url.Error whose text
// repeats the method and URL ("Post \"http://...\": "), which the caller already names.
func connMessage(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		return ue.Err.Error()
	}
	return err.Error()
}

// redactKey replaces every occurrence of the API key in s (an error message about to be
// recorded or printed) with a placeholder.
func redactKey(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[API key]")
}
