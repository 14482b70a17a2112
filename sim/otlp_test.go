package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Finished requests reach an OTLP/HTTP receiver as vLLM-shaped llm_request spans that
// continue the caller's trace context.
func TestOTLPSpans(t *testing.T) {
	var mu sync.Mutex
	var spans []map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || r.URL.Path != "/v1/traces" {
			t.Errorf("bad OTLP request to %s: %v\n%s", r.URL.Path, err, body)
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer recv.Close()
	sc, _ := LoadScenario("healthy")
	srv, err := NewServer(sc, Options{Speed: 20, OTLPEndpoint: recv.URL + "/v1/traces"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""} {
		req, _ := http.NewRequest("POST", srv.URL()+"/v1/completions", strings.NewReader(`{"prompt":"a b c d","max_tokens":6}`))
		req.Header.Set("X-Request-Id", "span-test")
		if tp != "" {
			req.Header.Set("traceparent", tp)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	srv.Close() // flushes the exporter
	mu.Lock()
	defer mu.Unlock()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	var withParent map[string]any
	for _, s := range spans {
		if s["parentSpanId"] != nil {
			withParent = s
		}
		if s["name"] != "llm_request" || s["kind"] != float64(2) || len(s["traceId"].(string)) != 32 {
			t.Errorf("span %v", s)
		}
	}
	if withParent == nil || withParent["traceId"] != "4bf92f3577b34da6a3ce929d0e0e4736" || withParent["parentSpanId"] != "00f067aa0ba902b7" {
		t.Fatalf("no span continues the caller's trace: %v", spans)
	}
	attrs := map[string]map[string]any{}
	for _, a := range withParent["attributes"].([]any) {
		m := a.(map[string]any)
		attrs[m["key"].(string)] = m["value"].(map[string]any)
	}
	if attrs["gen_ai.usage.prompt_tokens"]["intValue"] != "4" || attrs["gen_ai.usage.completion_tokens"]["intValue"] != "6" ||
		attrs["gen_ai.request.id"]["stringValue"] != "span-test" || attrs["gen_ai.latency.e2e"]["doubleValue"].(float64) <= 0 ||
		attrs["gen_ai.latency.time_to_first_token"]["doubleValue"].(float64) <= 0 {
		t.Errorf("attributes %v", attrs)
	}
}
