package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options tune a Server without changing its scenario.
type Options struct {
	// Speed is virtual seconds per wall second (default 1). Everything an observer sees is
	// compressed by it consistently: response timing, histogram observations, DCGM rates and
	// trace timestamps all read as if the virtual GPU were Speed times faster.
	Speed float64
	Seed  uint64
	// MaxBodyBytes bounds a request body (default 4 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// Hostname is the DCGM Hostname label (default: os.Hostname).
	Hostname string
	// OTLPEndpoint, when set, receives one vLLM-shaped "llm_request" span per finished
	// request as OTLP/HTTP JSON (e.g. http://127.0.0.1:4318/v1/traces).
	OTLPEndpoint string
	// ProfileDir, when set, serves vLLM's profiler control (POST /start_profile, POST
	// /stop_profile): while profiling, every step of every replica takes ProfileSlowdown
	// times as long, and the stop writes a Kineto trace of replica 0's profiled steps into
	// this directory, as vLLM does into VLLM_TORCH_PROFILER_DIR (profile.go).
	ProfileDir string
	// ProfileSlowdown is the step-time factor while profiling (default
	// DefaultProfileSlowdown; at least 1, at most 10).
	ProfileSlowdown float64
}

// Server runs a scenario's replicas in real time behind an OpenAI-compatible HTTP API.
type Server struct {
	sc       *Scenario
	opts     Options
	cost     *CostModel
	cfg      EngineConfig
	start    time.Time
	replicas []*replica
	rr       atomic.Uint64
	metrics  *vllmMetrics
	reqSeq   atomic.Uint64 // per accepted request: its random seed (EOS length, acceptance)
	idSeq    atomic.Uint64 // per generated X-Request-Id, apart so ids never shift seeds
	dcgm     *dcgmState
	otlp     *otlpExporter
	prof     profiler

	mu       sync.Mutex
	httpSrv  *http.Server
	dcgmSrv  *http.Server
	url      string
	dcgmURL  string
	closed   chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// replica is one engine with its real-time driver.
type replica struct {
	idx   int
	eng   *Engine
	mu    sync.Mutex
	inbox []*stream
	wake  chan struct{}
	load  atomic.Int64 // requests routed here and not finished (for least_loaded)
	out   []emission   // emissions of the current step, delivered after its wall time
	ring  *stepRing
	cap   atomic.Pointer[traceCapture]
	// late holds a decoupled frontend's emissions due after their step (deliverer).
	late *lateQueue
}

type emission struct {
	st     *stream
	tokens int
	finish string
	at     float64 // virtual time the client sees it
}

// NewServer builds a server for a scenario; Start serves it.
func NewServer(s *Scenario, opts Options) (*Server, error) {
	if s == nil {
		return nil, errors.New("sim: nil scenario")
	}
	if opts.Speed <= 0 {
		opts.Speed = 1
	}
	if opts.Speed > 1000 {
		return nil, fmt.Errorf("sim: speed %g is above 1000", opts.Speed)
	}
	if err := checkProfileOptions(&opts); err != nil {
		return nil, err
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	g, err := LookupGPU(s.Engine.GPU)
	if err != nil {
		return nil, err
	}
	m, err := LookupModel(s.Engine.Model)
	if err != nil {
		return nil, err
	}
	if s.Engine.DTypeBytes > 0 {
		m.DTypeBytes = s.Engine.DTypeBytes
	}
	m.KVDTypeBytes = s.Engine.KVDTypeBytes
	cost := NewCostModel(g, m, s.costParams())
	cfg := s.engineConfig()
	srv := &Server{sc: s, opts: opts, cost: cost, closed: make(chan struct{})}
	n := max(1, s.Engine.Replicas)
	for i := 0; i < n; i++ {
		e := NewEngine(i, cfg, cost, opts.Seed)
		r := &replica{idx: i, eng: e, wake: make(chan struct{}, 1), ring: newStepRing(1 << 14)}
		if cost.P.FrontendDecoupled {
			r.late = newLateQueue()
		}
		srv.replicas = append(srv.replicas, r)
	}
	srv.cfg = srv.replicas[0].eng.Cfg
	if srv.cfg.KVBlocks*srv.cfg.BlockSize < 1 {
		return nil, errors.New("sim: no KV capacity left after the weights")
	}
	gmu := s.Engine.GPUMemoryUtilization
	if gmu == 0 {
		gmu = 0.9
	}
	srv.metrics = newVLLMMetrics(s.Engine.ServedModelName, n, srv.cfg, cfg.SpecK > 0, gmu, cacheDType(s.Engine.KVDTypeBytes))
	srv.dcgm = newDCGMState(srv)
	if opts.OTLPEndpoint != "" {
		srv.otlp = newOTLPExporter(opts.OTLPEndpoint)
	}
	return srv, nil
}

// cacheDType is vLLM's --kv-cache-dtype for a scenario's kv_dtype_bytes ("auto": the
// model's dtype).
func cacheDType(kvBytes float64) string {
	switch kvBytes {
	case 1:
		return "fp8"
	case 2:
		return "bfloat16"
	}
	return "auto"
}

// Scenario returns the server's scenario.
func (s *Server) Scenario() *Scenario { return s.sc }

// KVCapacityTokens is one replica's KV capacity in tokens.
func (s *Server) KVCapacityTokens() int { return s.cfg.KVBlocks * s.cfg.BlockSize }

// Start listens on addr (and dcgmAddr unless empty) and starts the replicas' step loops.
// Use port 0 for an ephemeral port; URL and DCGMURL report what was bound.
func (s *Server) Start(addr, dcgmAddr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv != nil {
		return errors.New("sim: already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var dln net.Listener
	if dcgmAddr != "" {
		if dln, err = net.Listen("tcp", dcgmAddr); err != nil {
			ln.Close()
			return err
		}
	}
	s.start = time.Now()
	s.dcgm.reset(0)
	s.httpSrv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String()
	for _, r := range s.replicas {
		s.wg.Add(1)
		go s.drive(r)
		if r.late != nil {
			s.wg.Add(1)
			go s.deliverLate(r)
		}
	}
	go s.httpSrv.Serve(ln)
	if dln != nil {
		s.dcgmSrv = &http.Server{Handler: s.DCGMHandler(), ReadHeaderTimeout: 10 * time.Second}
		s.dcgmURL = "http://" + dln.Addr().String()
		go s.dcgmSrv.Serve(dln)
	}
	return nil
}

// URL is the base URL of the OpenAI API and /metrics ("" before Start).
func (s *Server) URL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.url }

// DCGMURL is the base URL of the DCGM exporter page ("" without one); the page is at /metrics.
func (s *Server) DCGMURL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.dcgmURL }

// TraceURL is the trace endpoint; add ?seconds=S (virtual seconds, default 1).
func (s *Server) TraceURL() string { return s.URL() + "/debug/trace" }

// Close stops the step loops and the listeners; in-flight streams end with an error.
func (s *Server) Close() error {
	var err error
	s.stopOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		h, d := s.httpSrv, s.dcgmSrv
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if h != nil {
			if e := h.Shutdown(ctx); e != nil {
				h.Close()
			}
		}
		if d != nil {
			d.Close()
		}
		s.wg.Wait()
		if s.otlp != nil {
			s.otlp.close()
		}
	})
	return err
}

// virtNow is the virtual time now; wallAt maps virtual time to the wall clock; obs converts
// a virtual duration to what an observer measures.
func (s *Server) virtNow() float64 { return time.Since(s.start).Seconds() * s.opts.Speed }
func (s *Server) wallAt(v float64) time.Time {
	return s.start.Add(time.Duration(v / s.opts.Speed * float64(time.Second)))
}
func (s *Server) obs(v float64) float64 { return v / s.opts.Speed }

// lagTolerance: how far (wall) the loop may fall behind before it drops the debt and lets the
// virtual clock jump (the GPU then looks idle for that gap rather than time running slow).
const lagTolerance = 50 * time.Millisecond

// drive is a replica's real-time loop: admit arrivals, run a step on the virtual clock,
// sleep until the step's end in wall time, then deliver its tokens and record its metrics.
func (s *Server) drive(r *replica) {
	defer s.wg.Done()
	eng := r.eng
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lagG := s.metrics.engines[r.idx].lag
	for {
		r.mu.Lock()
		in := r.inbox
		r.inbox = nil
		r.mu.Unlock()
		for _, st := range in {
			eng.Submit(st.seq, st.hashes, st.arrival)
		}
		if eng.Idle() {
			select {
			case <-r.wake:
				eng.AdvanceTo(s.virtNow())
				continue
			case <-s.closed:
				return
			}
		}
		eng.Slow = s.prof.factor()
		res := eng.Step()
		if res == nil {
			continue
		}
		if res.Timing.Kernels > 0 {
			r.ring.add(res)
			if c := r.cap.Load(); c != nil {
				c.add(res)
			}
		}
		// Clients see the step's tokens once the frontend has handled them. A decoupled
		// frontend's backlog does not hold the engine core: its loop goes on at the step's
		// end and the deliverer hands the tokens over when they are due.
		target := s.wallAt(max(eng.Now(), res.DeliverAt))
		if r.late != nil {
			target = s.wallAt(eng.Now())
		}
		if d := time.Until(target); d > 200*time.Microsecond {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-s.closed:
				s.abortAll(r)
				return
			}
		}
		lag := time.Since(target)
		if lag < 0 {
			lag = 0
		}
		lagG.Set(lag.Seconds())
		if lag > lagTolerance {
			s.metrics.engines[r.idx].skipped.Add(lag.Seconds())
			eng.AdvanceTo(s.virtNow())
		}
		// Metrics first, tokens second: a client that has read its last token and then
		// scrapes /metrics must find its request counted (as tests and pel run expect).
		s.metrics.record(r.idx, res, s.obs)
		for _, em := range r.out {
			if r.late != nil && em.at > eng.Now() {
				r.late.add(em)
				continue
			}
			em.st.push(em.tokens, em.finish)
		}
		clear(r.out)
		r.out = r.out[:0]
		for i := range res.Finished {
			if s.otlp != nil {
				s.exportSpan(&res.Finished[i])
			}
			res.Finished[i].Seq = nil
			r.load.Add(-1)
		}
		select {
		case <-s.closed:
			s.abortAll(r)
			return
		default:
		}
	}
}

func (s *Server) abortAll(r *replica) {
	r.mu.Lock()
	in := r.inbox
	r.inbox = nil
	r.mu.Unlock()
	for _, st := range in {
		st.push(0, "abort")
	}
	for _, q := range [][]*Seq{r.eng.running, r.eng.waiting} {
		for _, sq := range q {
			if st, ok := sq.Sink.(*stream); ok {
				st.push(0, "abort")
			}
		}
	}
}

// exportSpan queues the llm_request span of a finished request.
func (s *Server) exportSpan(f *Finished) {
	st, ok := f.Seq.Sink.(*stream)
	if !ok {
		return
	}
	sp := spanRecord{traceID: st.traceID, parentID: st.parentID, spanID: randHex(8),
		start: s.wallAt(f.Seq.Arrival), end: s.wallAt(f.Seq.Arrival + f.E2E), reqID: st.reqID,
		model: s.sc.Engine.ServedModelName, maxTokens: f.MaxTokensParam, prompt: f.PromptTokens,
		completion: f.GenerationTokens, queue: s.obs(f.Queue), e2e: s.obs(f.E2E), prefill: s.obs(f.Prefill),
		decode: s.obs(f.Decode), infer: s.obs(f.Inference), finish: f.Reason}
	if f.Seq.FirstToken > 0 {
		sp.ttft = s.obs(f.Seq.FirstToken - f.Seq.Arrival)
	}
	if sp.traceID == "" {
		sp.traceID = randHex(16)
	}
	s.otlp.add(sp)
}

// route picks a replica: round-robin, or the least loaded (fewest unfinished requests).
func (s *Server) route() *replica {
	if len(s.replicas) == 1 {
		return s.replicas[0]
	}
	if s.sc.Engine.Router == "least_loaded" {
		best := s.replicas[0]
		for _, r := range s.replicas[1:] {
			if r.load.Load() < best.load.Load() {
				best = r
			}
		}
		return best
	}
	return s.replicas[int(s.rr.Add(1)-1)%len(s.replicas)]
}

// stream connects one request's engine sequence to its HTTP handler.
type stream struct {
	r       *replica
	seq     *Seq
	hashes  []uint64
	arrival float64
	mu      sync.Mutex
	chunks  []int  // per-step token counts delivered and not yet taken by the handler
	finish  string // set once
	done    bool
	notify  chan struct{}
	// For the OTLP span: the client's request id and W3C trace context, if any.
	reqID, traceID, parentID string
}

// Emit is called by the engine during a step; delivery waits for the step's wall time (or,
// with a decoupled frontend, for at).
func (st *stream) Emit(_ *Seq, tokens int, at float64, finish string) {
	st.r.out = append(st.r.out, emission{st: st, tokens: tokens, finish: finish, at: at})
}

func (st *stream) push(tokens int, finish string) {
	st.mu.Lock()
	if st.done {
		st.mu.Unlock()
		return
	}
	if tokens > 0 {
		st.chunks = append(st.chunks, tokens)
	}
	if finish != "" {
		st.finish, st.done = finish, true
	}
	st.mu.Unlock()
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

// take returns the per-step token counts delivered since the last call (appended to buf)
// and the finish reason if done. One engine step's output becomes one SSE event, as in vLLM,
// however late the handler runs.
func (st *stream) take(buf []int) ([]int, string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	buf = append(buf, st.chunks...)
	st.chunks = st.chunks[:0]
	return buf, st.finish, st.done
}

// Handler is the HTTP API: /v1/chat/completions, /v1/completions, /v1/models, /health,
// /metrics and /debug/trace.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) })
	mux.HandleFunc("POST /v1/embeddings", s.serveEmbeddings)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	if s.sc.Engine.ServesMetrics() {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /debug/trace", s.serveTrace)
	if s.opts.ProfileDir != "" {
		mux.HandleFunc("POST /start_profile", s.serveStartProfile)
		mux.HandleFunc("POST /stop_profile", s.serveStopProfile)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Message: "no route for " + r.Method + " " + r.URL.Path})
	})
	return mux
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	name := s.sc.Engine.ServedModelName
	created := strconv.FormatInt(s.start.Unix(), 10)
	w.Header().Set("Content-Type", "application/json")
	b := []byte(`{"object":"list","data":[{"id":`)
	b = appendJSONString(b, name)
	b = append(b, `,"object":"model","created":`...)
	b = append(b, created...)
	b = append(b, `,"owned_by":"vllm","root":`...)
	m, _ := LookupModel(s.sc.Engine.Model)
	b = appendJSONString(b, m.HFName)
	b = append(b, `,"parent":null,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(s.cfg.MaxModelLen), 10)
	b = append(b, "}]}\n"...)
	w.Write(b)
}

// requestID keeps a client's X-Request-Id if it is a sane token, else makes one.
func (s *Server) requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id != "" && len(id) <= 128 {
		ok := true
		for _, c := range id {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)) {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	return fmt.Sprintf("pelsim-%d-%d", s.start.UnixNano()%1e9, s.idSeq.Add(1))
}

// validTraceparent checks W3C trace-context shape (version-traceid-parentid-flags). The sim
// accepts the header; a malformed one is ignored, as the spec asks.
func validTraceparent(h string) bool {
	p := strings.Split(h, "-")
	if len(p) != 4 || len(p[0]) != 2 || len(p[1]) != 32 || len(p[2]) != 16 || len(p[3]) != 2 {
		return false
	}
	for _, part := range p {
		for _, c := range part {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return p[1] != strings.Repeat("0", 32) && p[2] != strings.Repeat("0", 16)
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	id := s.requestID(r)
	w.Header().Set("X-Request-Id", id)
	tp := r.Header.Get("traceparent")
	if tp != "" && validTraceparent(tp) {
		w.Header().Set("traceparent", tp) // continue the caller's trace context
	}
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	p, aerr := parseRequest(body, chat, s.sc.Engine.ServedModelName, s.cfg.MaxModelLen)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	prompt := len(p.promptIDs)
	maxTokens := p.maxTokens
	if maxTokens == 0 {
		maxTokens = s.cfg.MaxModelLen - prompt // vLLM's default: the rest of the context
	}
	target := maxTokens
	seed := s.opts.Seed ^ s.reqSeq.Add(1)*0x2545F4914F6CDD1D
	if eos := s.sc.Engine.EOS; eos != nil && !p.ignoreEOS {
		target = min(target, eos.Sample(newRand(seed)))
	}
	if p.tool != nil {
		target = min(target, simToolCallTokens) // the model ends its tool call (tools.go)
	}
	rep := s.route()
	st := &stream{r: rep, notify: make(chan struct{}, 1), reqID: id}
	st.traceID, st.parentID, _ = parseTraceparent(tp)
	st.seq = &Seq{ID: seed, PromptTokens: prompt, MaxTokens: p.maxTokens, Target: target, Sink: st,
		Structured: p.structured}
	if so := s.sc.Engine.StructuredOutput; !p.structured && so.Share > 0 {
		// A stream of its own, so the draw never shifts the EOS length's.
		st.seq.Structured = newRand(seed^0x6a09e667f3bcc908).Float64() < so.Share
	}
	s.enqueue(st, p.promptIDs)
	cw := &chunkWriter{chat: chat, model: p.model, created: strconv.FormatInt(time.Now().Unix(), 10), tool: p.tool}
	if chat {
		cw.id = "chatcmpl-" + id
	} else {
		cw.id = "cmpl-" + id
	}
	if p.stream {
		s.streamResponse(w, r, st, cw, p, seed)
	} else {
		s.fullResponse(w, r, st, cw, seed)
	}
}

// wait blocks until the stream has news, the client leaves or the server closes.
func (s *Server) wait(ctx context.Context, st *stream) bool {
	select {
	case <-st.notify:
		return true
	case <-ctx.Done():
		st.seq.Abort()
		return false
	case <-s.closed:
		return false
	}
}

func (s *Server) fullResponse(w http.ResponseWriter, r *http.Request, st *stream, cw *chunkWriter, seed uint64) {
	n := 0
	var chunks []int
	for {
		var finish string
		var done bool
		chunks, finish, done = st.take(chunks[:0])
		for _, k := range chunks {
			n += k
		}
		if done {
			if finish == "abort" {
				writeAPIError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "request aborted"})
				return
			}
			var text strings.Builder
			for i := 0; i < n; i++ {
				text.WriteString(tokenText(seed, i))
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(cw.full(nil, text.String(), finish, st.seq.PromptTokens, n))
			return
		}
		if !s.wait(r.Context(), st) {
			return
		}
	}
}

func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, st *stream, cw *chunkWriter, p *parsedRequest, seed uint64) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	out := newProxyWriter(w, s.sc.Engine.Proxy.BufferBytes, s.sc.Engine.Proxy.FlushInterval.Seconds()/s.opts.Speed)
	defer out.stop()
	out.flush()
	interval := max(1, s.sc.Engine.StreamInterval)
	sent, pending := 0, 0
	role := cw.chat
	var buf, text []byte
	var chunks []int
	for {
		var finish string
		var done bool
		chunks, finish, done = st.take(chunks[:0])
		if finish == "abort" {
			out.write([]byte("data: {\"error\":{\"message\":\"request aborted\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n"))
			out.close()
			return
		}
		buf = buf[:0]
		for ci, n := range chunks {
			pending += n
			last := done && ci == len(chunks)-1
			// vLLM's stream_interval: send every `interval` tokens, and always at the end.
			if pending < interval && !last {
				continue
			}
			text = text[:0]
			for i := sent; i < sent+pending; i++ {
				text = append(text, tokenText(seed, i)...)
			}
			fin := ""
			if last {
				fin = finish
			}
			buf = cw.sseChunk(buf, string(text), role, fin)
			role = false
			sent += pending
			pending = 0
		}
		if done {
			// The last tokens, the usage chunk and [DONE] leave in one write: the same
			// events, one syscall instead of three.
			if p.includeUsage {
				buf = cw.sseUsage(buf, st.seq.PromptTokens, sent)
			}
			out.write(append(buf, "data: [DONE]\n\n"...))
			out.close()
			return
		}
		if len(buf) > 0 {
			out.write(buf)
		}
		if !s.wait(r.Context(), st) {
			return
		}
	}
}

// proxyWriter models an application layer between the engine and the client: with a buffer
// it holds bytes until buffer_bytes accumulate or flush_interval passes (nginx-style proxy
// buffering); without one every event is flushed at once.
type proxyWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	limit    int
	interval time.Duration
	mu       sync.Mutex
	buf      []byte
	timer    *time.Timer
	closed   bool
}

func newProxyWriter(w http.ResponseWriter, limit int, intervalSec float64) *proxyWriter {
	p := &proxyWriter{w: w, rc: http.NewResponseController(w), limit: limit,
		interval: time.Duration(intervalSec * float64(time.Second))}
	return p
}

func (p *proxyWriter) write(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.limit <= 0 && p.interval <= 0 {
		p.w.Write(b)
		p.rc.Flush()
		return
	}
	p.buf = append(p.buf, b...)
	if p.limit > 0 && len(p.buf) >= p.limit {
		p.flushLocked()
		return
	}
	if p.interval > 0 && p.timer == nil {
		p.timer = time.AfterFunc(p.interval, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.timer = nil
			if !p.closed {
				p.flushLocked()
			}
		})
	}
}

func (p *proxyWriter) flushLocked() {
	if len(p.buf) > 0 {
		p.w.Write(p.buf)
		p.buf = p.buf[:0]
	}
	p.rc.Flush()
}

func (p *proxyWriter) flush() { p.mu.Lock(); p.rc.Flush(); p.mu.Unlock() }

// close flushes what is buffered; the handler returns right after.
func (p *proxyWriter) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.flushLocked()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
}

// stop makes sure no timer writes after the handler returned.
func (p *proxyWriter) stop() {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
}

// readBody reads a request body up to Options.MaxBodyBytes; over it, the error is a 413.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "RequestEntityTooLarge",
				Message: fmt.Sprintf("request body exceeds %d bytes", s.opts.MaxBodyBytes)}
		}
		return nil, badRequest("", "reading request body: %v", err)
	}
	return body, nil
}

// enqueue hands a new stream, its prompt hashed into blocks for the prefix cache, to its
// replica's engine loop and wakes the loop.
func (s *Server) enqueue(st *stream, promptIDs []uint32) {
	st.hashes = HashBlocks(promptIDs, s.cfg.BlockSize)
	st.arrival = s.virtNow()
	rep := st.r
	rep.load.Add(1)
	rep.mu.Lock()
	rep.inbox = append(rep.inbox, st)
	rep.mu.Unlock()
	select {
	case rep.wake <- struct{}{}:
	default:
	}
}
