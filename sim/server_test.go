package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startSim serves a scenario (optionally changed by mutate) on an ephemeral loopback port.
func startSim(t *testing.T, name string, speed float64, mutate func(*Scenario)) *Server {
	t.Helper()
	sc, err := LoadScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(sc)
	}
	srv, err := NewServer(sc, Options{Speed: speed, Seed: 1, Hostname: "testhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func prompt(n int, salt string) string {
	var b strings.Builder
	b.WriteString(salt)
	for i := 1; i < n; i++ {
		b.WriteString(" word")
	}
	return b.String()
}

type result struct {
	status       int
	ttft         time.Duration // send → first content event
	chunks       int
	content      string
	finish       string
	promptTok    int
	completionTk int
	headers      http.Header
}

// complete sends one chat request (stream or not) and reads the whole answer.
func complete(t *testing.T, base string, words, maxTokens int, stream bool, salt string) result {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":%v%s}`,
		"", prompt(words, salt), maxTokens, stream, map[bool]string{true: `,"stream_options":{"include_usage":true}`}[stream])
	start := time.Now()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	r := result{status: resp.StatusCode, headers: resp.Header}
	if !stream {
		var out struct {
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Error(err)
			return r
		}
		r.ttft = time.Since(start)
		if len(out.Choices) == 1 {
			r.content, r.finish = out.Choices[0].Message.Content, out.Choices[0].FinishReason
		}
		r.promptTok, r.completionTk = out.Usage.PromptTokens, out.Usage.CompletionTokens
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Errorf("bad SSE data %q: %v", data, err)
			return r
		}
		if ch.Usage != nil {
			r.promptTok, r.completionTk = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != "" {
				if r.chunks == 0 {
					r.ttft = time.Since(start)
				}
				r.chunks++
				r.content += c.Delta.Content
			}
			if c.FinishReason != nil {
				r.finish = *c.FinishReason
			}
		}
	}
	return r
}

// load runs n requests with the given concurrency and returns their results.
func load(t *testing.T, base string, n, conc, words, maxTokens int, stream bool) []result {
	t.Helper()
	out := make([]result, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = complete(t, base, words, maxTokens, stream, fmt.Sprintf("req%d", i))
		}(i)
	}
	wg.Wait()
	return out
}

type families map[string]*dto.MetricFamily

// scrape parses a page with Prometheus' own text parser, failing the test on any error.
func scrape(t *testing.T, url string) families {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("expfmt rejects %s: %v\n%s", url, err, data)
	}
	return fams
}

// value sums a counter or gauge over series whose labels include match.
func (f families) value(name string, match ...string) float64 {
	fam := f[name]
	if fam == nil {
		return math.NaN()
	}
	v := 0.0
	for _, m := range fam.Metric {
		if !hasLabels(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		}
	}
	return v
}

func hasLabels(m *dto.Metric, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		ok := false
		for _, l := range m.Label {
			if l.GetName() == match[i] && l.GetValue() == match[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// hist returns a histogram's summed count and sum over all series.
func (f families) hist(name string) (count, sum float64) {
	fam := f[name]
	if fam == nil {
		return 0, 0
	}
	for _, m := range fam.Metric {
		count += float64(m.Histogram.GetSampleCount())
		sum += m.Histogram.GetSampleSum()
	}
	return count, sum
}

func histMean(f families, name string) float64 {
	c, s := f.hist(name)
	return s / c
}

func medianTTFT(rs []result) time.Duration {
	var d []time.Duration
	for _, r := range rs {
		d = append(d, r.ttft)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func TestChatStreamingWithUsage(t *testing.T) {
	srv := startSim(t, "healthy", 20, nil)
	body := `{"model":"llama-3-8b","messages":[{"role":"user","content":"hello there general kenobi"}],"max_completion_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`
	req, _ := http.NewRequest("POST", srv.URL()+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("X-Request-Id", "my-req-42")
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "my-req-42" {
		t.Errorf("X-Request-Id %q not echoed", got)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	events := strings.Split(strings.TrimSpace(string(data)), "\n\n")
	if len(events) != 7+2 || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("want 7 token events, a usage event and [DONE], got %d:\n%s", len(events), data)
	}
	if !strings.Contains(events[0], `"role":"assistant"`) || !strings.Contains(events[0], `"id":"chatcmpl-my-req-42"`) {
		t.Errorf("first event %s", events[0])
	}
	if !strings.Contains(events[6], `"finish_reason":"length"`) {
		t.Errorf("last token event lacks finish_reason: %s", events[6])
	}
	if !strings.Contains(events[7], `"choices":[]`) || !strings.Contains(events[7], `"usage":{"prompt_tokens":4,"completion_tokens":7,"total_tokens":11}`) {
		t.Errorf("usage event %s", events[7])
	}
}

func TestCompletionsAndModels(t *testing.T) {
	srv := startSim(t, "healthy", 20, nil)
	resp, err := http.Post(srv.URL()+"/v1/completions", "application/json", strings.NewReader(`{"model":"llama-3-8b","prompt":"one two three","max_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ID      string
		Object  string
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage struct{ PromptTokens, CompletionTokens, TotalTokens int }
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out.Object != "text_completion" || len(out.Choices) != 1 || len(strings.Fields(out.Choices[0].Text)) != 5 ||
		out.Choices[0].FinishReason != "length" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("unexpected completion %+v", out)
	}
	// Usage fields come in snake case.
	resp, _ = http.Post(srv.URL()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":[1,2,3,4],"max_tokens":2}`))
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`) {
		t.Errorf("token-id prompt: %s", raw)
	}
	resp, _ = http.Get(srv.URL() + "/v1/models")
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `"id":"llama-3-8b"`) || !strings.Contains(string(raw), `"max_model_len":8192`) {
		t.Errorf("/v1/models: %s", raw)
	}
	resp, _ = http.Get(srv.URL() + "/health")
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health %d", resp.StatusCode)
	}
}

func TestOpenAIShapedErrors(t *testing.T) {
	srv := startSim(t, "healthy", 20, nil)
	big := `{"prompt":"` + strings.Repeat("x ", 3<<20) + `"}`
	tests := []struct {
		name, path, body string
		status           int
		param, typ       string
	}{
		{"malformed json", "/v1/chat/completions", `{"messages":[`, 400, "", "BadRequestError"},
		{"wrong type", "/v1/chat/completions", `{"messages":"hi"}`, 400, "messages", "BadRequestError"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", "BadRequestError"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", "NotFoundError"},
		{"max_tokens over context", "/v1/completions", `{"prompt":"hi","max_tokens":9000}`, 400, "max_tokens", "BadRequestError"},
		{"zero max_completion_tokens", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0}`, 400, "max_completion_tokens", "BadRequestError"},
		{"n>1", "/v1/completions", `{"prompt":"hi","n":3}`, 400, "n", "BadRequestError"},
		{"stream_options without stream", "/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "stream_options", "BadRequestError"},
		{"missing prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt", "BadRequestError"},
		{"image content", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "messages[0].content", "BadRequestError"},
		{"body too large", "/v1/completions", big, 413, "", "RequestEntityTooLarge"},
		{"unknown route", "/v1/audio/speech", `{}`, 404, "", "NotFoundError"},
	}
	for _, tc := range tests {
		resp, err := http.Post(srv.URL()+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error *struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    int     `json:"code"`
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || e.Error == nil {
			t.Errorf("%s: body is not an OpenAI error object (%v)", tc.name, err)
			continue
		}
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if resp.StatusCode != tc.status || e.Error.Code != tc.status || param != tc.param || e.Error.Type != tc.typ || e.Error.Message == "" {
			t.Errorf("%s: status %d code %d param %q type %q message %q; want %d %q %q",
				tc.name, resp.StatusCode, e.Error.Code, param, e.Error.Type, e.Error.Message, tc.status, tc.param, tc.typ)
		}
	}
}

// Every page the sim serves parses with Prometheus' own text parser, with vLLM's names,
// types, labels and buckets.
func TestMetricsPagesParse(t *testing.T) {
	srv := startSim(t, "spec-negative", 20, nil)
	load(t, srv.URL(), 4, 4, 50, 20, true)
	fams := scrape(t, srv.URL()+"/metrics")
	want := map[string]dto.MetricType{
		"vllm:num_requests_running":                          dto.MetricType_GAUGE,
		"vllm:num_requests_waiting":                          dto.MetricType_GAUGE,
		"vllm:kv_cache_usage_perc":                           dto.MetricType_GAUGE,
		"vllm:prefix_cache_queries_total":                    dto.MetricType_COUNTER,
		"vllm:prefix_cache_hits_total":                       dto.MetricType_COUNTER,
		"vllm:num_preemptions_total":                         dto.MetricType_COUNTER,
		"vllm:prompt_tokens_total":                           dto.MetricType_COUNTER,
		"vllm:generation_tokens_total":                       dto.MetricType_COUNTER,
		"vllm:request_success_total":                         dto.MetricType_COUNTER,
		"vllm:time_to_first_token_seconds":                   dto.MetricType_HISTOGRAM,
		"vllm:inter_token_latency_seconds":                   dto.MetricType_HISTOGRAM,
		"vllm:e2e_request_latency_seconds":                   dto.MetricType_HISTOGRAM,
		"vllm:request_queue_time_seconds":                    dto.MetricType_HISTOGRAM,
		"vllm:request_prefill_time_seconds":                  dto.MetricType_HISTOGRAM,
		"vllm:request_decode_time_seconds":                   dto.MetricType_HISTOGRAM,
		"vllm:request_inference_time_seconds":                dto.MetricType_HISTOGRAM,
		"vllm:iteration_tokens_total":                        dto.MetricType_HISTOGRAM,
		"vllm:request_prompt_tokens":                         dto.MetricType_HISTOGRAM,
		"vllm:spec_decode_num_drafts_total":                  dto.MetricType_COUNTER,
		"vllm:spec_decode_num_draft_tokens_total":            dto.MetricType_COUNTER,
		"vllm:spec_decode_num_accepted_tokens_total":         dto.MetricType_COUNTER,
		"vllm:spec_decode_num_accepted_tokens_per_pos_total": dto.MetricType_COUNTER,
		"pel_sim_step_lag_seconds":                           dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
		if !hasLabels(f.Metric[0], []string{"model_name", "llama-3-8b", "engine", "0"}) {
			t.Errorf("%s: labels %v, want model_name and engine", name, f.Metric[0].Label)
		}
	}
	var les []float64
	for _, b := range fams["vllm:time_to_first_token_seconds"].Metric[0].Histogram.Bucket {
		if !math.IsInf(b.GetUpperBound(), 1) {
			les = append(les, b.GetUpperBound())
		}
	}
	if fmt.Sprint(les) != fmt.Sprint(ttftBuckets) {
		t.Errorf("TTFT buckets %v, want vLLM's %v", les, ttftBuckets)
	}
	if got := fams.value("vllm:request_success_total", "finished_reason", "length"); got != 4 {
		t.Errorf("request_success{length} = %v, want 4", got)
	}
	if got := fams.value("vllm:generation_tokens_total"); got != 80 {
		t.Errorf("generation tokens %v, want 80", got)
	}
	if len(fams["vllm:request_success_total"].Metric) != 3 {
		t.Errorf("want the three finish reasons pre-registered")
	}
	dcgm := scrape(t, srv.DCGMURL()+"/metrics")
	for _, f := range dcgmFields {
		fam := dcgm[f.name]
		if fam == nil || len(fam.Metric) != 1 {
			t.Errorf("DCGM %s missing", f.name)
			continue
		}
		if !hasLabels(fam.Metric[0], []string{"gpu", "0", "device", "nvidia0", "modelName", "NVIDIA H100 80GB HBM3", "Hostname", "testhost"}) {
			t.Errorf("DCGM %s labels %v", f.name, fam.Metric[0].Label)
		}
	}
}

func TestBuild125Buckets(t *testing.T) {
	if got := fmt.Sprint(build125Buckets(100)); got != "[1 2 5 10 20 50 100]" {
		t.Errorf("build_1_2_5_buckets(100) = %s", got)
	}
}

func TestTraceparentValidation(t *testing.T) {
	for h, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":    false,
		"zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": false,
	} {
		if validTraceparent(h) != want {
			t.Errorf("%q: want %v", h, want)
		}
	}
}

var _ = context.Background

// stream_interval batches tokens into fewer SSE events (vLLM's --stream-interval), always
// flushing the last partial batch with the finish reason.
func TestStreamInterval(t *testing.T) {
	srv := startSim(t, "healthy", 20, func(s *Scenario) { s.Engine.StreamInterval = 4 })
	r := complete(t, srv.URL(), 10, 10, true, "x")
	if r.chunks != 3 || len(strings.Fields(r.content)) != 10 || r.finish != "length" || r.completionTk != 10 {
		t.Errorf("10 tokens at stream_interval 4: %d events, %q, finish %q, usage %d; want 3 events (4+4+2)",
			r.chunks, r.content, r.finish, r.completionTk)
	}
}
