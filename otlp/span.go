package otlp

import (
	"path/filepath"

	"github.com/pel-ladder/pel/rundir"
)

// Span attribute names of vLLM's llm_request span (vllm/tracing.py SpanAttributes, which
// pel sim/otlp.go also emits). Latencies are in seconds.
const (
	AttrRequestID        = "gen_ai.request.id"
	AttrResponseModel    = "gen_ai.response.model"
	AttrPromptTokens     = "gen_ai.usage.prompt_tokens"
	AttrCompletionTokens = "gen_ai.usage.completion_tokens"
	AttrQueue            = "gen_ai.latency.time_in_queue"
	AttrTTFT             = "gen_ai.latency.time_to_first_token"
	AttrE2E              = "gen_ai.latency.e2e"
	AttrPrefill          = "gen_ai.latency.time_in_model_prefill"
	AttrDecode           = "gen_ai.latency.time_in_model_decode"
	AttrInference        = "gen_ai.latency.time_in_model_inference"
	AttrForward          = "gen_ai.latency.time_in_model_forward"
	AttrExecute          = "gen_ai.latency.time_in_model_execute"
	AttrFinishReasons    = "gen_ai.response.finish_reasons"
)

// Span is what pel keeps of one engine span: ids, timing and the gen_ai.* numbers. Latency
// fields are nil when the engine did not send them (vLLM sets forward/execute only with
// --collect-detailed-traces).
type Span struct {
	TraceID      string `json:"trace_id"` // 32 lowercase hex digits
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	Name         string `json:"name"`
	StartUnixNS  int64  `json:"start_unix_ns,omitempty"`
	EndUnixNS    int64  `json:"end_unix_ns,omitempty"`

	RequestID        string `json:"request_id,omitempty"`
	Model            string `json:"model,omitempty"`
	PromptTokens     int64  `json:"prompt_tokens,omitempty"`
	CompletionTokens int64  `json:"completion_tokens,omitempty"`
	FinishReason     string `json:"finish_reason,omitempty"`

	QueueS     *float64 `json:"queue_s,omitempty"`
	TTFTS      *float64 `json:"ttft_s,omitempty"`
	E2ES       *float64 `json:"e2e_s,omitempty"`
	PrefillS   *float64 `json:"prefill_s,omitempty"`
	DecodeS    *float64 `json:"decode_s,omitempty"`
	InferenceS *float64 `json:"inference_s,omitempty"`
	ForwardS   *float64 `json:"forward_s,omitempty"`
	ExecuteS   *float64 `json:"execute_s,omitempty"`
}

// ReadSpans reads a spans file (a run directory's rundir.SpansFile). A bad line is an error
// naming the file and line.
func ReadSpans(path string) ([]Span, error) {
	d := &rundir.Dir{Path: filepath.Dir(path)}
	var out []Span
	for s, err := range rundir.JSONLines[Span](d, filepath.Base(path)) {
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	return out, nil
}
