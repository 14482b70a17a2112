package hostile

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// Bounds that hold across many responses at once and across the calls of a task. Each
// response here is under its own caps (an 8 MiB event, a 16 MiB JSON answer, 8 MiB of kept
// output or tool arguments, a 128 MiB embeddings body), yet 60 of them at once, or a
// conversation carrying them from call to call, would take pel past 1 GB or to Go's fatal
// out-of-memory with no evidence. What responses hold is taken from one budget
// (loadgen.MaxHeldBytes) and a task's carried conversation is bounded
// (loadgen.MaxCarriedBytes); a response or task past them fails naming the bound, and the
// run ends with every record.

// closedContract is a closed loop of n streams sending requests in all, with steps (or a
// plain task when steps is "").
func closedContract(n, requests int, steps string) string {
	task := "  - {name: chat, prompt_tokens: 16, output_tokens: 8}\n"
	if steps != "" {
		task = "  - name: chat\n    steps:\n" + steps
	}
	return fmt.Sprintf(`name: hostile
version: 1
model: m
arrival: {process: closed, concurrency: %d}
requests: %d
timeout: 60s
tasks:
%s`, n, requests, task)
}

// heldBound: every record is either complete or failed/unfinished naming one of bounds.
func heldBound(t *testing.T, res result, dir string, bounds ...string) {
	t.Helper()
	if res.code != 0 && !(res.code == 1 && strings.Contains(res.stderr, "every request failed")) {
		t.Errorf("exit %d; stderr %s", res.code, tail(res.stderr))
	}
	recs := records(t, dir)
	named := 0
	for _, r := range recs {
		why := r.Error + " " + strings.Join(r.Reasons, "; ")
		for _, b := range bounds {
			if strings.Contains(why, b) {
				named++
				break
			}
		}
	}
	t.Logf("%d task records, %d naming %v", len(recs), named, bounds)
	if named == 0 {
		t.Errorf("no record names %v: %.600s", bounds, recs[0].Error+" "+strings.Join(recs[0].Reasons, ";"))
	}
	every(t, recs, "complete or failed naming its bound", func(r *record.Record) bool {
		why := r.Error + " " + strings.Join(r.Reasons, "; ")
		if r.OK() && len(r.Reasons) == 0 {
			return true
		}
		for _, b := range bounds {
			if strings.Contains(why, b) {
				return true
			}
		}
		return r.OK() // accepted or not by its own checks, but complete
	})
}

// contentEvent is one SSE data line whose delta carries n bytes of text.
func contentEvent(n int) string {
	return `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", n) + `"}}]}`
}

// 60 streams each receiving one 8 MiB event (1.19 GB unbounded), and 60 × 16 MiB JSON
// answers (1.72 GB unbounded).
func TestManyLargeResponses(t *testing.T) {
	big := contentEvent(8<<20 - 100)
	whole := `{"choices":[{"index":0,"message":{"content":"` + strings.Repeat("a", 16<<20-200) + `"},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":8}}`
	for _, c := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"60 streams of one 8 MiB event", func(w http.ResponseWriter, r *http.Request) {
			sse(w, big, finish, usage("30", "8"), done)
		}},
		{"60 JSON answers of 16 MiB", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(whole))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := api(t, c.h)
			res, dir := run(t, target, closedContract(60, 120, ""), 10*time.Second, 60*time.Second)
			heldBound(t, res, dir, "MaxHeldBytes")
		})
	}
}

// Multi-turn answers of 7 MiB, each carried into the next call; tool calls of 8 MiB of
// arguments each, carried the same way (Go's fatal out-of-memory at ~2 GB unbounded).
func TestCarriedConversation(t *testing.T) {
	const frag = 64 << 10
	answer := make([]string, 0, 120)
	for range (7 << 20) / frag {
		answer = append(answer, contentEvent(frag))
	}
	// Usage counts the carried conversation (no prompt looks truncated).
	answer = append(answer, finish, usage("1000000", "8"), done)
	pad := strings.Repeat("b", frag)
	for _, c := range []struct {
		name, steps string
		h           http.HandlerFunc
	}{
		{"7 MiB answers, 20 turns", "      - chat: {prompt_tokens: 8, output_tokens: 8, repeat: 20}\n",
			func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body); sse(w, answer...) }},
		{"8 MiB tool arguments per call", "      - tools: {prompt_tokens: 8, output_tokens: 8, max_calls: 8}\n",
			func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // a server reads the conversation it is sent
				ev := []string{`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"lookup_0","arguments":"{\"q\":\""}}]}}]}`}
				for range (8<<20)/frag - 2 {
					ev = append(ev, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`+pad+`"}}]}}]}`)
				}
				ev = append(ev, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}}]}`,
					`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, usage("1000000", "8"), done)
				sse(w, ev...)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := api(t, c.h)
			res, dir := run(t, target, closedContract(30, 30, c.steps), 10*time.Second, 60*time.Second)
			heldBound(t, res, dir, "MaxCarriedBytes", "MaxHeldBytes")
		})
	}
}

// An embeddings answer whose vector is 120 MiB of base64, or whose "model" is a 120 MiB
// string: encoding/json would hold each whole (fatal out-of-memory); a value over 1 MiB is
// refused while it streams in.
func TestHugeEmbeddingsValue(t *testing.T) {
	chunk := strings.Repeat("A", 1<<20)
	for _, c := range []struct{ name, head, tail string }{
		{"120 MiB base64 vector", `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"`, `"}],"usage":{"prompt_tokens":8}}`},
		{"120 MiB model", `{"object":"list","model":"`, `","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":8}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
			})
			mux.HandleFunc("/v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(c.head))
				for range 120 {
					if _, err := w.Write([]byte(chunk)); err != nil {
						return
					}
				}
				w.Write([]byte(c.tail))
			})
			target := serve(t, mux)
			res, dir := run(t, target, closedContract(8, 16, "      - embeddings: {input_tokens: 8}\n"), 10*time.Second, 60*time.Second)
			if res.code != 1 {
				t.Errorf("exit %d, want 1 (every request failed); stderr %s", res.code, tail(res.stderr))
			}
			heldBound(t, res, dir, "a JSON value is too long")
		})
	}
}
