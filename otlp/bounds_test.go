package otlp

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
)

// Spans of trace ids this run did not send, repeats past
// maxSpansPerTrace and exports beyond MaxConcurrentExports are counted, not stored; string
// attributes are clipped.
func TestReceiverBounds(t *testing.T) {
	const prefix = "00112233aabbccdd"
	dir := t.TempDir()
	r, err := New(Config{Addr: "127.0.0.1:0", Linger: -1, TracePrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.TracePrefix(); hex.EncodeToString(p[:]) != prefix {
		t.Fatalf("prefix %x", p)
	}
	ctx := context.Background()
	if err := r.Start(ctx, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	var spans []*tracepb.Span
	span := func(trace string, i int, model string) *tracepb.Span {
		return &tracepb.Span{TraceId: mustHex(trace), SpanId: mustHex(fmt.Sprintf("%016x", i+1)), Name: "llm_request",
			StartTimeUnixNano: 1, EndTimeUnixNano: 2, Attributes: []*commonpb.KeyValue{str(AttrResponseModel, model)}}
	}
	for i := range 10 { // ours
		spans = append(spans, span(fmt.Sprintf("%s%016x", prefix, i), i, "m"))
	}
	for i := range 7 { // another client's traffic on the same engine
		spans = append(spans, span(fmt.Sprintf("ffffffffffffffff%016x", i), 100+i, "m"))
	}
	for i := range maxSpansPerTrace + 3 { // one trace id, again and again
		spans = append(spans, span(prefix+"00000000000000aa", 200+i, strings.Repeat("x", 10000)))
	}
	body, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, b := post(t, r.URL(), ContentProtobuf, "", body); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	// Every decoding slot taken: the next export waits its turn (429, Retry-After).
	for range MaxConcurrentExports {
		r.sem <- struct{}{}
	}
	req, _ := http.NewRequest(http.MethodPost, r.URL(), strings.NewReader(string(body)))
	req.Header.Set("Content-Type", ContentProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("busy receiver answered %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for range MaxConcurrentExports {
		<-r.sem
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	kept, err := ReadSpans(filepath.Join(dir, rundir.SpansFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 10+maxSpansPerTrace {
		t.Errorf("%d spans stored, want %d", len(kept), 10+maxSpansPerTrace)
	}
	for _, s := range kept {
		if !strings.HasPrefix(s.TraceID, prefix) || len(s.Model) > maxAttrLen {
			t.Errorf("stored span %s (model %d bytes)", s.TraceID, len(s.Model))
		}
	}
	foreign, repeats, overCap, busy, _ := r.Dropped()
	if foreign != 7 || repeats != 3 || overCap != 0 || busy != 1 {
		t.Errorf("dropped: foreign %d repeats %d over %d busy %d", foreign, repeats, overCap, busy)
	}
	ev := evidence.New()
	r.Fill(ev, &rundir.Dir{Path: dir})
	if notes := strings.Join(ev.Stage(evidence.StageServingCache).Notes, "\n"); !strings.Contains(notes, "7 of trace ids this run did not send") {
		t.Errorf("notes %q", notes)
	}
}
