package llamacpp_test

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// gateway is what production puts between a client and the engine (an API gateway, an
// auth proxy, a rate limiter, a router), reduced to the two things these cases inject: it
// holds every API request for delay before forwarding it, and answers every shedEvery-th
// API request 503 at once without forwarding it (0: never). Responses stream through
// unbuffered. The engine's /metrics is scraped on its own port, around the gateway, as an
// operator's Prometheus scrapes the engine.
func gateway(t *testing.T, upstream string, delay time.Duration, shedEvery int64) (string, *atomic.Int64) {
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
			t.Logf("gateway: %s %s: %v", r.Method, r.URL.Path, err)
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
	addr := freePort(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + addr, &shed
}

// gatewayRuns is how many times each gateway case runs: its owner must not depend on the
// run.
const gatewayRuns = 3

// TestGatewayDelay: a gateway holds each request before forwarding it to an idle four-slot
// llama-server at light load. Written from the cause: every task's first token comes
// delay later than the idle server's, the engine never defers a request (its slots are
// free) and its own prompt processing (timings.prompt_ms) stays at the idle figure, so the
// time over the TTFT bound is outside the engine: application, with the client's TTFT and
// the engine's side by side in the verdict. The delay is sized past the contract's TTFT
// bound (from the same calibration), so every task misses it for the delay alone.
func TestGatewayDelay(t *testing.T) {
	s := start(t, "-np", "4", "-c", "4096")
	c := calibrate(t, s, promptTokens, outputTokens)
	bound := 3*c.ttft + (c.e2e-c.ttft)/4 // chatContract's TTFT p99 bound
	delay := time.Duration(max(400, 1.5*bound)) * time.Millisecond
	gw, _ := gateway(t, s.url, delay, 0)
	rate := lightRate(c)
	for i := range gatewayRuns {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			r := pel(t, gw, s.url+"/metrics", delayContract(c, rate, delay))
			logRun(t, r)
			if o := owner(r.ev); o != evidence.LayerApplication {
				t.Errorf("owner %q, want application (a %s hold in front of an idle engine)", o, delay)
			}
			if w, ok := sigVal(r.ev, evidence.SigWaitingMax); !ok || w != 0 {
				t.Errorf("engine waiting max %v (present %v): the engine's slots were free", w, ok)
			}
			// The client's time to first token and the engine's own prompt processing, side
			// by side, each with its figure: in the finding, and in the verdict unless a
			// failure of the engine's own rejected tasks (2026 builds fail some of the
			// random-weight model's gibberish against the chat format with a 5xx), which the
			// verdict then names first.
			gap := regexp.MustCompile(`\d+ ms after its send \(p50\), while the engine's own prompt processing takes \d+ ms`)
			found := false
			for _, f := range r.ev.Findings {
				if f.ID == "wait-before-engine" && f.Severity != evidence.SeverityInfo && gap.MatchString(f.Symptom) {
					found = true
				}
			}
			if !found {
				t.Errorf("no wait-before-engine finding with the client's time beside the engine's")
			}
			if errRate, _ := sigVal(r.ev, evidence.SigErrorRate); errRate == 0 {
				if d := r.ev.Decision; d == nil || d.Finding != "wait-before-engine" {
					t.Errorf("the decision does not rest on the wait before the engine: %+v", d)
				}
				if !gap.MatchString(r.ev.Verdict) {
					t.Errorf("the verdict does not set the client's time beside the engine's: %s", r.ev.Verdict)
				}
			}
		})
	}
}

// delayContract bounds TTFT as chatContract does and every other objective as
// healthyContract does at the same load (the delay held in front adds to the whole answer
// too): the hold is the only thing that can cross a bound. A CPU engine's co-batched
// prefills stall token gaps at any load, and a tighter token-gap bound would be missed
// for that reason as well.
func delayContract(c idle, rate float64, delay time.Duration) string {
	const d = 20 * time.Second
	n := int(math.Ceil(rate * d.Seconds()))
	k := float64(sharers(lightLoad, n))
	ttft := 3*c.ttft + (c.e2e-c.ttft)/4
	itl := idleSpread * (4*c.itl + k*c.ttft)
	e2e := 2*idleSpread*(k*c.e2e+c.ttft) + idleSpread*(4*(c.e2e-c.ttft)+k*c.ttft) + float64(delay.Milliseconds())
	return contractBounds("gateway-delay", c, fmt.Sprintf("{process: poisson, rate: %.3f}", rate), d, promptTokens, outputTokens, ttft, itl, e2e)
}

// TestGatewaySheds: a gateway answers every fourth request 503 at once, in front of an idle
// four-slot llama-server at light load, under a contract such a server meets
// (healthyContract); the contract retries 5xx up to three attempts within
// the default run-wide retry budget (a fifth of the tasks, at least 10 retries). Written
// from the cause: the engine never queues or refuses anything; a quarter of all attempts,
// retries included, are refused, so a third of the tasks need a retry (n/4 + n/16 + ...),
// more than the budget's fifth once the run holds more than 30 tasks (n/3 > max(10, n/5)):
// short answers (8 tokens) at light load give ~40 tasks in 30 s, so the budget runs out
// and the tasks refused a retry fail with 503. The owner is the application layer (the
// refusals are in front of the engine) or none; never scheduling. The verdict names the
// 503s, the retries and that the retry budget ran out.
func TestGatewaySheds(t *testing.T) {
	const output = 8
	s := start(t, "-np", "4", "-c", "4096")
	c := calibrate(t, s, promptTokens, output)
	gw, shed := gateway(t, s.url, 0, 4)
	rate := lightRate(c)
	for i := range gatewayRuns {
		t.Run(fmt.Sprint("run", i+1), func(t *testing.T) {
			before := shed.Load()
			ct := healthyContract("gateway-shed", c, lightLoad, fmt.Sprintf("{process: poisson, rate: %.3f}", rate), 30*time.Second, promptTokens, output) +
				"retry: {max_attempts: 3, on: [5xx], backoff: 20ms}\n"
			r := pel(t, gw, s.url+"/metrics", ct)
			logRun(t, r)
			t.Logf("the gateway shed %d requests", shed.Load()-before)
			switch o := owner(r.ev); o {
			case evidence.LayerApplication, "":
			default:
				t.Errorf("owner %q, want application or none: the engine never queued", o)
			}
			if !hasFinding(r.ev, "shed-before-engine") {
				t.Errorf("no shed-before-engine finding")
			}
			v := r.ev.Verdict
			for _, want := range []string{"503", "retr", "retry budget"} {
				if !strings.Contains(v, want) {
					t.Errorf("verdict lacks %q: %s", want, v)
				}
			}
		})
	}
}
