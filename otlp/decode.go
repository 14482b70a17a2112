package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Content types of OTLP/HTTP (opentelemetry-proto docs/specification.md, "OTLP/HTTP").
const (
	ContentProtobuf = "application/x-protobuf"
	ContentJSON     = "application/json"
)

// Decode parses one OTLP/HTTP export body (an ExportTraceServiceRequest) of the given
// Content-Type and returns the spans worth keeping: those named llm_request or carrying a
// gen_ai.request.id. Other spans (HTTP middleware, the engine-core child span) are skipped.
func Decode(body []byte, contentType string) ([]Span, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("content-type %q: %v", contentType, err)
	}
	// TracesData has the wire format of ExportTraceServiceRequest (both are field 1:
	// repeated ResourceSpans; opentelemetry-proto trace/v1/trace.proto says so) without the
	// collector package's gRPC dependencies.
	req := &tracepb.TracesData{}
	switch mt {
	case ContentProtobuf:
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, fmt.Errorf("protobuf body: %v", err)
		}
	case ContentJSON:
		fixed, err := hexIDsToBase64(body)
		if err != nil {
			return nil, fmt.Errorf("json body: %v", err)
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(fixed, req); err != nil {
			return nil, fmt.Errorf("json body: %v", err)
		}
	default:
		return nil, fmt.Errorf("content-type %q: want %s or %s", mt, ContentProtobuf, ContentJSON)
	}
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				if s, ok := convert(sp); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// hexIDsToBase64 rewrites traceId/spanId/parentSpanId from hex to base64. The OTLP/JSON
// mapping deviates from protojson there: ids are hex strings (opentelemetry-proto
// specification, "JSON Protobuf Encoding"), while protojson reads bytes fields as base64.
// Hex digits are valid base64, so without this the ids would decode silently wrong.
func hexIDsToBase64(body []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := fixIDs(v, 0); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func fixIDs(v any, depth int) error {
	if depth > 64 {
		return fmt.Errorf("nested deeper than 64 levels")
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			switch k {
			case "traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id":
				s, ok := x.(string)
				if !ok {
					return fmt.Errorf("%s: want a hex string", k)
				}
				b, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q: not hex", k, s)
				}
				t[k] = base64.StdEncoding.EncodeToString(b)
			default:
				if err := fixIDs(x, depth+1); err != nil {
					return err
				}
			}
		}
	case []any:
		for _, x := range t {
			if err := fixIDs(x, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func convert(sp *tracepb.Span) (Span, bool) {
	s := Span{TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
		ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), Name: sp.GetName(),
		StartUnixNS: int64(sp.GetStartTimeUnixNano()), EndUnixNS: int64(sp.GetEndTimeUnixNano())}
	for _, kv := range sp.GetAttributes() {
		v := kv.GetValue()
		switch kv.GetKey() {
		case AttrRequestID:
			s.RequestID = v.GetStringValue()
		case AttrResponseModel:
			s.Model = v.GetStringValue()
		case AttrPromptTokens:
			s.PromptTokens = intOf(v)
		case AttrCompletionTokens:
			s.CompletionTokens = intOf(v)
		case AttrFinishReasons:
			if a := v.GetArrayValue().GetValues(); len(a) > 0 {
				s.FinishReason = a[0].GetStringValue()
			} else {
				s.FinishReason = v.GetStringValue()
			}
		case AttrQueue:
			s.QueueS = floatOf(v)
		case AttrTTFT:
			s.TTFTS = floatOf(v)
		case AttrE2E:
			s.E2ES = floatOf(v)
		case AttrPrefill:
			s.PrefillS = floatOf(v)
		case AttrDecode:
			s.DecodeS = floatOf(v)
		case AttrInference:
			s.InferenceS = floatOf(v)
		case AttrForward:
			s.ForwardS = floatOf(v)
		case AttrExecute:
			s.ExecuteS = floatOf(v)
		}
	}
	if len(sp.GetTraceId()) != 16 {
		return s, false // no valid W3C trace id: nothing to join on
	}
	return s, s.Name == "llm_request" || s.RequestID != ""
}

func intOf(v *commonpb.AnyValue) int64 {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return int64(x.DoubleValue)
	}
	return 0
}

// floatOf returns the attribute as seconds, nil when it is not numeric (or not finite).
func floatOf(v *commonpb.AnyValue) *float64 {
	var f float64
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		f = x.DoubleValue
	case *commonpb.AnyValue_IntValue:
		f = float64(x.IntValue)
	default:
		return nil
	}
	if f != f || f > 1e12 || f < -1e12 {
		return nil
	}
	return &f
}
