package workload

import (
	"reflect"
	"strings"
	"testing"
)

const stepsYAML = `name: s
version: 1
arrival: {process: poisson, rate: 5}
requests: 40
tasks:
  - name: chat
    shared_prefix_tokens: 6
    steps:
      - chat: {prompt_tokens: 30, output_tokens: 8}
      - chat: {prompt_tokens: 5, output_tokens: {dist: uniform, min: 4, max: 9}, think: 2s, repeat: 3}
  - name: agent
    steps:
      - tools: {prompt_tokens: 12, tools: 2, max_calls: 3, result_tokens: 7, tool_latency: 100ms}
  - name: rag
    steps:
      - embeddings: {inputs: 3, input_tokens: 5}
      - chat: {prompt_tokens: 50}
  - name: replay
    dataset: {file: conv.jsonl, format: sharegpt}
    steps:
      - chat: {from_dataset: true, think: 1s, max_turns: 2}
`

const convJSONL = `{"conversations":[{"from":"system","value":"be brief"},{"from":"human","value":"first question"},{"from":"gpt","value":"an answer of twenty characters, roughly forty"},{"from":"human","value":"second"},{"from":"gpt","value":"ok"},{"from":"human","value":"third, not replayed"}]}
`

// TestPlanSteps: multi-step tasks are planned from the seed like everything else (the same
// contract and seed give the same plan), one step plan per call, with the nonce and shared
// prefix on the conversation's first message only; dataset conversations replay their
// human turns with the recorded answers' lengths.
func TestPlanSteps(t *testing.T) {
	c := parse(t, stepsYAML, map[string]string{"conv.jsonl": convJSONL})
	a, b := plan(t, c, Options{Nonce: 77}), plan(t, c, Options{Nonce: 77})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same contract and seed planned different steps")
	}
	nonce := joinWords("", nonceWords(77))
	seen := map[string]bool{}
	for _, r := range a {
		seen[r.Task] = true
		kinds := []string{}
		for _, s := range r.Steps {
			kinds = append(kinds, s.Kind)
		}
		switch r.Task {
		case "chat":
			if strings.Join(kinds, ",") != "chat,chat,chat,chat" || r.Steps[0].Think != 0 || r.Steps[1].Think.Seconds() != 2 {
				t.Fatalf("chat plan %v", r.Steps)
			}
			if !strings.HasPrefix(r.Steps[0].User, nonce+" ") || r.Steps[0].UserTokens != 30 || strings.HasPrefix(r.Steps[1].User, nonce) || r.Steps[1].UserTokens != 5 {
				t.Errorf("first message %q (%d tokens), second %q", r.Steps[0].User, r.Steps[0].UserTokens, r.Steps[1].User)
			}
			if m := r.Steps[2].MaxTokens; m < 4 || m > 9 || r.Prompt != r.Steps[0].User {
				t.Errorf("turn 3 max_tokens %d; task prompt %q", m, r.Prompt)
			}
		case "agent":
			p := r.Steps[0]
			if len(r.Steps) != 1 || p.MaxCalls != 3 || len(p.Results) != 3 || p.ResultTokens[0] != 7 || len(p.Tools) != 2 || p.Tools[1].Function.Name != "lookup_1" || p.IgnoreEOS {
				t.Errorf("agent plan %+v", p)
			}
		case "rag":
			if strings.Join(kinds, ",") != "embeddings,chat" || len(r.Steps[0].Inputs) != 3 || r.Steps[0].InputTokens[2] != 5 ||
				!strings.HasPrefix(r.Steps[1].User, nonce) || r.Steps[1].MaxTokens != 128 {
				t.Errorf("rag plan %+v", r.Steps)
			}
		case "replay":
			if len(r.Steps) != 2 || r.Steps[0].User != "first question" || r.Steps[1].User != "second" || len(r.Messages) != 1 ||
				r.Messages[0].Content != nonce+" be brief" || r.Steps[0].MaxTokens != estimateTokens("an answer of twenty characters, roughly forty") || r.Steps[1].MaxTokens != 1 {
				t.Errorf("replay plan %+v, opening %+v", r.Steps, r.Messages)
			}
		}
	}
	if len(seen) != 4 {
		t.Errorf("planned task types %v", seen)
	}
	// A contract without steps plans exactly what it did before steps existed.
	plainYAML := "name: p\nversion: 1\narrival: {process: poisson, rate: 5}\nrequests: 5\ntasks:\n  - {name: a, prompt_tokens: 8}\n"
	for _, r := range plan(t, parse(t, plainYAML, nil), Options{}) {
		if r.Steps != nil {
			t.Fatal("a plain task got steps")
		}
	}
}
