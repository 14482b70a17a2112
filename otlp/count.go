package otlp

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// MaxBodyObjects bounds the objects one export body decodes into (spans, attributes,
// events, links and the containers around them; JSON objects and arrays): decoding
// allocates each one (hundreds of bytes with the generic JSON pass that fixes the ids), and
// an empty span is two or three bytes, so 4 × 4 MiB bodies of `{}` spans would hold 1.84 GB. The
// OTel SDK's export batch (512 spans, BatchSpanProcessor's default) with 30 attributes a
// span is ~30k; a body past this bound is refused with 413 before it is decoded.
const MaxBodyObjects = 64 << 10

// countJSON counts the objects and arrays of a JSON text (outside strings), stopping past
// limit. It does not validate: the decoder does.
func countJSON(b []byte, limit int) int {
	n, in, esc := 0, false, false
	for _, c := range b {
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		case c == '{' || c == '[':
			n++
			if n > limit {
				return n
			}
		}
	}
	return n
}

// Field numbers of opentelemetry-proto's trace.proto holding repeated messages, by message.
var traceFields = map[string]map[protowire.Number]string{
	"TracesData":    {1: "ResourceSpans"},
	"ResourceSpans": {1: "Resource", 2: "ScopeSpans"},
	"Resource":      {1: "KeyValue"},
	"ScopeSpans":    {1: "Scope", 2: "Span"},
	"Scope":         {3: "KeyValue"},
	"Span":          {9: "KeyValue", 11: "Event", 13: "Link", 15: "Status"},
	"Event":         {3: "KeyValue"},
	"Link":          {4: "KeyValue"},
	"KeyValue":      {},
	"Status":        {},
}

// countProto counts, on the wire, the messages a protobuf TracesData body decodes into
// (attribute values are counted with their KeyValue), stopping past limit; ok is false for
// a malformed body (left to the decoder to name).
func countProto(b []byte, limit int) (n int, ok bool) {
	var walk func(b []byte, msg string) bool
	walk = func(b []byte, msg string) bool {
		fields := traceFields[msg]
		for len(b) > 0 && n <= limit {
			num, typ, k := protowire.ConsumeTag(b)
			if k < 0 {
				return false
			}
			b = b[k:]
			if typ != protowire.BytesType {
				m := protowire.ConsumeFieldValue(num, typ, b)
				if m < 0 {
					return false
				}
				b = b[m:]
				continue
			}
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return false
			}
			b = b[m:]
			if sub, isMsg := fields[num]; isMsg {
				n++
				if !walk(v, sub) {
					return false
				}
			}
		}
		return true
	}
	ok = walk(b, "TracesData")
	return n, ok
}

// tooManyObjects is the refusal of a body past MaxBodyObjects.
func tooManyObjects(n int) string {
	return fmt.Sprintf("body holds %d spans, attributes and other objects or more, over pel's bound of %d (MaxBodyObjects)", n, MaxBodyObjects)
}
