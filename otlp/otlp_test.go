package otlp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const (
	tid1 = "0af7651916cd43dd8448eb211c80319c"
	sid1 = "b7ad6b7169203331"
	pid1 = "00f067aa0ba902b7"
)

func dbl(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}
func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}
func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// protoBody is an ExportTraceServiceRequest as vLLM's OTel SDK would send it (http/protobuf):
// one llm_request span and one unrelated span that must be skipped.
func protoBody(t testing.TB) []byte {
	td := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
		{TraceId: mustHex(tid1), SpanId: mustHex(sid1), ParentSpanId: mustHex(pid1), Name: "llm_request",
			Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1_000_000_000, EndTimeUnixNano: 2_000_000_000,
			Attributes: []*commonpb.KeyValue{str(AttrRequestID, "chatcmpl-1"), str(AttrResponseModel, "m"),
				num(AttrPromptTokens, 100), num(AttrCompletionTokens, 20), dbl(AttrQueue, 0.01), dbl(AttrTTFT, 0.05),
				dbl(AttrE2E, 0.5), dbl(AttrPrefill, 0.04), dbl(AttrDecode, 0.45), dbl(AttrInference, 0.49),
				dbl(AttrForward, 0.3), dbl(AttrExecute, 0.35),
				{Key: AttrFinishReasons, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: "length"}}}}}}}}},
		{TraceId: mustHex(tid1), SpanId: mustHex(pid1), Name: "POST /v1/chat/completions"},
	}}}}}}
	b, err := proto.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonBody is the OTLP/JSON mapping (hex ids, int64 as strings), as pel sim sends it.
const jsonBody = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}}]},"scopeSpans":[{"scope":{"name":"vllm.llm_engine"},"spans":[` +
	`{"traceId":"` + tid1 + `","spanId":"` + sid1 + `","parentSpanId":"` + pid1 + `","name":"llm_request","kind":2,"startTimeUnixNano":"1000000000","endTimeUnixNano":"2000000000","attributes":[` +
	`{"key":"gen_ai.request.id","value":{"stringValue":"chatcmpl-1"}},{"key":"gen_ai.response.model","value":{"stringValue":"m"}},` +
	`{"key":"gen_ai.usage.prompt_tokens","value":{"intValue":"100"}},{"key":"gen_ai.usage.completion_tokens","value":{"intValue":"20"}},` +
	`{"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":0.01}},{"key":"gen_ai.latency.time_to_first_token","value":{"doubleValue":0.05}},` +
	`{"key":"gen_ai.latency.e2e","value":{"doubleValue":0.5}},{"key":"gen_ai.latency.time_in_model_prefill","value":{"doubleValue":0.04}},` +
	`{"key":"gen_ai.latency.time_in_model_decode","value":{"doubleValue":0.45}},{"key":"gen_ai.latency.time_in_model_inference","value":{"doubleValue":0.49}},` +
	`{"key":"gen_ai.latency.time_in_model_forward","value":{"doubleValue":0.3}},{"key":"gen_ai.latency.time_in_model_execute","value":{"doubleValue":0.35}},` +
	`{"key":"gen_ai.response.finish_reasons","value":{"arrayValue":{"values":[{"stringValue":"length"}]}}}]},` +
	`{"traceId":"` + tid1 + `","spanId":"` + pid1 + `","name":"POST /v1/chat/completions"}]}]}]}`

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, ct string
		body     []byte
		err      string
	}{
		{"protobuf", ContentProtobuf, protoBody(t), ""},
		{"json", ContentJSON + "; charset=utf-8", []byte(jsonBody), ""},
		{"bad content type", "text/plain", []byte(jsonBody), "want application/x-protobuf"},
		{"bad hex id", ContentJSON, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`), `traceId "zz": not hex`},
		{"not json", ContentJSON, []byte(`{"resourceSpans":`), "json body"},
		{"not protobuf", ContentProtobuf, []byte{0x0a, 0xff, 0xff}, "protobuf body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, err := Decode(tc.body, tc.ct)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans, want the llm_request one only: %+v", len(spans), spans)
			}
			s := spans[0]
			if s.TraceID != tid1 || s.SpanID != sid1 || s.ParentSpanID != pid1 || s.Name != "llm_request" ||
				s.RequestID != "chatcmpl-1" || s.Model != "m" || s.PromptTokens != 100 || s.CompletionTokens != 20 ||
				s.FinishReason != "length" || s.StartUnixNS != 1e9 || s.EndUnixNS != 2e9 {
				t.Errorf("span %+v", s)
			}
			for name, got := range map[string]*float64{"queue": s.QueueS, "ttft": s.TTFTS, "e2e": s.E2ES, "prefill": s.PrefillS,
				"decode": s.DecodeS, "inference": s.InferenceS, "forward": s.ForwardS, "execute": s.ExecuteS} {
				want := map[string]float64{"queue": 0.01, "ttft": 0.05, "e2e": 0.5, "prefill": 0.04, "decode": 0.45,
					"inference": 0.49, "forward": 0.3, "execute": 0.35}[name]
				if got == nil || *got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func f(v float64) *float64 { return &v }

func rec(id, trace, phase string, sent time.Time, ttft time.Duration) record.Record {
	r := record.Record{ID: id, TraceID: trace, Phase: phase, Status: record.StatusOK, ScheduledAt: sent, SentAt: sent}
	if ttft > 0 {
		r.FirstTokenAt = sent.Add(ttft)
	}
	return r
}

func TestJoin(t *testing.T) {
	t0 := time.Unix(100, 0)
	recs := []record.Record{
		rec("a", "t-a", "warm", t0, 0),
		rec("b", "", "warm", t0, 0),    // old run: ID is the trace id
		rec("c", "t-c", "warm", t0, 0), // no trace match; the engine echoed X-Request-Id
		rec("d", "t-d", "warm", t0, 0), // nothing
		rec("e", "t-e", "warm", t0, 0), // retried: two spans, the later one is the final attempt
	}
	spans := []Span{{TraceID: "t-a"}, {TraceID: "b"}, {TraceID: "zz", RequestID: "c"},
		{TraceID: "t-e", StartUnixNS: 2, SpanID: "late"}, {TraceID: "t-e", StartUnixNS: 1, SpanID: "early"}}
	got := Join(recs, spans)
	want := []string{"t-a", "b", "zz", "", "t-e"}
	for i, p := range got {
		switch {
		case want[i] == "" && p.Span != nil:
			t.Errorf("%s matched %+v", p.Rec.ID, p.Span)
		case want[i] != "" && (p.Span == nil || p.Span.TraceID != want[i]):
			t.Errorf("%s matched %+v, want trace %s", p.Rec.ID, p.Span, want[i])
		}
	}
	if got[4].Span == nil || got[4].Span.SpanID != "late" {
		t.Errorf("retried task joined %+v, want the later span", got[4].Span)
	}
}

// TestAddSignals checks hand-computed values: 4 completed warm tasks, 3 with spans.
func TestAddSignals(t *testing.T) {
	t0 := time.Unix(100, 0)
	recs := []record.Record{
		rec("1", "t1", "warm", t0, 100*time.Millisecond),
		rec("2", "t2", "warm", t0, 200*time.Millisecond),
		rec("3", "t3", "warm", t0, 300*time.Millisecond),
		rec("4", "t4", "warm", t0, 400*time.Millisecond),
		rec("5", "t5", "cold", t0, 900*time.Millisecond),
	}
	failed := rec("6", "t6", "warm", t0, 0)
	failed.Status = record.StatusHTTPError // not in the coverage denominator
	recs = append(recs, failed)
	spans := []Span{
		{TraceID: "t1", TTFTS: f(0.090), QueueS: f(0.010), PrefillS: f(0.070), DecodeS: f(0.5), E2ES: f(0.6)},
		{TraceID: "t2", TTFTS: f(0.150), QueueS: f(0.020), PrefillS: f(0.080), DecodeS: f(0.6), E2ES: f(0.7)},
		{TraceID: "t3", TTFTS: f(0.100), QueueS: f(0.030), PrefillS: f(0.090), DecodeS: f(0.7), E2ES: f(0.8)},
		{TraceID: "t5", TTFTS: f(0.400)},
	}
	ev := evidence.New()
	AddSignals(ev, Join(recs, spans), len(spans))
	get := func(name, phase string) float64 {
		t.Helper()
		for _, s := range ev.SignalsNamed(name) {
			if s.Phase == phase {
				if s.Source != Source || s.Stage != evidence.StageServingCache {
					t.Errorf("%s: source %q stage %d", name, s.Source, s.Stage)
				}
				return s.Value
			}
		}
		t.Fatalf("%s (%s) missing", name, phase)
		return 0
	}
	for _, tc := range []struct {
		name, phase string
		want        float64
	}{
		{evidence.SigOTLPJoinCoverage, "warm", 0.75},
		{evidence.SigOTLPJoinCoverage, "cold", 1},
		// gaps 10, 50, 200 ms; quantiles are package quantile's nearest rank, so the
		// p99 of three values is the largest
		{evidence.SigTTFTGapP50, "warm", 50},
		{evidence.SigTTFTGapP99, "warm", 200},
		{evidence.SigTTFTGapP50, "cold", 500},
		{evidence.SigOTLPTTFTP50, "warm", 100},
		{evidence.SigOTLPQueueP50, "warm", 20},
		{evidence.SigOTLPQueueP99, "warm", 30},
		{evidence.SigOTLPPrefillP50, "warm", 80},
		{evidence.SigOTLPDecodeP50, "warm", 600},
		{evidence.SigOTLPE2EP99, "warm", 800},
	} {
		if got := get(tc.name, tc.phase); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s %s = %v, want %v", tc.name, tc.phase, got, tc.want)
		}
	}
	if h, ok := ev.Signal(evidence.SigOTLPJoinCoverage); !ok || h.Phase != "warm" {
		t.Errorf("headline coverage %+v", h)
	}
	if _, ok := ev.Signal(evidence.SigOTLPPrefillP50); !ok {
		t.Error("no headline prefill")
	}
	st := ev.Stage(evidence.StageServingCache)
	if fmt.Sprint(st.Sources) != "[otlp]" {
		t.Errorf("stage sources %v", st.Sources)
	}
}

func TestReadSpansBadLine(t *testing.T) {
	p := t.TempDir() + "/spans.jsonl"
	if err := writeFile(p, []byte("{\"trace_id\":\"a\"}\n{nope\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSpans(p); err == nil || !strings.Contains(err.Error(), "spans.jsonl:2") {
		t.Fatalf("err %v, want the file and line", err)
	}
}

// FuzzDecode: no body may panic the decoder, in either encoding.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(jsonBody), true)
	f.Add(protoBody(f), false)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00"}]}]}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, isJSON bool) {
		ct := ContentProtobuf
		if isJSON {
			ct = ContentJSON
		}
		spans, err := Decode(body, ct)
		if err != nil && spans != nil {
			t.Fatal("spans with an error")
		}
		for _, s := range spans {
			if len(s.TraceID) != 32 || bytes.ContainsRune([]byte(s.TraceID), 'g') {
				t.Fatalf("trace id %q", s.TraceID)
			}
		}
	})
}
