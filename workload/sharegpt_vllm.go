package workload

import (
	"encoding/json"
	"fmt"
)

// The length rules vllm bench serve --dataset-name sharegpt samples by: a conversation
// needs at least two turns; its first turn is the prompt and its second the completion
// whose length is the request's expected output; it is skipped when the prompt or the
// completion is under 4 tokens, the prompt over 1024, or the two together over 2048.
const (
	vllmShareGPTMinLen       = 4
	vllmShareGPTMaxPrompt    = 1024
	vllmShareGPTMaxPromptOut = 2048
)

// parseShareGPTVLLM reads one conversation as vllm bench serve does (format
// sharegpt-vllm): the prompt is conversations[0] whoever speaks it, sent alone; the output
// budget is conversations[1]'s length. vLLM measures lengths with the model's tokenizer;
// pel, without one, with its estimate (about 4 characters per token), so the rules cut
// where that estimate puts them. Only the prompt is kept: memory holds no other turn.
func parseShareGPTVLLM(raw []byte) (Item, bool, error) {
	var v struct {
		Conversations []struct {
			Value *string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, false, fmt.Errorf("bad JSON: %v", err)
	}
	if len(v.Conversations) < 2 {
		return Item{}, false, nil
	}
	for i, t := range v.Conversations[:2] {
		if t.Value == nil {
			return Item{}, false, fmt.Errorf(`conversations[%d]: want {"from": ..., "value": ...}`, i)
		}
	}
	prompt, completion := *v.Conversations[0].Value, *v.Conversations[1].Value
	p, o := estimateTokens(prompt), estimateTokens(completion)
	if p < vllmShareGPTMinLen || o < vllmShareGPTMinLen || p > vllmShareGPTMaxPrompt || p+o > vllmShareGPTMaxPromptOut {
		return Item{}, false, nil
	}
	// No Messages: the chat request is the prompt as one user turn (fromDataset).
	return Item{Prompt: prompt, OutputTokens: o}, true, nil
}
