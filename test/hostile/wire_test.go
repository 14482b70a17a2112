package hostile

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Servers that bend the protocol: answers that did not end as completions must not be
// accepted, and valid HTTP and SSE that pel mishandled must be read as the specifications
// say. Each expectation follows from what the server sends.

// finishStream is okStream's shape with finish_reason fr.
func finishStream(fr string) string {
	return `data: {"choices":[{"index":0,"delta":{},"finish_reason":` + fr + `}]}`
}

// TestFailedAnswersRejected: finish_reason "error" or "abort", a non-streamed answer with
// finish_reason null, a stream without content whose usage claims 16 tokens: none is a
// completion, every task fails in the class that names why.
func TestFailedAnswersRejected(t *testing.T) {
	for _, c := range []struct {
		name, class string
		answer      http.HandlerFunc
		flag        string
	}{
		{"finish_reason error", record.ErrFinishError, func(w http.ResponseWriter, r *http.Request) {
			sse(w, content, finishStream(`"error"`), usage("30", "1"), done)
		}, ""},
		{"finish_reason abort", record.ErrAborted, func(w http.ResponseWriter, r *http.Request) {
			sse(w, content, finishStream(`"abort"`), usage("30", "1"), done)
		}, ""},
		{"non-streamed finish_reason null", record.ErrNoFinish, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":null}],"usage":{"prompt_tokens":30,"completion_tokens":1}}`))
		}, record.FlagNotStreamed},
		{"no content, usage 16", record.ErrInvalid, func(w http.ResponseWriter, r *http.Request) {
			sse(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, finish, usage("30", "16"), done)
		}, record.FlagUsageContradicts},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := api(t, c.answer)
			d, to := 2*time.Second, 5*time.Second
			res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
			if res.code != 1 {
				t.Errorf("exit %d, want 1 (every request failed); stderr %s", res.code, tail(res.stderr))
			}
			every(t, records(t, dir), "rejected as "+c.class, func(r *record.Record) bool {
				return !r.Accepted && r.ErrorClass == c.class && (c.flag == "" || r.HasFlag(c.flag)) && r.OutputTokens <= 1
			})
		})
	}
}

// TestRunningUsageDown: a running usage of 16, 32, 48, 64 then a final usage of 1. Generated
// counts only grow: the stream's count, 64, is kept and the task flagged.
func TestRunningUsageDown(t *testing.T) {
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		var ev []string
		for i := 1; i <= 4; i++ {
			ev = append(ev, fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":"hello "}}],"usage":{"prompt_tokens":30,"completion_tokens":%d}}`, 16*i))
		}
		sse(w, append(ev, finish, usage("30", "1"), done)...)
	})
	d, to := 2*time.Second, 5*time.Second
	c := strings.Replace(contractYAML(4, d, to, ""), "output_tokens: 8", "output_tokens: 64", 1)
	res, dir := run(t, target, c, d, to)
	if res.code != 0 {
		t.Errorf("exit %d; stderr %s", res.code, tail(res.stderr))
	}
	every(t, records(t, dir), "ok with the stream's 64 tokens, flagged", func(r *record.Record) bool {
		return r.OK() && r.OutputTokens == 64 && r.HasFlag(record.FlagUsageContradicts)
	})
}

// TestTimeoutAfterDone: a chunk header declares 2^63-1 bytes, the whole answer and [DONE]
// follow, and the body never ends. The attempt runs out its timeout: a timeout, not an
// accepted task.
func TestTimeoutAfterDone(t *testing.T) {
	body := strings.Join([]string{content, finish, usage("30", "1"), done}, "\n\n") + "\n\n"
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\n%s", body)
		bw.Flush()
		conn.Read(make([]byte, 1)) // until the client closes
	})
	d, to := 2*time.Second, 2*time.Second
	res, dir := run(t, target, contractYAML(2, d, to, ""), d, to)
	if res.code != 1 {
		t.Errorf("exit %d, want 1; stderr %s", res.code, tail(res.stderr))
	}
	every(t, records(t, dir), "a timeout", func(r *record.Record) bool {
		return !r.Accepted && r.Status == record.StatusTimeout && r.ErrorClass == record.ErrTimeout
	})
}

// TestNotStreamed: a server that ignores "stream": true and answers one JSON body after a
// delay. The client's first usable token is that body: TTFT is at least the delay, the TTFT
// bound of 500 ms is missed by every task, and evidence and verdict say the answers were not
// streamed.
func TestNotStreamed(t *testing.T) {
	const delay = 1500 * time.Millisecond
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":2}}`))
	})
	d, to := 2*time.Second, 10*time.Second
	_, dir := run(t, target, contractYAML(2, d, to, "slo:\n  ttft: {max: 500ms}\n"), d, to)
	every(t, records(t, dir), "completed, not streamed, TTFT from the body, rejected on TTFT", func(r *record.Record) bool {
		ttft, ok := r.TTFTFromSent()
		return r.OK() && r.HasFlag(record.FlagNotStreamed) && ok && ttft >= delay && !r.Accepted &&
			len(r.Reasons) == 1 && r.Reasons[0] == "slo ttft max 500ms"
	})
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ev.Signal(evidence.SigTTFTP99); !ok || s.Value < float64(delay.Milliseconds()) {
		t.Errorf("TTFT p99 %v (present %v), want at least %v", s.Value, ok, delay)
	}
	if s, ok := ev.Signal(evidence.SigFlagRate(record.FlagNotStreamed)); !ok || s.Value != 1 {
		t.Errorf("not_streamed rate %v (present %v), want 1", s.Value, ok)
	}
	// The verdict names it: the application layer sends answers whole.
	if len(ev.Findings) == 0 || ev.Findings[0].ID != "not-streamed" || ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerApplication {
		t.Errorf("top finding %v, owner %v; verdict %s", ev.Findings, ev.OwnerLayer, ev.Verdict)
	}
}

// TestInterimResponses: 100 Continue and 103 Early Hints before the final response are
// valid HTTP (RFC 9110 §15.2): every task completes.
func TestInterimResponses(t *testing.T) {
	body := strings.Join([]string{content, content, finish, usage("30", "2"), done}, "\n\n") + "\n\n"
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n")
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		bw.Flush()
	})
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 0 {
		t.Errorf("exit %d; stderr %s", res.code, tail(res.stderr))
	}
	every(t, records(t, dir), "accepted", func(r *record.Record) bool { return r.OK() && r.Accepted && r.HTTPStatus == 200 })
}

// TestBareCRStream: SSE whose lines end in a bare CR (allowed by the SSE specification),
// 8 tokens written 250 ms apart. Each event is complete when its blank line arrives, so the
// client times each one apart; a parser that waits for an LF sees them in bursts (a buffer
// full at a time, or all at the end), with gaps of ~0.
func TestBareCRStream(t *testing.T) {
	const n, gap = 8, 250 * time.Millisecond
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for range n {
			fmt.Fprintf(w, "%s\r\r", content)
			rc.Flush()
			time.Sleep(gap)
		}
		fmt.Fprintf(w, "%s\r\r%s\r\r%s\r\r", finish, usage("30", "8"), done)
	})
	d, to := 2*time.Second, 10*time.Second
	_, dir := run(t, target, contractYAML(1, d, to, ""), d, to)
	every(t, records(t, dir), "ok, each token timed on its own", func(r *record.Record) bool {
		if !r.OK() || len(r.ChunkUS) != n {
			return false
		}
		// A burst puts two events in one read: a gap under 1 ms. Allow two of seven for a
		// client that was descheduled past a 250 ms gap on a loaded machine.
		bursts := 0
		for i := 1; i < n; i++ {
			if r.ChunkUS[i]-r.ChunkUS[i-1] < 1000 {
				bursts++
			}
		}
		return bursts <= 2
	})
}
