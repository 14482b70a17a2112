package otlp

import (
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestCountBodies(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{}`, 1},
		{`{"a":[{},{}],"b":"{[{["}`, 4},
		{`{"a":"\"{"}`, 1},
		{`[` + strings.Repeat(`{},`, 100) + `{}]`, 102},
	} {
		if got := countJSON([]byte(c.in), 1000); got != c.want {
			t.Errorf("countJSON(%.40q) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := countJSON([]byte(`[`+strings.Repeat(`{},`, 100)+`{}]`), 10); got != 11 {
		t.Errorf("countJSON stops past its limit: %d", got)
	}
	// Two spans, one with two attributes and an event: resource spans, scope spans, 2 spans,
	// 2 key-values, 1 event = 7 messages.
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
		{Name: "a", Attributes: []*commonpb.KeyValue{{Key: "k"}, {Key: "l"}}, Events: []*tracepb.Span_Event{{Name: "e"}}},
		{Name: "b"},
	}}}}}}
	b, err := proto.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := countProto(b, 1000); !ok || n != 7 {
		t.Errorf("countProto = %d, %v; want 7", n, ok)
	}
	if _, ok := countProto([]byte{0x0a, 0xff}, 1000); ok {
		t.Error("a malformed body counted as well-formed")
	}
}

// FuzzCountBodies: any body is counted without a panic.
func FuzzCountBodies(f *testing.F) {
	f.Add([]byte(`{"resourceSpans":[{}]}`))
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if countJSON(b, 100) < 0 {
			t.Fatal("negative")
		}
		if n, _ := countProto(b, 100); n < 0 {
			t.Fatal("negative")
		}
	})
}
