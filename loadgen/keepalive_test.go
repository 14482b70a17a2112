package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// closingServer speaks like llama.cpp's llama-server as measured (b4750): it answers with
// "Connection: keep-alive" and a chunked SSE body, then closes the connection. With
// closeOnSecond it instead reads a second request on the connection and closes without a
// byte of response: the race the resend rule exists for.
type closingServer struct {
	ln            net.Listener
	closeOnSecond bool
	conns         atomic.Int32
	requests      atomic.Int32
	wg            sync.WaitGroup
}

func newClosingServer(t *testing.T, closeOnSecond bool) *closingServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &closingServer{ln: ln, closeOnSecond: closeOnSecond}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *closingServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	s.requests.Add(1)
	body := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	if s.closeOnSecond {
		if req2, err := http.ReadRequest(br); err == nil {
			io.Copy(io.Discard, req2.Body)
		}
	}
}

// A server that closes keep-alive connections costs no task. Sequential
// tasks (each reusing the previous connection) and concurrent ones all complete.
func TestServerClosingKeepAlive(t *testing.T) {
	for _, closeOnSecond := range []bool{false, true} {
		t.Run(fmt.Sprint("closeOnSecond=", closeOnSecond), func(t *testing.T) {
			s := newClosingServer(t, closeOnSecond)
			hc := DefaultHTTPClient()
			c := NewClient(ClientConfig{BaseURL: "http://" + s.ln.Addr().String(), Model: "m", HTTP: hc})
			req := &workload.Request{MaxTokens: 4, Prompt: "p"}
			body, _ := c.Body(req)
			var retried atomic.Int32
			run := func() {
				rec := &record.Record{}
				c.Do(context.Background(), req, body, rec, "")
				if rec.Status != record.StatusOK {
					t.Errorf("task failed: %s %s", rec.Status, rec.Error)
				}
				if rec.HasFlag(record.FlagConnRetried) {
					retried.Add(1)
				}
			}
			for range 20 {
				run()
			}
			var wg sync.WaitGroup
			for range 4 {
				for range 8 {
					wg.Add(1)
					go func() { defer wg.Done(); run() }()
				}
				wg.Wait()
			}
			if closeOnSecond && retried.Load() == 0 {
				t.Error("no attempt was resent on a fresh connection, though the server closed each one under the next request")
			}
			hc.CloseIdleConnections()
			if got := s.requests.Load(); got != 52 {
				t.Errorf("server answered %d requests for 52 tasks", got)
			}
		})
	}
}

// The resend happens once, on a freshly dialled connection: when that fails too, the task
// fails (a server that closes every connection before answering is down, not closing idle
// connections).
func TestResendOnlyOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if n > 1 || i > 0 {
						return // every later request: close without a byte
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	hc := &http.Client{Transport: &RawTransport{}}
	get := func() error {
		resp, err := hc.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("x"))
		if err == nil {
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("second request succeeded against a server that answers nothing")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the reused one, then one fresh resend)", n)
	}
}
