package loadgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/internal/scrub"
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
	// NoStream sends "stream": false (TTFT is then the body's arrival; there is no ITL).
	NoStream bool
	// APIKey is sent as "Authorization: Bearer ..."; it is never logged or recorded.
	APIKey string
	// Timeout bounds one attempt, from send to the end of the body (0: none).
	Timeout time.Duration
	Clock   Clock
	// HTTP is the client to use; nil means one over NewTransport().
	HTTP *http.Client
	// BufSize is the SSE read buffer per stream (default 512; longer lines still work).
	BufSize int
	// KeepOutput accumulates the generated text (for acceptance checks and --keep-text).
	KeepOutput bool
	// EmbeddingsURL is the server of a multi-step task's embeddings calls (base URL like
	// BaseURL; empty: BaseURL), and EmbeddingsModel the model they name (empty: Model).
	EmbeddingsURL   string
	EmbeddingsModel string
}

// Client performs single attempts; the driver owns retries and timing of the schedule.
type Client struct {
	cfg     ClientConfig
	http    *http.Client
	direct  *RawTransport // c.http's transport, when requests can skip http.Client (NewClient)
	url     string
	auth    string
	accept  string
	bufSize int
	embURL  string // /v1/embeddings of the embeddings server
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
		// The same bound as RawTransport's.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		ReadBufferSize:         1024,
		WriteBufferSize:        1024,
	}
}

// DefaultHTTPClient is the client pel uses for load and readiness: RawTransport (one
// goroutine and ~1.5 KiB of buffers per open stream, HTTP/1.1, no proxy), redirects not
// followed.
func DefaultHTTPClient() *http.Client {
	return &http.Client{Transport: &RawTransport{}, CheckRedirect: refuseRedirect}
}

// refuseRedirect makes http.Client return a 3xx response as it is. A redirect is never
// followed: the answers would come from another server and be recorded as the target's, and
// net/http forwards the Authorization header to another port of the same host.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// noRedirects returns hc, or a copy of it that does not follow redirects.
func noRedirects(hc *http.Client) *http.Client {
	cp := *hc
	cp.CheckRedirect = refuseRedirect
	return &cp
}

// BaseURL normalises a target: no query string, no trailing slash, no trailing /v1 (paths
// are added per call, by Endpoint).
func BaseURL(target string) string {
	t, _, _ := strings.Cut(strings.TrimSpace(target), "?")
	t = strings.TrimRight(t, "/")
	t = strings.TrimSuffix(t, "/v1")
	return t
}

// Endpoint is the URL of path (e.g. "/v1/models") on target: path joins target's own path
// (less a trailing /v1), and target's query string goes on every call, as a gateway that
// wants one on each request (Azure's ?api-version=…) expects.
func Endpoint(target, path string) string {
	_, query, ok := strings.Cut(strings.TrimSpace(target), "?")
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query = query[:i]
	}
	if !ok || query == "" {
		return BaseURL(target) + path
	}
	return BaseURL(target) + path + "?" + query
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
	c.http = noRedirects(c.http)
	// With pel's own transport and nothing http.Client would add (no client timeout, no
	// cookie jar; redirects are refused anyway), a request goes straight to the transport:
	// http.Client's per-request copies (the header copier, the URL clone, the forked
	// request) are six of a streamed request's ~60 allocations. A URL with a user name and
	// password still goes through http.Client, which turns them into basic auth.
	if rt, ok := c.http.Transport.(*RawTransport); ok && c.http.Timeout == 0 && c.http.Jar == nil {
		c.direct = rt
	}
	if c.bufSize <= 0 {
		c.bufSize = 512
	}
	path := "/v1/chat/completions"
	if cfg.API == APICompletions {
		path = "/v1/completions"
	}
	c.url = Endpoint(cfg.BaseURL, path)
	c.embURL = Endpoint(cfg.BaseURL, "/v1/embeddings")
	if cfg.EmbeddingsURL != "" {
		c.embURL = Endpoint(cfg.EmbeddingsURL, "/v1/embeddings")
	}
	if cfg.APIKey != "" {
		c.auth = "Bearer " + cfg.APIKey
	}
	c.accept = acceptSSE
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
	// Tools and ToolChoice: the tools step of a multi-step task only.
	Tools      []workload.Tool `json:"tools,omitempty"`
	ToolChoice string          `json:"tool_choice,omitempty"`
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
	return encodeBody(b)
}

func joinMessages(ms []workload.Message) string {
	if len(ms) == 1 {
		return ms[0].Content // no copy: a 2^24-token prompt is ~90 MB
	}
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
	rec.ChunkUS, rec.ChunkTokens, rec.Chunks = rec.ChunkUS[:0], rec.ChunkTokens[:0], 0
	rec.OutputTokens, rec.TokenSource, rec.CachedPromptTokens, rec.PromptTokens = 0, "", 0, 0
	rec.Status, rec.HTTPStatus, rec.Error, rec.FinishReason, rec.ErrorClass = "", 0, "", "", ""
	rec.Flags = rec.Flags[:0]
	rec.Server = nil
}

// failFunc ends an attempt in error: a record.Status*, a record.Err* class and a message.
type failFunc func(status, class, msg string)

// attemptKey carries an *attemptInfo in a request's context, so RawTransport can say what it
// did on the connection (a resend on a fresh one) without owning the record.
type attemptKey struct{}

type attemptInfo struct {
	connRetried bool
}

// Do performs one attempt of request r and fills rec's per-attempt fields (SentAt,
// HeadersAt, FirstTokenAt, LastTokenAt, chunks, token counts, Status, ErrorClass, Flags,
// HTTPStatus, Error, FinishReason). It returns the generated text when KeepOutput is set,
// and its length in characters either way. taskCtx is the task's context: its cancellation
// means the run stopped (StatusCancelled), while the attempt's own Timeout gives
// StatusTimeout. A completed exchange is then checked (validate): implausible usage, a
// truncated prompt, a stream without finish_reason or no output fail the attempt.
func (c *Client) Do(taskCtx context.Context, r *workload.Request, body []byte, rec *record.Record, traceparent string) (output string, chars int) {
	output, chars, _ = c.do(taskCtx, r, body, rec, traceparent, callOpts{url: c.url, accept: c.accept, keep: c.cfg.KeepOutput})
	return output, chars
}

// callOpts are what differs between a contract's single requests and the calls of a
// multi-step task: the URL, the Accept header, whether the text is kept, and whether tool
// calls are collected.
type callOpts struct {
	url, accept string
	keep        bool
	tools       bool
}

// do is one attempt of a completion (see Do); with o.tools it also returns the assistant's
// tool calls (tools.go).
func (c *Client) do(taskCtx context.Context, r *workload.Request, body []byte, rec *record.Record, traceparent string, o callOpts) (output string, chars int, calls []workload.ToolCall) {
	resetAttempt(rec)
	rec.SentPromptTokens = r.PlannedPromptTokens
	resp, fail, done := c.send(taskCtx, o.url, o.accept, body, rec, traceparent)
	if resp == nil {
		return "", 0, nil
	}
	defer done()
	ct := resp.Header.Get("Content-Type")
	out := outputSink{keep: o.keep}
	defer out.held.release() // held.go
	if o.tools {
		out.tools = &toolAcc{}
		defer out.tools.held.release()
	}
	var u *usage
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		hold := &eventHold{r: resp.Body} // held.go: the largest event held, against the budget
		defer hold.release()
		u = c.readStream(&capReader{r: hold, left: MaxStreamBytes}, r, rec, &out, fail)
	case c.cfg.NoStream || o.accept == acceptJSON || strings.Contains(ct, "json"):
		// Also taken when a server ignores "stream": true and answers with one JSON object.
		u = c.readJSON(resp.Body, r, rec, &out, fail, o.accept == acceptSSE)
	default:
		b := readErrorBody(resp)
		fail(record.StatusStreamError, record.ErrServer, fmt.Sprintf("unexpected content-type %q: %s", ct, ErrorMessage(ct, b)))
	}
	if out.truncated {
		rec.AddFlag(record.FlagTruncatedRecord)
	}
	if rec.Status == record.StatusOK {
		if status, class, msg := validate(r, rec, u, &out); status != "" {
			fail(status, class, msg)
		} else if out.tools != nil {
			if msg := out.tools.problem(); msg != "" {
				fail(record.StatusInvalid, record.ErrInvalid, msg)
			}
		}
	}
	if out.tools != nil {
		calls = out.tools.result()
	}
	return out.sb.String(), out.chars, calls
}

// acceptJSON is the Accept header of a call that is not streamed, acceptSSE of one that is.
const (
	acceptJSON = "application/json"
	acceptSSE  = "text/event-stream"
)

// send posts body to url and returns the response when it is a 2xx one; otherwise it has
// recorded the failure and returns nil. fail ends the attempt in error (a record.Status*, a
// record.Err* class, a message); done closes the body and ends the attempt's deadline.
func (c *Client) send(taskCtx context.Context, url, accept string, body []byte, rec *record.Record, traceparent string) (resp *http.Response, fail failFunc, done func()) {
	ctx := taskCtx
	cancel := func() {}
	if c.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(taskCtx, c.cfg.Timeout)
	}
	info := &attemptInfo{}
	ctx = context.WithValue(ctx, attemptKey{}, info)
	fail = func(status, class, msg string) {
		if taskCtx.Err() != nil {
			status, class, msg = record.StatusCancelled, "", "run stopped before the task ended"
		} else if ctx.Err() != nil {
			status, class, msg = record.StatusTimeout, record.ErrTimeout, fmt.Sprintf("no complete response within %v", c.cfg.Timeout)
		}
		// Error text can quote the server's body, and some servers and proxies echo the
		// credential they refused: the record (written to requests.jsonl) must never hold it.
		// Nor may it hold terminal escapes: pel prints errors.
		rec.Status, rec.ErrorClass, rec.Error = status, class, scrub.Text(redactKey(msg, c.cfg.APIKey))
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fail(record.StatusConnError, record.ErrConn, err.Error())
		cancel()
		return nil, fail, nil
	}
	h := hreq.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{accept}
	h["X-Request-Id"] = []string{rec.ID}
	h["Traceparent"] = []string{traceparent}
	if c.auth != "" {
		h["Authorization"] = []string{c.auth}
	}
	rec.SentAt = c.cfg.Clock.Now()
	if rt := c.direct; rt != nil && hreq.URL.User == nil {
		resp, err = rt.RoundTrip(hreq)
	} else {
		resp, err = c.http.Do(hreq)
	}
	if info.connRetried {
		rec.AddFlag(record.FlagConnRetried)
	}
	if err != nil {
		fail(record.StatusConnError, record.ErrConn, connMessage(err))
		cancel()
		return nil, fail, nil
	}
	done = func() { resp.Body.Close(); cancel() }
	rec.HeadersAt = c.cfg.Clock.Now()
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		fail(record.StatusHTTPError, record.ErrRedirect, fmt.Sprintf("http %d: redirect to %s not followed (pel measures the server it was given; use the final URL as --target)",
			resp.StatusCode, orNone(scrub.URL(resp.Header.Get("Location")))))
		done()
		return nil, fail, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b := readErrorBody(resp)
		fail(record.StatusHTTPError, ClassOfCode(resp.StatusCode), fmt.Sprintf("http %d: %s", resp.StatusCode, ErrorMessage(resp.Header.Get("Content-Type"), b)))
		done()
		return nil, fail, nil
	}
	return resp, fail, done
}

func orNone(s string) string {
	if s == "" {
		return "(no Location header)"
	}
	return s
}

// ClassOfCode is the error class (record.Err*) of an HTTP status or an error event's code:
// 408 timeout; 429 and 503 overloaded (the server shed load); other 4xx refused (the
// request as given); 3xx redirect; other codes server_error.
func ClassOfCode(code int) string {
	switch {
	case code == http.StatusRequestTimeout:
		return record.ErrTimeout
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return record.ErrOverloaded
	case code >= 400 && code <= 499:
		return record.ErrRefused
	case code >= 300 && code <= 399:
		return record.ErrRedirect
	}
	return record.ErrServer
}

// readErrorBody reads at most MaxErrorBody of an error response, decoding gzip (a server may
// compress although pel never asks): the recorded error must be text, not compressed bytes.
func readErrorBody(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "", "identity":
		return b
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return []byte("(gzip-encoded body that does not decode)")
		}
		d, _ := io.ReadAll(io.LimitReader(zr, MaxErrorBody))
		return d
	default:
		return []byte(fmt.Sprintf("(%d bytes of %s-encoded body)", len(b), resp.Header.Get("Content-Encoding")))
	}
}

// maxAfterDone bounds what is read after [DONE] to reach the end of the body.
const maxAfterDone = 64 << 10

// capReader fails with errStreamTooLong once more than left bytes were read.
type capReader struct {
	r    io.Reader
	left int64
}

var errStreamTooLong = fmt.Errorf("response body over %d MiB (pel's bound per response, MaxStreamBytes): cut", MaxStreamBytes>>20)

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errStreamTooLong
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

type outputSink struct {
	keep      bool
	sb        strings.Builder
	chars     int
	truncated bool // kept text reached MaxKeptOutput
	any       bool // some generated content arrived (text or tool calls)
	tools     *toolAcc
	held      holding // the kept text, against the budget (held.go)
}

func (o *outputSink) add(s string) {
	if s == "" {
		return
	}
	o.any = true
	o.chars += utf8.RuneCountInString(s)
	if !o.keep || o.truncated {
		return
	}
	if o.sb.Len()+len(s) > MaxKeptOutput || !o.held.grow(int64(len(s))) {
		o.truncated = true
		return
	}
	o.sb.WriteString(s)
}

// chunk is one streamed (or whole) completion object; fields of both APIs. Shapes follow
// OpenAI's API reference (https://platform.openai.com/docs/api-reference/chat/streaming, the
// chat.completion.chunk object): with stream_options.include_usage the last chunk before
// [DONE] has empty choices and the whole request's usage, earlier chunks a null usage.
// Servers differ: llama.cpp's server has put usage on the final content chunk instead
// (https://github.com/ggml-org/llama.cpp/issues/15443), and vLLM and SGLang can put a
// running usage on every chunk (stream_options.continuous_usage_stats), so usage is taken
// from whichever chunk carries it. reasoning_content/reasoning are the reasoning-model
// deltas of vLLM and SGLang; they are generated tokens too. Truncated is llama.cpp's
// "truncated": true (the context was shifted or the prompt cut while serving).
type chunk struct {
	Choices   []choice        `json:"choices"`
	Usage     *usage          `json:"usage"`
	Error     json.RawMessage `json:"error"`
	Truncated bool            `json:"truncated"`
	Timings   *serverTimings  `json:"timings"` // llama.cpp's per-request engine timings
}

// choice is one element of a chunk's choices.
type choice struct {
	Delta struct {
		Content          string          `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		Reasoning        string          `json:"reasoning"`
		ToolCalls        json.RawMessage `json:"tool_calls"`
	} `json:"delta"`
	Message struct {
		Content          string          `json:"content"`
		ReasoningContent string          `json:"reasoning_content"`
		ToolCalls        json.RawMessage `json:"tool_calls"`
	} `json:"message"`
	Text         string  `json:"text"`
	FinishReason *string `json:"finish_reason"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// streamState is what readStream keeps across events.
type streamState struct {
	last       *usage
	done       bool
	continuous bool // every content chunk carried a cumulative usage (vLLM continuous_usage_stats)
	prevCum    int
	events     int
	weight     int64 // content bytes of every content event
	keptWeight int64 // content bytes of the events whose timings were kept
	usages     int   // chunks that carried a usage
	maxRunning int   // the largest completion_tokens any of them claimed

	// timed holds the kept chunks' timings while the stream is open: per chunk, its
	// arrival's change from the previous one's (µs, zigzag varint) and its token count or
	// byte weight (uvarint). A chunk 100 ms after the previous one, carrying a token, takes
	// 4 bytes here against 16 in the record's two slices (grown by doubling, so up to 32);
	// finishTokens writes them to rec.ChunkUS and rec.ChunkTokens once, exactly sized.
	// With thousands of long streams open, the timings are most of a stream's heap.
	timed   []byte
	nTimed  int
	timedUS int64 // the last kept chunk's µs after SentAt
}

// keep appends one chunk's timing to st.timed.
func (st *streamState) keep(us int64, tokens int) {
	st.timed = binary.AppendVarint(st.timed, us-st.timedUS)
	st.timed = binary.AppendUvarint(st.timed, uint64(tokens))
	st.timedUS = us
	st.nTimed++
}

// unpackTimings writes the kept chunks' timings to rec.ChunkUS and rec.ChunkTokens (reusing
// their capacity, which a retried attempt's reset keeps) and empties st.timed.
func (st *streamState) unpackTimings(rec *record.Record) {
	if st.nTimed == 0 {
		return
	}
	rec.ChunkUS = slices.Grow(rec.ChunkUS[:0], st.nTimed)
	rec.ChunkTokens = slices.Grow(rec.ChunkTokens[:0], st.nTimed)
	us, b := int64(0), st.timed
	for range st.nTimed {
		d, n := binary.Varint(b)
		k, m := binary.Uvarint(b[n:])
		b = b[n+m:]
		us += d
		rec.ChunkUS = append(rec.ChunkUS, us)
		rec.ChunkTokens = append(rec.ChunkTokens, int(k))
	}
	st.timed, st.nTimed, st.timedUS = nil, 0, 0
}

// readStream reads an SSE completion. It returns the usage block the server sent (nil if
// none); rec.Status is StatusOK when the stream completed.
func (c *Client) readStream(body io.Reader, r *workload.Request, rec *record.Record, out *outputSink, fail failFunc) *usage {
	sse := NewSSEReader(body, c.bufSize, 0)
	st := streamState{continuous: true}
	var choices []choice // each event's choices, one backing array for the stream
	// One chunk for the stream, reset per event: decodeChunk's fallback to json.Unmarshal
	// makes it escape, so one declared per event was one allocation per event.
	var ch chunk
	var afterDone int64 // capReader.left when [DONE] arrived
	end := func(status, class, msg string) *usage {
		fail(status, class, msg)
		finishTokens(rec, r, &st, false)
		return st.last
	}
	for {
		ev, err := sse.Next()
		if err != nil {
			switch {
			case st.done && deadlineErr(err):
				// The answer arrived but the response did not end within the attempt's time
				// (a body that declares more than it sends): the attempt timed out.
				return end(record.StatusTimeout, record.ErrTimeout, "response body did not end after [DONE]: "+connMessage(err))
			case st.done: // after [DONE] nothing else can fail the completion
			case err == io.EOF && rec.FinishReason != "":
			case err == io.EOF:
				return end(record.StatusStreamError, record.ErrIncomplete, fmt.Sprintf("stream ended after %d events without [DONE] or finish_reason", st.events))
			case errors.Is(err, errStreamTooLong):
				return end(record.StatusStreamError, record.ErrIncomplete, fmt.Sprintf("stream cut after %d events: %v", st.events, err))
			case errors.Is(err, ErrEventTooLarge):
				return end(record.StatusStreamError, record.ErrServer, fmt.Sprintf("event %d: %v", st.events+1, err))
			default:
				return end(record.StatusStreamError, record.ErrIncomplete, "stream broken: "+connMessage(err))
			}
			break
		}
		now := c.cfg.Clock.Now()
		st.events++
		if st.done {
			// Anything after [DONE] is ignored. Reading on to the end lets the connection be
			// reused, but only briefly: a server that keeps sending is cut (and its
			// connection closed).
			if cr, ok := body.(*capReader); !ok || afterDone-cr.left > maxAfterDone {
				break
			}
			continue
		}
		if ev.Type == "error" {
			msg, class := errorEvent(ev.Data)
			return end(record.StatusStreamError, class, "error event: "+msg)
		}
		if string(ev.Data) == "[DONE]" {
			st.done = true
			if cr, ok := body.(*capReader); ok {
				afterDone = cr.left
			}
			continue
		}
		ch = chunk{}
		if err := decodeChunk(ev.Data, &ch, &choices); err != nil {
			return end(record.StatusStreamError, record.ErrServer, fmt.Sprintf("event %d is not JSON: %v", st.events, err))
		}
		if present(ch.Error) {
			msg, class := errorEvent(ch.Error)
			return end(record.StatusStreamError, class, "error in stream: "+msg)
		}
		if ch.Truncated {
			rec.AddFlag(record.FlagContextShift)
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
			if present(cc.Delta.ToolCalls) {
				content += len(cc.Delta.ToolCalls)
				out.any = true
				if out.tools != nil {
					out.tools.delta(cc.Delta.ToolCalls)
				}
			}
			if cc.FinishReason != nil && *cc.FinishReason != "" {
				rec.FinishReason = scrub.Text(oneLine(*cc.FinishReason, 40))
			}
		}
		if ch.Usage != nil {
			st.last = ch.Usage
			st.usages++
			st.maxRunning = max(st.maxRunning, ch.Usage.CompletionTokens)
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
		rec.Chunks++
		st.weight += int64(content)
		cum := -1
		if ch.Usage != nil && st.continuous {
			cum = ch.Usage.CompletionTokens
		} else {
			st.continuous = false
		}
		if st.nTimed >= maxChunkTimings {
			// Past the bound: counted (Chunks, usage), not timed.
			rec.AddFlag(record.FlagTruncatedRecord)
			if cum >= 0 {
				st.prevCum = max(cum, st.prevCum)
			}
			continue
		}
		st.keptWeight += int64(content)
		us := now.Sub(rec.SentAt).Microseconds()
		if cum >= 0 {
			st.keep(us, min(max(cum-st.prevCum, 0), record.MaxTokens))
			st.prevCum = max(cum, st.prevCum)
		} else {
			// Until the end, a chunk's count is its byte length (weights for spreadTokens).
			st.keep(us, content)
		}
	}
	rec.Status = record.StatusOK
	finishTokens(rec, r, &st, st.continuous && st.nTimed > 0)
	if st.done && rec.FinishReason == "" {
		fail(record.StatusStreamError, record.ErrNoFinish, "stream ended with [DONE] but no choice had a finish_reason (the server did not say the completion ended)")
	}
	return st.last
}

// errorEvent renders an error event's payload (an error object, a {"error": ...} wrapper, or
// a string) and classifies it by its code (ClassOfCode); without a code it is ErrStreamEvent.
// llama.cpp sends {"code":400,"message":"...exceeds the available context size...",
// "type":"invalid_request_error"} on an "error:" line; vLLM and SGLang put an error object
// in a data event.
func errorEvent(data []byte) (msg, class string) {
	var wrap struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &wrap) == nil && present(wrap.Error) {
		data = wrap.Error
	}
	class = record.ErrStreamEvent
	var e struct {
		Code   json.RawMessage `json:"code"`
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(data, &e) == nil {
		for _, raw := range []json.RawMessage{e.Code, e.Status} {
			if code, ok := codeOf(raw); ok {
				class = ClassOfCode(code)
				break
			}
		}
	}
	if class == record.ErrRedirect {
		class = record.ErrStreamEvent // a code of 3xx in an error event means nothing
	}
	return errorField(data), class
}

// codeOf reads an HTTP-like status code given as a number or a numeric string.
func codeOf(raw json.RawMessage) (int, bool) {
	if !present(raw) {
		return 0, false
	}
	var n int
	if json.Unmarshal(raw, &n) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(s)); err != nil {
			return 0, false
		}
	}
	return n, n >= 100 && n <= 599
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
//
// Implausible usage (see plausible) is not spread: every chunk counts one token and the
// counts are clamped, so nothing downstream loops over a hostile figure; validate fails
// the task.
func finishTokens(rec *record.Record, r *workload.Request, st *streamState, continuous bool) {
	st.unpackTimings(rec)
	if rec.Chunks == len(rec.ChunkUS) {
		rec.Chunks = 0 // only recorded when some timings were not kept
	}
	events := max(rec.Chunks, len(rec.ChunkUS))
	u := st.last
	if u != nil && plausible(u, r) == "" {
		if n, byEvents, bad := streamCount(st, events); bad {
			// The stream's own count stands; usage's prompt count is not in question.
			rec.AddFlag(record.FlagUsageContradicts)
			if byEvents {
				rec.TokenSource = record.TokensEstimate
				rec.PromptTokens = u.PromptTokens
				rec.OutputTokens = events
				for i := range rec.ChunkTokens {
					rec.ChunkTokens[i] = 1
				}
				return
			}
			fixed := *u
			fixed.CompletionTokens = n
			u = &fixed
		}
	}
	if u == nil || plausible(u, r) != "" {
		if u == nil {
			rec.TokenSource = record.TokensEstimate
			rec.PromptTokens = r.PromptTokens
			rec.OutputTokens = events
		} else {
			rec.TokenSource = record.TokensUsage
			rec.PromptTokens = clampTokens(u.PromptTokens)
			rec.OutputTokens = clampTokens(u.CompletionTokens)
		}
		for i := range rec.ChunkTokens {
			rec.ChunkTokens[i] = 1
		}
		return
	}
	rec.TokenSource = record.TokensUsage
	rec.PromptTokens = u.PromptTokens
	rec.OutputTokens = u.CompletionTokens
	if u.PromptTokensDetails != nil {
		rec.CachedPromptTokens = clampTokens(u.PromptTokensDetails.CachedTokens)
	}
	if !continuous {
		total := u.CompletionTokens
		if st.keptWeight < st.weight && st.weight > 0 {
			// Timings of the later events were not kept: the kept ones get their share.
			total = int(int64(total) * st.keptWeight / st.weight)
		}
		spreadTokens(rec.ChunkTokens, total)
	}
}

func clampTokens(n int) int { return min(max(n, 0), record.MaxTokens) }

// plausible returns why usage u cannot be a real count for request r ("" when it can):
// negative counts, counts past record.MaxTokens, or completion_tokens far beyond the
// max_tokens pel sent (see maxTokensSlack).
func plausible(u *usage, r *workload.Request) string {
	switch {
	case u.PromptTokens < 0 || u.CompletionTokens < 0:
		return fmt.Sprintf("negative usage (prompt_tokens %d, completion_tokens %d)", u.PromptTokens, u.CompletionTokens)
	case u.PromptTokens > record.MaxTokens || u.CompletionTokens > record.MaxTokens:
		return fmt.Sprintf("implausible usage (prompt_tokens %d, completion_tokens %d; no context holds more than %d)", u.PromptTokens, u.CompletionTokens, record.MaxTokens)
	case r.MaxTokens > 0 && u.CompletionTokens > maxTokensSlack*r.MaxTokens+maxTokensPad:
		return fmt.Sprintf("implausible usage: completion_tokens %d with max_tokens %d", u.CompletionTokens, r.MaxTokens)
	case u.PromptTokensDetails != nil && (u.PromptTokensDetails.CachedTokens < 0 || u.PromptTokensDetails.CachedTokens > u.PromptTokens):
		return fmt.Sprintf("implausible usage: cached_tokens %d of prompt_tokens %d", u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	}
	return ""
}

// validate checks a completed exchange against the request (issue: accepted means a valid
// completion). It returns a failure (status, class, message), or "" when the completion is
// valid. Flags are set on rec as a side effect. See doc.go for the rules and why.
func validate(r *workload.Request, rec *record.Record, u *usage, out *outputSink) (status, class, msg string) {
	if status, class, msg := checkFinish(rec.FinishReason); status != "" {
		return status, class, msg
	}
	if u != nil {
		if why := plausible(u, r); why != "" {
			return record.StatusInvalid, record.ErrInvalid, why
		}
		if sent := r.PlannedPromptTokens; sent > 0 && float64(u.PromptTokens) < PromptTruncatedRatio*float64(sent) {
			rec.AddFlag(record.FlagPromptTruncated)
			return record.StatusInvalid, record.ErrInvalid, fmt.Sprintf("prompt truncated (sent %d, server counted %d)", sent, u.PromptTokens)
		}
	}
	if !out.any && rec.FinishReason != record.FinishContentFilter {
		fr := rec.FinishReason
		if fr == "" {
			fr = "none"
		}
		return record.StatusInvalid, record.ErrInvalid, fmt.Sprintf("no output (max_tokens %d, finish_reason %s)", r.MaxTokens, fr)
	}
	return "", "", ""
}

// spreadTokens replaces the weights w (chunk byte lengths) by token counts summing to total:
// one per chunk plus the rest shared in proportion to w, largest remainder first. When the
// server reports fewer tokens than there were chunks (it should not), every chunk counts 1.
// total is at most record.MaxTokens and each weight at most MaxStreamBytes, so the products
// below fit in 64 bits.
func spreadTokens(w []int, total int) {
	n := len(w)
	if n == 0 {
		return
	}
	extra := int64(min(total, record.MaxTokens) - n)
	if extra <= 0 {
		for i := range w {
			w[i] = 1
		}
		return
	}
	var sum int64
	for i, x := range w {
		x = min(max(x, 0), MaxStreamBytes)
		w[i] = x
		sum += int64(x)
	}
	if sum == 0 {
		for i := range w {
			w[i] = 1
		}
		sum = int64(n)
	}
	rem := make([]int64, n) // remainder numerators of extra*w[i]/sum
	var given int64
	for i, x := range w {
		q := extra * int64(x) / sum
		rem[i] = extra*int64(x) - q*sum
		w[i] = 1 + int(q)
		given += q
	}
	// At most n are left (each remainder is below sum); hand them out largest first.
	left := int(extra - given)
	if left <= 0 {
		return
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rem[idx[a]] > rem[idx[b]] })
	for _, i := range idx[:min(left, n)] {
		w[i]++
	}
}

func (c *Client) readJSON(body io.Reader, r *workload.Request, rec *record.Record, out *outputSink, fail failFunc, streamAsked bool) *usage {
	b, release, err := readHeld(body, MaxJSONBody+1) // held.go
	defer release()
	if errors.Is(err, errHeld) {
		fail(record.StatusStreamError, record.ErrIncomplete, fmt.Sprintf("response of over %d MiB not read: %v", len(b)>>20, err))
		return nil
	}
	if err != nil {
		fail(record.StatusStreamError, record.ErrIncomplete, "response body broken: "+connMessage(err))
		return nil
	}
	if len(b) > MaxJSONBody {
		fail(record.StatusStreamError, record.ErrIncomplete, fmt.Sprintf("response over %d MiB (pel's bound for a non-streamed completion, MaxJSONBody): not read", MaxJSONBody>>20))
		return nil
	}
	arrived := c.cfg.Clock.Now()
	var ch chunk
	if err := json.Unmarshal(b, &ch); err != nil {
		fail(record.StatusStreamError, record.ErrServer, "response is not JSON: "+ErrorMessage("", b))
		return nil
	}
	if present(ch.Error) {
		msg, class := errorEvent(ch.Error)
		fail(record.StatusStreamError, class, "error in response: "+msg)
		return nil
	}
	if ch.Truncated {
		rec.AddFlag(record.FlagContextShift)
	}
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		out.add(cc.Message.Content)
		out.add(cc.Message.ReasoningContent)
		out.add(cc.Text)
		if present(cc.Message.ToolCalls) {
			out.any = true
			if out.tools != nil {
				out.tools.whole(cc.Message.ToolCalls)
			}
		}
		if cc.FinishReason != nil {
			rec.FinishReason = scrub.Text(oneLine(*cc.FinishReason, 40))
		}
	}
	rec.Status = record.StatusOK
	ch.Timings.apply(rec)
	if ch.Usage != nil && plausible(ch.Usage, r) == "" {
		rec.TokenSource = record.TokensUsage
		rec.PromptTokens, rec.OutputTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		if ch.Usage.PromptTokensDetails != nil {
			rec.CachedPromptTokens = ch.Usage.PromptTokensDetails.CachedTokens
		}
	} else if ch.Usage != nil {
		rec.TokenSource = record.TokensUsage
		rec.PromptTokens, rec.OutputTokens = clampTokens(ch.Usage.PromptTokens), clampTokens(ch.Usage.CompletionTokens)
	} else {
		// No usage and no per-token events: ~4 characters per token, the usual English rule.
		rec.TokenSource = record.TokensEstimate
		rec.PromptTokens = r.PromptTokens
		rec.OutputTokens = (out.chars + 3) / 4
	}
	settleJSON(rec, out, arrived, streamAsked)
	return ch.Usage
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

// oneLine makes server text one safe line of at most n bytes (plus "...").
func oneLine(s string, n int) string {
	if len(s) > 4*n {
		s = s[:4*n] // scrub.Text is linear, but there is no need to clean what is cut
	}
	s = scrub.Text(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
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
func redactKey(s, key string) string { return scrub.Secret(s, key) }
