package sim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OTLP export of one span per finished request, shaped like vLLM's "llm_request" span
// (vllm/tracing.py SpanAttributes and the output processor's do_tracing: SERVER kind, parent
// from the request's traceparent, gen_ai.* attributes with latencies in seconds). It is sent
// as OTLP/HTTP JSON (the protobuf JSON mapping of ExportTraceServiceRequest), which every
// OpenTelemetry collector accepts on /v1/traces, so the sim needs no OTel SDK.

type spanRecord struct {
	traceID, parentID, spanID string
	start, end                time.Time
	reqID, model              string
	maxTokens                 int
	prompt, completion        int
	queue, ttft, e2e          float64
	prefill, decode, infer    float64
	finish                    string
}

type otlpExporter struct {
	endpoint string
	client   *http.Client
	in       chan spanRecord
	done     chan struct{}
	once     sync.Once
	sent     atomic.Int64
	dropped  atomic.Int64
	failed   atomic.Int64
}

func newOTLPExporter(endpoint string) *otlpExporter {
	x := &otlpExporter{endpoint: endpoint, client: &http.Client{Timeout: 5 * time.Second},
		in: make(chan spanRecord, 4096), done: make(chan struct{})}
	go x.loop()
	return x
}

// add queues a span; when the exporter cannot keep up spans are dropped and counted, never
// allowed to slow the engine.
func (x *otlpExporter) add(s spanRecord) {
	select {
	case x.in <- s:
	default:
		x.dropped.Add(1)
	}
}

// close flushes what is queued and stops the exporter.
func (x *otlpExporter) close() {
	x.once.Do(func() { close(x.in) })
	<-x.done
}

func (x *otlpExporter) loop() {
	defer close(x.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var batch []spanRecord
	flush := func() {
		if len(batch) == 0 {
			return
		}
		resp, err := x.client.Post(x.endpoint, "application/json", bytes.NewReader(otlpJSON(batch)))
		if err != nil || resp.StatusCode/100 != 2 {
			x.failed.Add(int64(len(batch)))
		} else {
			x.sent.Add(int64(len(batch)))
		}
		if resp != nil {
			resp.Body.Close()
		}
		batch = batch[:0]
	}
	for {
		select {
		case s, ok := <-x.in:
			if !ok {
				flush()
				return
			}
			batch = append(batch, s)
			if len(batch) >= 512 {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// parseTraceparent returns the trace and parent span ids of a valid W3C traceparent.
func parseTraceparent(h string) (traceID, parentID string, ok bool) {
	if !validTraceparent(h) {
		return "", "", false
	}
	p := strings.Split(h, "-")
	return p[1], p[2], true
}

func otlpJSON(spans []spanRecord) []byte {
	var b []byte
	b = append(b, `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}},{"key":"telemetry.sdk.name","value":{"stringValue":"pel-sim"}}]},"scopeSpans":[{"scope":{"name":"vllm.llm_engine"},"spans":[`...)
	for i, s := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"traceId":"`...)
		b = append(b, s.traceID...)
		b = append(b, `","spanId":"`...)
		b = append(b, s.spanID...)
		b = append(b, '"')
		if s.parentID != "" {
			b = append(b, `,"parentSpanId":"`...)
			b = append(b, s.parentID...)
			b = append(b, '"')
		}
		b = append(b, `,"name":"llm_request","kind":2,"startTimeUnixNano":"`...)
		b = strconv.AppendInt(b, s.start.UnixNano(), 10)
		b = append(b, `","endTimeUnixNano":"`...)
		b = strconv.AppendInt(b, s.end.UnixNano(), 10)
		b = append(b, `","attributes":[`...)
		str := func(k, v string) {
			b = append(b, `{"key":"`+k+`","value":{"stringValue":`...)
			b = appendJSONString(b, v)
			b = append(b, `}},`...)
		}
		num := func(k string, v int) {
			b = append(b, `{"key":"`+k+`","value":{"intValue":"`...)
			b = strconv.AppendInt(b, int64(v), 10)
			b = append(b, `"}},`...)
		}
		dbl := func(k string, v float64) {
			b = append(b, `{"key":"`+k+`","value":{"doubleValue":`...)
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
			b = append(b, `}},`...)
		}
		str("gen_ai.response.model", s.model)
		str("gen_ai.request.id", s.reqID)
		if s.maxTokens > 0 {
			num("gen_ai.request.max_tokens", s.maxTokens)
		}
		num("gen_ai.request.n", 1)
		num("gen_ai.usage.prompt_tokens", s.prompt)
		num("gen_ai.usage.completion_tokens", s.completion)
		dbl("gen_ai.latency.time_in_queue", s.queue)
		dbl("gen_ai.latency.time_to_first_token", s.ttft)
		dbl("gen_ai.latency.e2e", s.e2e)
		dbl("gen_ai.latency.time_in_model_prefill", s.prefill)
		dbl("gen_ai.latency.time_in_model_decode", s.decode)
		dbl("gen_ai.latency.time_in_model_inference", s.infer)
		b = append(b, `{"key":"gen_ai.response.finish_reasons","value":{"arrayValue":{"values":[{"stringValue":`...)
		b = appendJSONString(b, s.finish)
		b = append(b, `}]}}}]}`...)
	}
	b = append(b, "]}]}]}"...)
	return b
}
