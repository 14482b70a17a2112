package loadgen

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// A stream past MaxChunkTimings content events keeps its counts, stops
// keeping timings, and flags the record truncated.
func TestStreamEventsBounded(t *testing.T) {
	var b bytes.Buffer
	n := maxChunkTimings + 1000
	for i := 0; i < n; i++ {
		b.WriteString("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n")
	}
	fmt.Fprintf(&b, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", n)
	c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
	rec := &record.Record{SentAt: time.Now()}
	var out outputSink
	fail := func(status, class, msg string) { rec.Status, rec.ErrorClass, rec.Error = status, class, msg }
	c.readStream(&b, &workload.Request{MaxTokens: n}, rec, &out, fail)
	if rec.Status != record.StatusOK {
		t.Fatalf("%s: %s", rec.Status, rec.Error)
	}
	if len(rec.ChunkUS) != maxChunkTimings || len(rec.ChunkTokens) != maxChunkTimings || rec.Chunks != n {
		t.Errorf("%d timings, %d counts, %d chunks; want %d, %d, %d", len(rec.ChunkUS), len(rec.ChunkTokens), rec.Chunks, maxChunkTimings, maxChunkTimings, n)
	}
	if rec.OutputTokens != n || !rec.HasFlag(record.FlagTruncatedRecord) {
		t.Errorf("output %d (want %d), flags %v", rec.OutputTokens, n, rec.Flags)
	}
	sum := 0
	for _, k := range rec.ChunkTokens {
		sum += k
	}
	if sum != maxChunkTimings {
		t.Errorf("kept chunks carry %d tokens, want their share %d", sum, maxChunkTimings)
	}
}

// A body past MaxStreamBytes is cut and the task fails naming the bound,
// so an endless stream ends by itself. Exercised with a small cap on the same reader.
func TestStreamBytesBounded(t *testing.T) {
	endless := strings.NewReader(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", 10000))
	c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
	rec := &record.Record{SentAt: time.Now()}
	var out outputSink
	fail := func(status, class, msg string) { rec.Status, rec.ErrorClass, rec.Error = status, class, msg }
	c.readStream(&capReader{r: endless, left: 100 << 10}, &workload.Request{MaxTokens: 4}, rec, &out, fail)
	if rec.Status != record.StatusStreamError || rec.ErrorClass != record.ErrIncomplete || !strings.Contains(rec.Error, "MaxStreamBytes") {
		t.Fatalf("%s %s: %s", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec.OutputTokens == 0 || rec.TokenSource != record.TokensEstimate {
		t.Errorf("the events before the cut should count: output %d source %s", rec.OutputTokens, rec.TokenSource)
	}
}

// Kept output stops at MaxKeptOutput; its length is still counted.
func TestKeptOutputBounded(t *testing.T) {
	o := outputSink{keep: true}
	piece := strings.Repeat("y", 1<<20)
	for range 10 {
		o.add(piece)
	}
	if o.sb.Len() > MaxKeptOutput || !o.truncated || o.chars != 10<<20 {
		t.Errorf("kept %d bytes, truncated %v, chars %d", o.sb.Len(), o.truncated, o.chars)
	}
}

// spreadTokens stays exact and fast at the bounds (completion_tokens 2^63-1 would overflow
// an unclamped loop and never end; the caller refuses such usage, and spreadTokens clamps
// anyway).
func TestSpreadTokensAtBounds(t *testing.T) {
	w := []int{MaxStreamBytes, 1, 3}
	spreadTokens(w, record.MaxTokens)
	if s := w[0] + w[1] + w[2]; s != record.MaxTokens {
		t.Errorf("sum %d, want %d", s, record.MaxTokens)
	}
	w = []int{5, 5}
	spreadTokens(w, int(^uint(0)>>1))
	if s := w[0] + w[1]; s != record.MaxTokens {
		t.Errorf("sum %d for MaxInt, want the clamp %d", s, record.MaxTokens)
	}
}

// After [DONE] nothing can fail a completed task, and a server that keeps sending is not
// read for long.
func TestAfterDone(t *testing.T) {
	body := "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n" + strings.Repeat("data: junk\n\n", 100000)
	c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1"})
	rec := &record.Record{SentAt: time.Now()}
	var out outputSink
	fail := func(status, class, msg string) { rec.Status, rec.ErrorClass, rec.Error = status, class, msg }
	cr := &capReader{r: strings.NewReader(body), left: MaxStreamBytes}
	c.readStream(cr, &workload.Request{MaxTokens: 4}, rec, &out, fail)
	if rec.Status != record.StatusOK {
		t.Fatalf("%s: %s", rec.Status, rec.Error)
	}
	if read := MaxStreamBytes - cr.left; read > int64(maxAfterDone)+int64(len(body)/100) {
		t.Errorf("read %d bytes of a %d-byte body", read, len(body))
	}
}
