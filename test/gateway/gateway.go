// Package gateway is a small HTTP proxy for the real-engine suites: what production puts
// between a client and the engine (an API gateway, an auth proxy, a rate limiter, a
// router), reduced to the two causes those suites inject, a hold before forwarding and
// refusals in front of the engine. It binds loopback only.
package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// Start runs a gateway in front of upstream until the test ends. It holds every API
// request for delay before forwarding it, and answers every shedEvery-th API request 503
// at once without forwarding it (0: never). Responses stream through
// unbuffered. The engine's /metrics is scraped on its own port, around the gateway, as an
// operator's Prometheus scrapes the engine.
func Start(t testing.TB, upstream string, delay time.Duration, shedEvery int64) (string, *atomic.Int64) {
	t.Helper()
	// A fresh upstream connection per request, as nginx's proxy_pass does by default.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	var n, shed atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only inference calls are shed or held: the client's GET /v1/models, which a
		// gateway usually answers from its own route table, passes straight through.
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/") {
			if shedEvery > 0 && n.Add(1)%shedEvery == 0 {
				shed.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error":{"message":"upstream overloaded: request shed by the gateway","type":"overloaded"}}`)
				return
			}
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		req.ContentLength = r.ContentLength
		resp, err := tr.RoundTrip(req)
		if err != nil {
			if r.Context().Err() == nil {
				t.Logf("gateway: %s %s: %v", r.Method, r.URL.Path, err)
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			if k != "Content-Length" && k != "Transfer-Encoding" && k != "Connection" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(resp.StatusCode)
		// Each read is passed on at once: an SSE stream goes through event by event.
		f, _ := w.(http.Flusher)
		buf := make([]byte, 32<<10)
		for {
			k, err := resp.Body.Read(buf)
			if k > 0 {
				if _, werr := w.Write(buf[:k]); werr != nil {
					return
				}
				if f != nil {
					f.Flush()
				}
			}
			if err != nil {
				if err != io.EOF && r.Context().Err() == nil {
					t.Logf("gateway: %s %s: reading the engine's response: %v", r.Method, r.URL.Path, err)
				}
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	// Shutdown waits for the handlers (bounded), so none logs after the test has ended;
	// Close then cuts whatever a stuck upstream still holds.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	})
	return "http://" + ln.Addr().String(), &shed
}

// CheckSheds is the expectation of one run behind a gateway that sheds every fourth
// request 503 in front of an engine with room, the contract retrying 5xx: the owner is
// the application layer (the refusals are in front of the engine) or none, never the
// engine's scheduling; the shed-before-engine finding holds; the verdict names the 503s,
// the retries and that the run's retry budget ran out.
func CheckSheds(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	switch o := ev.OwnerLayer; {
	case o == nil, *o == evidence.LayerApplication:
	default:
		t.Errorf("owner %q, want application or none: the engine never queued", *o)
	}
	if !HasFinding(ev, "shed-before-engine") {
		t.Errorf("no shed-before-engine finding")
	}
	for _, want := range []string{"503", "retr", "retry budget"} {
		if !strings.Contains(ev.Verdict, want) {
			t.Errorf("verdict lacks %q: %s", want, ev.Verdict)
		}
	}
}

// HasFinding reports whether ev holds finding id above info severity (a watched finding
// explains nothing at the run's load).
func HasFinding(ev *evidence.Evidence, id string) bool {
	for _, f := range ev.Findings {
		if f.ID == id && f.Severity != evidence.SeverityInfo {
			return true
		}
	}
	return false
}
