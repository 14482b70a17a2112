package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RawTransport is a small HTTP/1.1 client transport built for many concurrent streams to
// one server. net/http's Transport runs two goroutines per connection (read and write
// loops) with 4 KiB buffers each; with 10,000 open streams that is ~29 KiB per stream. Here
// the caller's goroutine does everything: it writes the request in one write, parses the
// response with http.ReadResponse over a small bufio.Reader, and reads the body itself.
// Cancellation uses context.AfterFunc (no goroutine until it fires). Measured: see
// bench/loadgen.
//
// Connections are kept alive and reused LIFO. An idle connection older than IdleTimeout is
// not reused (servers close idle keep-alive connections: uvicorn, behind vLLM and SGLang,
// after 5 s), nor, once the transport has met a server that closes them, one the server
// has already closed (checked without blocking before reuse). Some servers advertise keep-alive and close after every streamed response
// (llama.cpp's llama-server), so a reused connection can still be closed under the request.
// net/http's rule (transport.go: nothingWrittenError, errServerClosedIdle) applies: when a
// request fails on a reused connection before a single response byte arrives, the server
// cannot have answered it, and it is sent once more on a freshly dialled connection, never
// on another pooled one (that could be stale too). The attempt is flagged conn_retried.
//
// A response's status line and headers are bounded by MaxResponseHeaderBytes.
type RawTransport struct {
	Dialer           *net.Dialer
	TLSConfig        *tls.Config   // for https targets; nil: defaults
	ReadBufferSize   int           // per connection; default 1024
	IdleTimeout      time.Duration // default 4 s
	MaxIdlePerHost   int           // default 1<<16
	DisableKeepAlive bool

	mu   sync.Mutex
	idle map[string][]*rawConn
	// probe is set once a reused connection was found closed under a request: from then
	// on every idle connection is probed before reuse. A server that keeps its connections
	// open never pays the probe's syscall; one that closes them (llama.cpp's, after every
	// streamed response) costs one resend before the probe spares the rest.
	probe atomic.Bool
}

type rawConn struct {
	c         net.Conn
	lim       *limitConn // c, counting bytes while headers are read
	br        *bufio.Reader
	key       string
	tls       bool
	idleSince time.Time
}

// limitConn fails reads with errHeaderTooLong once left reaches 0; left < 0 means no limit.
type limitConn struct {
	net.Conn
	left int64
}

var errHeaderTooLong = fmt.Errorf("response status line and headers over %d KiB (pel's bound, MaxResponseHeaderBytes)", MaxResponseHeaderBytes>>10)

func (l *limitConn) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.Conn.Read(p)
	}
	if l.left == 0 {
		return 0, errHeaderTooLong
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.Conn.Read(p)
	l.left -= int64(n)
	return n, err
}

func (t *RawTransport) dial(ctx context.Context, u *http.Request) (*rawConn, error) {
	host, port := u.URL.Hostname(), u.URL.Port()
	if port == "" {
		port = "80"
		if u.URL.Scheme == "https" {
			port = "443"
		}
	}
	d := t.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	if u.URL.Scheme == "https" {
		cfg := t.TLSConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	n := t.ReadBufferSize
	if n <= 0 {
		n = 1024
	}
	lim := &limitConn{Conn: c, left: -1}
	return &rawConn{c: c, lim: lim, br: bufio.NewReaderSize(lim, n), tls: u.URL.Scheme == "https"}, nil
}

func connKey(r *http.Request) string { return r.URL.Scheme + "://" + r.URL.Host }

func (t *RawTransport) getIdle(key string) *rawConn {
	idleTimeout := t.IdleTimeout
	if idleTimeout <= 0 {
		idleTimeout = 4 * time.Second
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		l := t.idle[key]
		if len(l) == 0 {
			return nil
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[key] = l[:len(l)-1]
		if time.Since(pc.idleSince) < idleTimeout && (!t.probe.Load() || pc.alive()) {
			return pc
		}
		pc.c.Close()
	}
}

// alive checks, without blocking, that the server has not closed an idle connection (or
// sent bytes nobody asked for). TLS connections are not probed: a read there may consume a
// record; the resend rule covers them, as it covers a close that arrives after the probe.
func (pc *rawConn) alive() bool {
	if pc.tls {
		return true
	}
	if pc.br.Buffered() > 0 {
		return false
	}
	stale, _ := peekIdle(pc.c)
	return !stale
}

func (t *RawTransport) putIdle(pc *rawConn) {
	if t.DisableKeepAlive {
		pc.c.Close()
		return
	}
	maxIdle := t.MaxIdlePerHost
	if maxIdle <= 0 {
		maxIdle = 1 << 16
	}
	pc.idleSince = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle == nil {
		t.idle = map[string][]*rawConn{}
	}
	if len(t.idle[pc.key]) >= maxIdle {
		pc.c.Close()
		return
	}
	t.idle[pc.key] = append(t.idle[pc.key], pc)
}

// CloseIdleConnections closes every idle connection.
func (t *RawTransport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, l := range t.idle {
		for _, pc := range l {
			pc.c.Close()
		}
		delete(t.idle, k)
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// writeRequest writes the request line, headers and body in one write.
func writeRequest(w io.Writer, r *http.Request, body []byte) error {
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	defer func() { *bp = b[:0]; bufPool.Put(bp) }()
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, r.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.URL.Host...)
	b = append(b, "\r\n"...)
	if r.Header.Get("User-Agent") == "" {
		b = append(b, "User-Agent: pel\r\n"...)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if len(body) > 0 || r.Method == http.MethodPost || r.Method == http.MethodPut {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	if len(body) > largeBody {
		// A long body (a conversation carried from call to call) is written as it is, not
		// copied into the pooled buffer, which would keep its size for every later request.
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	}
	b = append(b, body...)
	_, err := w.Write(b)
	return err
}

// largeBody is the request body beyond which writeRequest writes it on its own.
const largeBody = 64 << 10

// RoundTrip implements http.RoundTripper.
func (t *RawTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q", req.URL.Scheme)
	}
	ctx := req.Context()
	key := connKey(req)
	// The body is read once; keep it for the one resend on a stale connection.
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if req.ContentLength > 0 {
			// Sized once: io.ReadAll's doubling would hold up to twice a long body.
			body = make([]byte, req.ContentLength)
			_, err = io.ReadFull(req.Body, body)
		} else {
			body, err = io.ReadAll(req.Body)
		}
		if err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	for try := 0; ; try++ {
		var pc *rawConn
		if try == 0 {
			pc = t.getIdle(key) // a resend always dials: another pooled connection may be stale too
		}
		reused := pc != nil
		if pc == nil {
			var err error
			if pc, err = t.dial(ctx, req); err != nil {
				return nil, err
			}
			pc.key = key
		}
		// On cancel, a past deadline unblocks any read or write on the connection.
		stop := context.AfterFunc(ctx, func() { pc.c.SetDeadline(time.Unix(1, 0)) })
		pc.lim.left = MaxResponseHeaderBytes
		err := writeRequest(pc.c, req, body)
		if err == nil {
			_, err = pc.br.Peek(1)
		}
		if err != nil {
			stop()
			pc.c.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if reused && try == 0 {
				// Closed under us before any response byte: the server cannot have answered.
				t.probe.Store(true)
				if ai, ok := ctx.Value(attemptKey{}).(*attemptInfo); ok {
					ai.connRetried = true
				}
				continue
			}
			return nil, err
		}
		resp, err := readFinalResponse(pc.br, req)
		exceeded := pc.lim.left == 0
		pc.lim.left = -1 // the body has its own bounds (MaxStreamBytes, MaxJSONBody)
		if err != nil {
			stop()
			pc.c.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if exceeded || errors.Is(err, errHeaderTooLong) {
				return nil, errHeaderTooLong
			}
			return nil, err
		}
		resp.Body = &rawBody{body: resp.Body, pc: pc, t: t, stop: stop, reuse: !resp.Close && !t.DisableKeepAlive}
		return resp, nil
	}
}

// rawBody returns the connection to the pool when the body was read to its end, and
// closes it otherwise (draining a stream we gave up on could take as long as the stream).
type rawBody struct {
	body  io.ReadCloser
	pc    *rawConn
	t     *RawTransport
	stop  func() bool
	eof   bool
	done  bool
	reuse bool
}

func (b *rawBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("read on closed body")
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *rawBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	notCancelled := b.stop()
	if b.eof && b.reuse && notCancelled {
		b.body.Close()
		b.t.putIdle(b.pc)
		return nil
	}
	return b.pc.c.Close()
}
