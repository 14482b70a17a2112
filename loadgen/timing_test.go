package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// timedPart is one piece of a scripted response body, delivered when the fake clock reads at.
type timedPart struct {
	at   time.Duration
	data string
}

// timedBody hands out one part per Read, first moving the fake clock to that part's time, so
// the client sees each SSE event arrive at an exact instant.
type timedBody struct {
	clk   *fakeClock
	t0    time.Time
	parts []timedPart
}

func (b *timedBody) Read(p []byte) (int, error) {
	if len(b.parts) == 0 {
		return 0, io.EOF
	}
	part := b.parts[0]
	if len(part.data) > len(p) {
		panic("test part larger than the read buffer")
	}
	b.parts = b.parts[1:]
	b.clk.AdvanceTo(b.t0.Add(part.at))
	return copy(p, part.data), nil
}

func (b *timedBody) Close() error { return nil }

// timedTransport answers every request with headers at headersAt and then body.
type timedTransport struct {
	clk       *fakeClock
	headersAt time.Duration
	body      *timedBody
}

func (tr *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.clk.AdvanceTo(tr.body.t0.Add(tr.headersAt))
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: tr.body, Request: r}, nil
}

// TestClientTimestamps drives the client's timing logic with an injected clock: each SSE
// event arrives at a known instant. TTFT must start at the first event carrying generated
// text (not the headers, not the role-only delta), chunk times are per event, and the final
// three-token chunk spreads its gap over its tokens.
func TestClientTimestamps(t *testing.T) {
	clk := newFakeClock()
	t0 := clk.Now()
	ev := func(at time.Duration, data string) timedPart {
		return timedPart{at * time.Millisecond, "data: " + data + "\n\n"}
	}
	delta := func(s string) string {
		return `{"choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}`
	}
	body := &timedBody{clk: clk, t0: t0, parts: []timedPart{
		ev(5, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`),
		ev(50, delta("a")),
		ev(60, delta("b")),
		ev(90, `{"choices":[{"index":0,"delta":{"content":"c d e"},"finish_reason":"length"}]}`),
		ev(91, `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`),
		ev(92, `[DONE]`),
	}}
	c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:9", Model: "m", Clock: clk,
		HTTP: &http.Client{Transport: &timedTransport{clk: clk, headersAt: 2 * time.Millisecond, body: body}}})
	req := &workload.Request{Task: "t", MaxTokens: 5, Prompt: "hi"}
	b, err := c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{ID: "x", ScheduledAt: t0.Add(-3 * time.Millisecond)} // sent 3 ms late
	c.Do(context.Background(), req, b, rec, Traceparent([16]byte{1}, [8]byte{2}))
	if rec.Status != record.StatusOK {
		t.Fatalf("status %s: %s", rec.Status, rec.Error)
	}
	ms := func(d time.Duration, ok bool) float64 {
		if !ok {
			return -1
		}
		return float64(d) / 1e6
	}
	var itls []float64
	rec.ITLs(func(d time.Duration) { itls = append(itls, float64(d)/1e6) })
	lag, lagOK := rec.ScheduleLag()
	tth, tthOK := rec.TimeToHeaders()
	ttft, ttftOK := rec.TTFT()
	fromSent, fsOK := rec.TTFTFromSent()
	tpot, tpotOK := rec.TPOT()
	e2e := rec.LastTokenAt.Sub(rec.ScheduledAt)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"sent", rec.SentAt, t0},
		{"schedule lag ms", ms(lag, lagOK), 3.0},
		{"time to headers ms", ms(tth, tthOK), 2.0},
		{"TTFT ms (from scheduled)", ms(ttft, ttftOK), 53.0},
		{"TTFT from sent ms", ms(fromSent, fsOK), 50.0},
		{"last token - scheduled", e2e, 93 * time.Millisecond},
		{"chunk µs", rec.ChunkUS, []int64{50000, 60000, 90000}},
		{"chunk tokens", rec.ChunkTokens, []int{1, 1, 3}},
		{"output tokens", rec.OutputTokens, 5},
		{"prompt tokens", rec.PromptTokens, 9},
		{"token source", rec.TokenSource, record.TokensUsage},
		{"ITL ms per token", itls, []float64{10, 10, 10, 10}},
		{"TPOT ms", ms(tpot, tpotOK), 10.0},
		{"finish", rec.FinishReason, "length"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
