package loadgen

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRawTransportReuseAndBodies(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			w.Write([]byte("b" + string(b)))
		default:
			w.Header().Set("Content-Length", "2")
			w.Write([]byte("ok"))
		}
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := &http.Client{Transport: &RawTransport{}}
	for i := 0; i < 5; i++ {
		for _, path := range []string{"/chunked", "/plain"} {
			resp, err := hc.Post(srv.URL+path, "text/plain", strings.NewReader("xyz"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := map[string]string{"/chunked": "abxyz", "/plain": "ok"}[path]
			if string(b) != want || resp.StatusCode != 200 {
				t.Fatalf("%s: %d %q", path, resp.StatusCode, b)
			}
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 10 sequential requests, want 1 (keep-alive reuse)", n)
	}
	// A body closed before its end closes the connection instead of draining it.
	resp, err := hc.Post(srv.URL+"/chunked", "text/plain", strings.NewReader("1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Get(srv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 after an abandoned body", n)
	}
}

// A server that closes every connection after one keep-alive response: the second request
// on a pooled connection finds it closed and must be sent again on a new one; from then on
// idle connections are probed before reuse (and not before).
func TestRawTransportStaleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var served atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.ReadAll(req.Body)
				served.Add(1)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}(c)
		}
	}()
	tr := &RawTransport{}
	hc := &http.Client{Transport: tr}
	for i := 0; i < 3; i++ {
		if i == 1 && tr.probe.Load() {
			t.Error("idle connections are probed before any was found closed")
		}
		resp, err := hc.Post("http://"+ln.Addr().String()+"/", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("body %q", b)
		}
	}
	if served.Load() != 3 {
		t.Errorf("served %d, want 3 (no request twice)", served.Load())
	}
	if !tr.probe.Load() {
		t.Error("idle connections are not probed after one was found closed under a request")
	}
}

func TestRawTransportCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: &RawTransport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("%q %v", buf, err)
	}
	cancel()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Fatal("read after cancel must fail")
	}
	resp.Body.Close()
}

func TestRawTransportTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Proto)
	}))
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	hc := &http.Client{Transport: &RawTransport{TLSConfig: cfg.Clone(), Dialer: &net.Dialer{Timeout: 5 * time.Second}}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "secure HTTP/1.1" {
		t.Errorf("%q", b)
	}
}

// The probe before reuse: an idle connection the server has closed, or on which it sent
// bytes nobody asked for, is not reused; one it keeps open is. The server answers one
// request with keep-alive and then does what the case says; the probe is repeated until
// it sees that (the FIN or the bytes travel on their own) or a bound passes.
func TestIdleConnectionProbe(t *testing.T) {
	for _, c := range []struct {
		name  string
		after func(net.Conn)
		alive bool
	}{
		{"server keeps it open", func(net.Conn) {}, true},
		{"server closes it", func(c net.Conn) { c.Close() }, false},
		{"server sends unasked bytes", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\n\r\n") }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			hold := make(chan struct{})
			defer close(hold)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					close(done)
					return
				}
				defer conn.Close()
				if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
					io.ReadAll(req.Body)
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
				c.after(conn)
				close(done)
				<-hold
			}()
			tr := &RawTransport{}
			resp, err := (&http.Client{Transport: tr}).Post("http://"+ln.Addr().String()+"/", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			<-done
			tr.mu.Lock()
			var pc *rawConn
			for _, l := range tr.idle {
				pc = l[0]
			}
			tr.mu.Unlock()
			if pc == nil {
				t.Fatal("the connection was not pooled after a keep-alive response read to its end")
			}
			got := pc.alive()
			for i := 0; got && !c.alive && i < 2000; i++ {
				time.Sleep(time.Millisecond)
				got = pc.alive()
			}
			if got != c.alive {
				t.Errorf("alive() = %v, want %v", got, c.alive)
			}
		})
	}
}
