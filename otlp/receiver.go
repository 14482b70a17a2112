package otlp

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// DefaultMaxBody bounds one export body (after gzip decompression). The OTel SDK's batch
// processor sends at most 512 spans per export by default; an llm_request span is < 1 KiB,
// so 4 MiB is 8x a full batch.
const DefaultMaxBody = 4 << 20

// Bounds of the receiver against a flood (32 concurrent 8 MB posts would hold 3.4 GB
// unbounded). Each is a counted drop, reported in the evidence, never a crash.
const (
	// MaxConcurrentExports: bodies decoded at once. An exporter sends one batch at a time;
	// more wait their turn with 429 and Retry-After (retryable under the OTLP/HTTP spec).
	// Memory is then at most ~4 x (body + its decoded spans), ~100 MiB.
	MaxConcurrentExports = 4
	// MaxKeptSpans: spans written to spans.jsonl in one run, as many as a contract's
	// largest plan (contract.MaxPlannedRequests) with retries. Past it, spans are counted.
	MaxKeptSpans = 1 << 20
	// maxSpansPerTrace: spans kept per trace id. A task's attempts share its trace id, so
	// one per attempt; more for one trace are repeats.
	maxSpansPerTrace = 8
	// maxAttrLen bounds a kept string attribute (model, request id, finish reason).
	maxAttrLen = 256
)

// DefaultLinger bounds how long Stop waits for the spans of requests that finished just
// before the load ended: exporters batch (the OTel SDK every 5 s by default, pel sim every
// 200 ms), so the last spans arrive after the last response.
const DefaultLinger = 6 * time.Second

// Config configures a Receiver.
type Config struct {
	// Addr is host:port to listen on (e.g. 127.0.0.1:4318; port 0 picks one).
	Addr string
	// AllowRemote permits a non-loopback Addr. Off by default: the receiver has no auth.
	AllowRemote bool
	MaxBody     int64         // 0: DefaultMaxBody
	Linger      time.Duration // 0: DefaultLinger; negative: do not wait
	// TracePrefix, when set (16 hex digits), keeps only spans whose trace id starts with it
	// (or whose request id contains it): the trace ids pel sends in this run. Others (an
	// engine's other traffic, a flood) are counted, not stored. New draws one; the load
	// driver must use it (TracePrefix).
	TracePrefix string
}

// Receiver is an OTLP/HTTP trace receiver for one run (a runner.Collector).
type Receiver struct {
	cfg Config

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	done    chan struct{}
	f       *os.File
	w       *bufio.Writer
	dir     *rundir.Dir
	seen    map[string]int // spans kept per trace id
	arrived chan struct{}  // signalled (non-blocking) after each kept batch
	kept    int
	bad     int
	werr    error
	sem     chan struct{} // MaxConcurrentExports slots

	// Counted, not stored.
	foreign int // spans of trace ids this run did not send
	repeats int // past maxSpansPerTrace for one trace id
	overCap int // past MaxKeptSpans
	busy    int // exports refused with 429 (every slot decoding)
}

// New checks cfg and returns a receiver that listens once started.
func New(cfg Config) (*Receiver, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp %q: want host:port (e.g. 127.0.0.1:4318): %v", cfg.Addr, err)
	}
	if !cfg.AllowRemote {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("--otlp %q: only a loopback address is allowed (the receiver has no authentication)", cfg.Addr)
		}
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.TracePrefix == "" {
		var p [8]byte
		rand.Read(p[:])
		cfg.TracePrefix = hex.EncodeToString(p[:])
	} else if b, err := hex.DecodeString(cfg.TracePrefix); err != nil || len(b) != 8 {
		return nil, fmt.Errorf("otlp: trace prefix %q: want 16 hex digits", cfg.TracePrefix)
	}
	return &Receiver{cfg: cfg, seen: map[string]int{}, arrived: make(chan struct{}, 1), sem: make(chan struct{}, MaxConcurrentExports)}, nil
}

// TracePrefix is the first 8 bytes of every trace id this run's requests must carry for
// their spans to be kept. The rightmost 8 bytes stay random, as W3C Trace Context level 2
// asks of a trace id (https://www.w3.org/TR/trace-context-2/#considerations-for-trace-id-field-generation).
func (r *Receiver) TracePrefix() [8]byte {
	var p [8]byte
	hex.Decode(p[:], []byte(r.cfg.TracePrefix))
	return p
}

// Dropped says what the receiver counted and did not store.
func (r *Receiver) Dropped() (foreign, repeats, overCap, busy, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.foreign, r.repeats, r.overCap, r.busy, r.bad
}

// URL is the traces endpoint to give an exporter, valid after Start.
func (r *Receiver) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return ""
	}
	return "http://" + r.ln.Addr().String() + "/v1/traces"
}

// Listen binds Addr now and returns the traces URL, for callers that must hand the URL to
// an exporter before the run starts (with port 0). Start binds by itself otherwise.
func (r *Receiver) Listen() (string, error) {
	r.mu.Lock()
	if r.ln == nil {
		ln, err := net.Listen("tcp", r.cfg.Addr)
		if err != nil {
			r.mu.Unlock()
			return "", fmt.Errorf("otlp receiver: %v", err)
		}
		r.ln = ln
	}
	r.mu.Unlock()
	return r.URL(), nil
}

// Start listens (unless Listen did) and appends received spans to the run directory's
// spans file (0600, created new).
func (r *Receiver) Start(ctx context.Context, dir *rundir.Dir) error {
	if _, err := r.Listen(); err != nil {
		return err
	}
	f, err := dir.Append(rundir.SpansFile)
	if err != nil {
		r.mu.Lock()
		r.ln.Close()
		r.ln = nil
		r.mu.Unlock()
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.handle)
	r.mu.Lock()
	ln := r.ln
	r.f, r.w, r.dir = f, bufio.NewWriter(f), dir
	// ReadTimeout: a body trickled in slowly cannot hold an export slot for long.
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	r.done = make(chan struct{})
	srv, done := r.srv, r.done
	r.mu.Unlock()
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	return nil
}

// Stop waits (at most Linger) until every completed request of the run has a span, then shuts the listener down and closes spans.jsonl.
func (r *Receiver) Stop(ctx context.Context) error {
	r.mu.Lock()
	srv, done, dir := r.srv, r.done, r.dir
	r.mu.Unlock()
	if srv == nil {
		return nil
	}
	r.linger(ctx, dir)
	err := srv.Shutdown(ctx)
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	if ferr := r.w.Flush(); ferr != nil && r.werr == nil {
		r.werr = ferr
	}
	if cerr := r.f.Close(); cerr != nil && r.werr == nil {
		r.werr = cerr
	}
	r.srv = nil
	if r.werr != nil {
		return fmt.Errorf("otlp: writing %s: %v", rundir.SpansFile, r.werr)
	}
	if r.bad > 0 && r.kept == 0 {
		return fmt.Errorf("otlp: %d export bodies rejected and no span kept", r.bad)
	}
	return err
}

// linger waits for the spans still in exporters' batches: done when every completed record
// has a span (event-driven), or after Linger.
func (r *Receiver) linger(ctx context.Context, dir *rundir.Dir) {
	if r.cfg.Linger < 0 {
		return
	}
	var want []string
	err := dir.Each(func(t *record.Record) error {
		eachRequest(t, func(q *record.Record) {
			if q.OK() {
				want = append(want, traceOf(q))
			}
		})
		return nil
	})
	if err != nil {
		return
	}
	if len(want) == 0 {
		return
	}
	t := time.NewTimer(r.cfg.Linger)
	defer t.Stop()
	for {
		r.mu.Lock()
		missing := 0
		for _, id := range want {
			if r.seen[id] == 0 {
				missing++
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-r.arrived:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// handle serves POST /v1/traces (OTLP/HTTP): 200 with an empty ExportTraceServiceResponse in
// the request's encoding; 400 for a body that does not decode, 413 when too large.
func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	default:
		r.mu.Lock()
		r.busy++
		r.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "busy: retry later", http.StatusTooManyRequests)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, r.cfg.MaxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			r.reject(w, http.StatusBadRequest, "gzip: "+err.Error())
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, r.cfg.MaxBody+1)
	}
	b, err := io.ReadAll(body)
	if err != nil || int64(len(b)) > r.cfg.MaxBody {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || err == nil {
			r.reject(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", r.cfg.MaxBody))
			return
		}
		r.reject(w, http.StatusBadRequest, err.Error())
		return
	}
	ct := req.Header.Get("Content-Type")
	// Counted before decoding, which would allocate them all first (count.go).
	n := 0
	if len(ct) >= len(ContentJSON) && ct[:len(ContentJSON)] == ContentJSON {
		n = countJSON(b, MaxBodyObjects)
	} else if c, ok := countProto(b, MaxBodyObjects); ok {
		n = c
	}
	if n > MaxBodyObjects {
		r.reject(w, http.StatusRequestEntityTooLarge, tooManyObjects(n))
		return
	}
	spans, err := Decode(b, ct)
	if err != nil {
		r.reject(w, http.StatusBadRequest, err.Error())
		return
	}
	r.keep(spans)
	if len(ct) >= len(ContentJSON) && ct[:len(ContentJSON)] == ContentJSON {
		w.Header().Set("Content-Type", ContentJSON)
		w.Write([]byte("{}"))
		return
	}
	// An empty message encodes to zero bytes in protobuf.
	w.Header().Set("Content-Type", ContentProtobuf)
	w.WriteHeader(http.StatusOK)
}

func (r *Receiver) reject(w http.ResponseWriter, code int, msg string) {
	r.mu.Lock()
	r.bad++
	r.mu.Unlock()
	http.Error(w, msg, code)
}

func (r *Receiver) keep(spans []Span) {
	if len(spans) == 0 {
		return
	}
	r.mu.Lock()
	for i := range spans {
		if r.w == nil || r.werr != nil {
			break
		}
		sp := &spans[i]
		switch {
		case !r.ours(sp):
			r.foreign++
			continue
		case r.seen[sp.TraceID] >= maxSpansPerTrace:
			r.repeats++
			continue
		case r.kept >= MaxKeptSpans:
			r.overCap++
			continue
		}
		sp.RequestID, sp.Model, sp.FinishReason = clip(sp.RequestID), clip(sp.Model), clip(sp.FinishReason)
		sp.Name = clip(sp.Name)
		b, err := json.Marshal(sp)
		if err == nil {
			b = append(b, '\n')
			_, err = r.w.Write(b)
		}
		if err != nil {
			r.werr = err
			break
		}
		r.seen[sp.TraceID]++
		r.kept++
	}
	if r.w != nil && r.werr == nil {
		r.werr = r.w.Flush()
	}
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
}

// ours reports whether sp belongs to a trace this run sent (see Config.TracePrefix).
func (r *Receiver) ours(sp *Span) bool {
	p := r.cfg.TracePrefix
	return strings.HasPrefix(sp.TraceID, p) || (sp.RequestID != "" && strings.Contains(sp.RequestID, p))
}

func clip(s string) string {
	if len(s) <= maxAttrLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxAttrLen], "")
}
