// Package otlp receives an engine's OpenTelemetry trace spans over OTLP/HTTP during a run
// and joins them, one per request, with pel's client records.
//
// vLLM (--otlp-traces-endpoint) and pel sim (--otlp-endpoint) export one "llm_request" SERVER
// span per finished request whose parent is the traceparent pel sent, with the engine's own
// per-request latencies as gen_ai.* attributes (vllm/tracing.py SpanAttributes; set in
// vllm/v1/engine/output_processor.py do_tracing). Joined by trace id, those exact server
// values sit next to the client's: queue vs prefill vs decode per request (stage 4), and the
// client−server TTFT gap that only the application layer (HTTP, tokenization, proxies,
// stream chunking) can explain.
//
// The receiver speaks OTLP/HTTP only (protobuf or JSON, optionally gzip), not gRPC: vLLM's
// exporter defaults to gRPC, so run it with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf
// and --otlp-traces-endpoint http://ADDR/v1/traces (vllm/tracing.py get_span_exporter).
//
// Receiver implements runner.Collector: Start listens (loopback by default) and appends every
// kept span to DIR/spans.jsonl; Fill reads that file and DIR/requests.jsonl and adds signals
// with Source "otlp". No prompt or output text is ever stored: spans carry none we keep.
//
// Bounds (receiver.go): the receiver has no authentication and an engine exports all of its
// traffic, so it keeps only the spans of trace ids this run sent (every trace id pel sends
// starts with the receiver's TracePrefix; the rest are counted), at most maxSpansPerTrace
// per trace id and MaxKeptSpans per run; bodies are at most DefaultMaxBody after gzip, at
// most MaxConcurrentExports are decoded at once (the others get 429 with Retry-After, which
// OTLP exporters retry), and string attributes are clipped. What was counted and not stored
// is noted on stage 4.
package otlp
