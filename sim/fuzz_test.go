package sim

import (
	"net/http"
	"testing"
)

// FuzzParseRequest: request decoding never panics, and every rejection is an OpenAI-shaped
// 4xx naming a reason.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"llama-3-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"hello","max_completion_tokens":3,"ignore_eos":true}`,
		`{"prompt":[1,2,3]}`, `{"prompt":["a"]}`, `{"prompt":[-1]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"messages":null}`, `{"max_tokens":1e99}`, `{"n":2}`, `[`, `null`, `""`, `{"prompt":"` + string([]byte{0xff, 0xfe}) + `"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		p, err := parseRequest(body, chat, "llama-3-8b", 8192)
		if err != nil {
			if err.Status < 400 || err.Status >= 500 || err.Message == "" || err.Type == "" {
				t.Fatalf("bad error %+v", err)
			}
			if err.Status != http.StatusBadRequest && err.Status != http.StatusNotFound {
				t.Fatalf("unexpected status %d", err.Status)
			}
			return
		}
		if len(p.promptIDs) == 0 || len(p.promptIDs) >= 8192 || p.maxTokens < 0 || len(p.promptIDs)+p.maxTokens > 8192 {
			t.Fatalf("accepted an impossible request: %d prompt tokens, max_tokens %d", len(p.promptIDs), p.maxTokens)
		}
	})
}

// FuzzParseScenario: scenario files never panic the loader.
func FuzzParseScenario(f *testing.F) {
	for _, n := range Scenarios() {
		data, _ := scenarioFS.ReadFile("scenarios/" + n + ".yaml")
		f.Add(data)
	}
	f.Add([]byte("name: x\nowner_layer: none\nengine: {eos: {dist: lognormal, mean: 1, sd: 0}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(data, nil, "fuzz.yaml")
		if err != nil {
			return
		}
		if _, err := NewServer(s, Options{}); err != nil {
			return
		}
	})
}
