package sim

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

const twoTools = `[{"type":"function","function":{"name":"lookup_0","parameters":{"type":"object"}}},{"type":"function","function":{"name":"lookup_1","parameters":{"type":"object"}}}]`

// toolMsgs is a conversation holding n tool results.
func toolMsgs(n int) string {
	msgs := []string{`{"role":"user","content":"find the thing"}`}
	for i := 0; i < n; i++ {
		msgs = append(msgs, `{"role":"assistant","content":null,"tool_calls":[{"id":"c`+string(rune('0'+i))+`","type":"function","function":{"name":"lookup_0","arguments":"{\"query\": \"x\"}"}}]}`,
			`{"role":"tool","tool_call_id":"c`+string(rune('0'+i))+`","content":"result words here"}`)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// TestSimToolCalls: with tools offered, pel sim's model calls a tool while fewer than
// simAutoToolRounds results are in the conversation (auto), always (required), the named
// one, or never (none); calls are valid OpenAI tool calls, streamed or whole.
func TestSimToolCalls(t *testing.T) {
	srv := startSim(t, "healthy", 50, nil)
	url := srv.URL() + "/v1/chat/completions"
	for _, tc := range []struct {
		name, choice string
		results      int
		wantTool     string // "" for a text answer
	}{
		{"auto first call", "", 0, "lookup_0"},
		{"auto second call", `"auto"`, 1, "lookup_1"},
		{"auto answers after two results", `"auto"`, 2, ""},
		{"required keeps calling", `"required"`, 2, "lookup_0"},
		{"named", `{"type":"function","function":{"name":"lookup_1"}}`, 0, "lookup_1"},
		{"none", `"none"`, 0, ""},
	} {
		for _, stream := range []bool{false, true} {
			body := `{"messages":` + toolMsgs(tc.results) + `,"tools":` + twoTools + `,"max_tokens":40,"stream":` + map[bool]string{true: "true", false: "false"}[stream]
			if tc.choice != "" {
				body += `,"tool_choice":` + tc.choice
			}
			body += "}"
			code, out := post(t, url, body)
			if code != 200 {
				t.Fatalf("%s: http %d %s", tc.name, code, out)
			}
			name, args, finish := "", "", ""
			if stream {
				for _, ev := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
					data := strings.TrimPrefix(ev, "data: ")
					if data == "[DONE]" {
						continue
					}
					var ch struct {
						Choices []struct {
							Delta struct {
								ToolCalls []struct {
									Function struct{ Name, Arguments string } `json:"function"`
								} `json:"tool_calls"`
							} `json:"delta"`
							FinishReason *string `json:"finish_reason"`
						} `json:"choices"`
					}
					if err := json.Unmarshal([]byte(data), &ch); err != nil {
						t.Fatalf("%s: event %q: %v", tc.name, data, err)
					}
					for _, c := range ch.Choices {
						for _, d := range c.Delta.ToolCalls {
							name += d.Function.Name
							args += d.Function.Arguments
						}
						if c.FinishReason != nil {
							finish = *c.FinishReason
						}
					}
				}
			} else {
				var full struct {
					Choices []struct {
						Message struct {
							ToolCalls []struct {
								ID       string                           `json:"id"`
								Function struct{ Name, Arguments string } `json:"function"`
							} `json:"tool_calls"`
						} `json:"message"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(out, &full); err != nil {
					t.Fatal(err)
				}
				for _, c := range full.Choices[0].Message.ToolCalls {
					name, args = c.Function.Name, c.Function.Arguments
					if c.ID == "" {
						t.Errorf("%s: tool call without id", tc.name)
					}
				}
				finish = full.Choices[0].FinishReason
			}
			if name != tc.wantTool {
				t.Errorf("%s (stream %v): tool %q, want %q", tc.name, stream, name, tc.wantTool)
			}
			if tc.wantTool != "" && (finish != "tool_calls" || !json.Valid([]byte(args))) {
				t.Errorf("%s (stream %v): finish %q arguments %q", tc.name, stream, finish, args)
			}
			if tc.wantTool == "" && finish == "tool_calls" {
				t.Errorf("%s: text answer finished as tool_calls", tc.name)
			}
		}
	}
	// A call cut by max_tokens stays unterminated, as a real engine leaves it.
	_, out := post(t, url, `{"messages":[{"role":"user","content":"x"}],"tools":`+twoTools+`,"max_tokens":3}`)
	if !strings.Contains(string(out), `"finish_reason":"length"`) {
		t.Errorf("cut tool call: %s", out)
	}
	for _, bad := range []string{
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":` + twoTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":` + twoTools + `,"tool_choice":"sometimes"}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":{"x":1}}]}`,
	} {
		if code, out := post(t, url, bad); code != 400 || !strings.Contains(string(out), `"error"`) {
			t.Errorf("%s: http %d %s", bad, code, out)
		}
	}
}

// TestSimEmbeddings: one unit vector per input, the model's hidden size (or dimensions),
// floats or base64, usage counting every input's tokens; equal inputs give equal vectors.
func TestSimEmbeddings(t *testing.T) {
	srv := startSim(t, "healthy", 50, nil)
	url := srv.URL() + "/v1/embeddings"
	type resp struct {
		Data []struct {
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	code, out := post(t, url, `{"model":"llama-3-8b","input":["one two three","four five","one two three"]}`)
	if code != 200 {
		t.Fatalf("http %d %s", code, out)
	}
	var r resp
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 3 || r.Usage.PromptTokens != 8 {
		t.Fatalf("%d vectors, %d prompt tokens", len(r.Data), r.Usage.PromptTokens)
	}
	var v [3][]float64
	for i, d := range r.Data {
		if d.Index != i || json.Unmarshal(d.Embedding, &v[i]) != nil || len(v[i]) != 4096 {
			t.Fatalf("vector %d: index %d, %d dims", i, d.Index, len(v[i]))
		}
	}
	norm := 0.0
	for _, x := range v[0] {
		norm += x * x
	}
	if math.Abs(norm-1) > 1e-3 || v[0][7] != v[2][7] || v[0][7] == v[1][7] {
		t.Errorf("norm %v; equal inputs equal, different ones not", norm)
	}
	code, out = post(t, url, `{"input":"hello","encoding_format":"base64","dimensions":8}`)
	if err := json.Unmarshal(out, &r); code != 200 || err != nil || len(r.Data) != 1 {
		t.Fatalf("http %d %s", code, out)
	}
	var s string
	json.Unmarshal(r.Data[0].Embedding, &s)
	if raw, err := base64.StdEncoding.DecodeString(s); err != nil || len(raw) != 8*4 {
		t.Errorf("base64 vector of %d bytes (%v)", len(raw), err)
	}
	for body, want := range map[string]int{
		`{"input":[]}`: 400, `{"input":""}`: 400, `{"model":"other","input":"x"}`: 404,
		`{"input":"x","encoding_format":"hex"}`: 400, `{"input":"x","dimensions":0}`: 400, `{"input":[[1,-2]]}`: 400,
	} {
		if code, out := post(t, url, body); code != want {
			t.Errorf("%s: http %d, want %d (%s)", body, code, want, out)
		}
	}
}

// FuzzParseEmbeddingsRequest: request decoding never panics, and what it accepts is a batch
// of non-empty inputs within the context and a dimension within the model's.
func FuzzParseEmbeddingsRequest(f *testing.F) {
	for _, s := range []string{`{"input":"a b"}`, `{"input":["a","b"],"encoding_format":"base64"}`, `{"input":[1,2,3],"dimensions":4}`,
		`{"input":[[1],[2,3]]}`, `{"input":[[]]}`, `{"input":null}`, `{"input":{"x":1}}`, `[`, `{"input":"x","dimensions":-1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		inputs, dims, _, err := parseEmbeddings(body, "m", 64, 16)
		if err != nil {
			if err.Status != 400 && err.Status != 404 {
				t.Fatalf("status %d", err.Status)
			}
			return
		}
		if len(inputs) == 0 || len(inputs) > maxEmbeddingInputs || dims < 1 || dims > 16 {
			t.Fatalf("accepted %d inputs of %d dims", len(inputs), dims)
		}
		for _, in := range inputs {
			if len(in) == 0 || len(in) >= 64 {
				t.Fatalf("accepted an input of %d tokens", len(in))
			}
		}
	})
}

// FuzzParseRequestTools: requests with tools, tool_choice and tool-call histories never
// panic the decoder; a tool answer is only ever decided when tools were offered.
func FuzzParseRequestTools(f *testing.F) {
	f.Add(`{"messages":` + toolMsgs(1) + `,"tools":` + twoTools + `,"tool_choice":"auto"}`)
	f.Add(`{"messages":[{"role":"user","content":"x"}],"tools":` + twoTools + `,"tool_choice":{"type":"function","function":{"name":"lookup_1"}}}`)
	f.Add(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}],"tools":[{"type":"function","function":{"name":"\u0000"}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		req := []byte(body)
		p, err := parseRequest(req, true, "llama-3-8b", 8192)
		if err != nil {
			if err.Status != 400 && err.Status != 404 {
				t.Fatalf("status %d", err.Status)
			}
			return
		}
		var probe struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(req, &probe)
		if p.tool != nil && len(probe.Tools) == 0 {
			t.Fatal("a tool call decided without tools")
		}
		if p.tool != nil {
			b := p.tool.message(nil, " a b", "stop")
			if !json.Valid(append(append([]byte("{"), b...), '}')) {
				t.Fatalf("tool message is not JSON: %s", b)
			}
		}
	})
}
