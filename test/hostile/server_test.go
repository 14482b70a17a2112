package hostile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Items 1, 2 and 12: usage a server cannot mean. completion_tokens 2^63-1 made spreadTokens
// overflow and loop forever (no timeout, no Ctrl-C, requests.jsonl empty); 2e9 fed 10^10
// ITLs to the histograms after the load; negative usage printed "output -240 tok/s".
func TestImplausibleUsage(t *testing.T) {
	for _, c := range []struct {
		name, prompt, completion, errHas string
	}{
		{"item 1: completion_tokens 2^63-1", "30", "9223372036854775807", "implausible usage"},
		{"item 2: completion_tokens 2e9", "30", "2000000000", "implausible usage"},
		{"item 12: negative usage", "-3", "-240", "negative usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := api(t, func(w http.ResponseWriter, r *http.Request) {
				sse(w, content, content, finish, usage(c.prompt, c.completion), done)
			})
			d, to := 2*time.Second, 5*time.Second
			res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
			if res.code != 1 || !strings.Contains(res.stderr, "every request failed") {
				t.Errorf("exit %d, stderr %s", res.code, tail(res.stderr))
			}
			recs := records(t, dir)
			every(t, recs, "invalid with "+c.errHas, func(r *record.Record) bool {
				return r.Status == record.StatusInvalid && r.ErrorClass == record.ErrInvalid && strings.Contains(r.Error, c.errHas) &&
					r.OutputTokens >= 0 && r.OutputTokens <= record.MaxTokens
			})
			ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
			if err != nil || ev.Workload.OutputTokensPerS < 0 {
				t.Errorf("output tokens/s %v (%v)", ev.Workload.OutputTokensPerS, err)
			}
		})
	}
}

// A response header that never ends (one endless line, or endless lines): unbounded, it
// fills memory in ~2 s and loses every record.
func TestEndlessHeader(t *testing.T) {
	for _, c := range []struct{ name, unit string }{
		{"one endless line", "X-Pad: " + strings.Repeat("a", 4096)},
		{"endless lines", "X-Pad: a\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chunk := []byte(strings.Repeat(c.unit, 64))
			target := api(t, func(w http.ResponseWriter, r *http.Request) {
				conn, bw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
				for {
					if _, err := bw.Write(chunk); err != nil || bw.Flush() != nil {
						return // the client gave up: what we want
					}
				}
			})
			d, to := 2*time.Second, 10*time.Second
			res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
			if res.code != 1 {
				t.Errorf("exit %d, stderr %s", res.code, tail(res.stderr))
			}
			every(t, records(t, dir), "a connection error naming the header bound", func(r *record.Record) bool {
				return r.Status == record.StatusConnError && strings.Contains(r.Error, "MaxResponseHeaderBytes")
			})
		})
	}
}

// A token stream that never ends: unbounded, chunk_us/chunk_tokens grow without bound (1.7 GB
// in 30 s, then out of memory), and with a timeout the run survives but writes 30 MB lines.
func TestEndlessStream(t *testing.T) {
	endless := func(event string) http.HandlerFunc {
		buf := bytes.Repeat([]byte(event+"\n\n"), max(1, 16<<10/len(event)))
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for r.Context().Err() == nil {
				if _, err := w.Write(buf); err != nil {
					return
				}
			}
		}
	}
	// 2 KiB of text per event reaches MaxStreamBytes in ~130k events (past MaxChunkTimings)
	// without spending a minute decoding small ones.
	long := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 2048) + `"}}]}`
	for _, c := range []struct {
		name    string
		event   string
		timeout time.Duration
		rate    float64
	}{
		{"ended by the timeout", content, 8 * time.Second, 2},
		{"ended by the byte bound", long, 120 * time.Second, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := api(t, endless(c.event))
			d := 2 * time.Second
			res, dir := run(t, target, contractYAML(c.rate, d, c.timeout, ""), d, c.timeout)
			if res.code != 1 {
				t.Errorf("exit %d, stderr %s", res.code, tail(res.stderr))
			}
			recs := records(t, dir)
			every(t, recs, "failed (timeout or cut) and flagged truncated", func(r *record.Record) bool {
				return (r.Status == record.StatusTimeout || (r.Status == record.StatusStreamError && strings.Contains(r.Error, "MaxStreamBytes"))) &&
					len(r.ChunkUS) <= record.MaxChunkTimings && r.HasFlag(record.FlagTruncatedRecord)
			})
			b, _ := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
			for i, line := range bytes.Split(b, []byte("\n")) {
				if len(line) > 4<<20 {
					t.Errorf("line %d is %d bytes", i+1, len(line))
				}
			}
		})
	}
}

// Items 13 and 14 (gzip): server error text reaches the terminal and the records without
// escape sequences, and a gzip-encoded error body is decoded instead of recorded as binary.
func TestServerErrorText(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("upstream exploded"))
	zw.Close()
	var n atomic.Int64
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(502)
			w.Write(gz.Bytes())
			return
		}
		w.WriteHeader(500)
		w.Write([]byte("\x1b]0;pwned\x07\x1b[2J\x1b[Hthe screen is mine\r\n\x9b31m"))
	})
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 1 {
		t.Errorf("exit %d", res.code)
	}
	for _, s := range []string{res.stdout, res.stderr} {
		// A lone 0x9b byte (8-bit CSI) is invalid UTF-8: any invalid byte, or its U+FFFD, counts.
		if strings.ContainsAny(s, "\x1b\x07\u009b\ufffd") || !utf8.ValidString(s) {
			t.Errorf("terminal escapes printed: %q", tail(s))
		}
	}
	every(t, records(t, dir), "a clean error", func(r *record.Record) bool {
		return !strings.ContainsAny(r.Error, "\x1b\x07\x1f\ufffd") && utf8.ValidString(r.Error) && (strings.Contains(r.Error, "the screen is mine") || r.Error == "http 502: upstream exploded")
	})
}

// A redirect: followed, answers from another server would be recorded as the target's and
// the Bearer key would go to another port of the same host.
func TestRedirect(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		okStream(w, r)
	}))
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
	})
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 1 {
		t.Errorf("exit %d", res.code)
	}
	every(t, records(t, dir), "a redirect naming the Location", func(r *record.Record) bool {
		return r.ErrorClass == record.ErrRedirect && strings.Contains(r.Error, other+"/v1/chat/completions")
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) > 0 {
		t.Errorf("the other server got %d requests (Authorization %q)", len(seen), seen[0])
	}
}

// End to end: llama.cpp's context error on a 200 stream fails the task.
func TestStreamErrorLine(t *testing.T) {
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, `error: {"code":400,"message":"the request exceeds the available context size","type":"invalid_request_error"}`, done)
	})
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 1 {
		t.Errorf("exit %d", res.code)
	}
	every(t, records(t, dir), "refused", func(r *record.Record) bool {
		return !r.Accepted && r.ErrorClass == record.ErrRefused && strings.Contains(r.Error, "exceeds the available context size")
	})
}

// A server that advertises keep-alive and closes the connection after each
// streamed response (llama.cpp's llama-server, measured: 22% of tasks failed with EOF) costs
// no task.
func TestServerClosesKeepAlive(t *testing.T) {
	body := content + "\n\n" + `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":1}}` + "\n\n" + done + "\n\n"
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		bw.Flush()
		conn.Close()
	})
	d, to := 3*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(20, d, to, ""), d, to)
	if res.code != 0 {
		t.Errorf("exit %d: %s", res.code, tail(res.stderr))
	}
	every(t, records(t, dir), "ok", func(r *record.Record) bool { return r.OK() && r.Accepted })
}
