package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pel-ladder/pel/contract"
)

// Item is one prompt of a dataset.
type Item struct {
	// Prompt is the text sent to /v1/completions: the prompt, or a conversation's first
	// human turn.
	Prompt string
	// Messages is the conversation for the chat API, up to and including its last human
	// turn (the answer to it is what the server generates). Nil for plain prompts.
	Messages []Message
	// OutputTokens from the line (plain prompts), 0 when absent: then the task's
	// output_tokens distribution decides.
	OutputTokens int
	Line         int // 1-based line where the item starts
}

// MaxDatasetBytes bounds the text a dataset's prompts hold once read: a run keeps them all
// to draw from, and sends each one with two copies more (the request body), so 24 prompts of
// 50 MB would be over a GB before the first request. 128 MiB is ~30 M tokens of prompts:
// hundreds of thousands of real ones.
const MaxDatasetBytes = 128 << 20

// size is about the bytes an item holds: its conversation, whose first human turn is the
// prompt (the same string, not a copy), or its prompt.
func (it *Item) size() int64 {
	if len(it.Messages) == 0 {
		return int64(len(it.Prompt)) + 64
	}
	n := int64(64)
	for _, m := range it.Messages {
		n += int64(len(m.Content)+len(m.Role)) + 32
	}
	return n
}

// LoadDataset reads a dataset file (see ReadDataset).
func LoadDataset(path, format string) ([]Item, error) {
	f, _, err := contract.OpenFile(path) // a FIFO would block: regular files only
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	return ReadDataset(f, path, format)
}

// ReadDataset reads a prompt dataset; name is used in errors ("name:line: ...").
//
// Format "prompts": one JSON object per line, {"prompt": "...", "output_tokens": 128},
// output_tokens optional. Format "sharegpt": one conversation per line,
// {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}]}
// ("from" is human|user, gpt|assistant|chatgpt|bard|bing, or system); conversations
// without a non-empty human turn are skipped. (vLLM's ShareGPT benchmark dataset takes
// conversations[0] as the prompt and skips entries with fewer than two turns; taking the
// first human turn also serves files that open with a system turn.) Format
// "sharegpt-vllm" samples the same files exactly as vllm bench serve does (sharegpt_vllm.go).
// Either
// format may also be one JSON array of such objects (how the public ShareGPT files ship).
// Other keys are ignored (datasets come from elsewhere); a line that is not valid JSON, or
// lacks the required key, is an error naming its line.
func ReadDataset(r io.Reader, name, format string) ([]Item, error) {
	var items []Item
	skipped := 0
	var held int64
	err := eachJSON(r, name, func(raw []byte, line int) error {
		var it Item
		var ok bool
		var err error
		switch format {
		case contract.FormatPrompts, "":
			it, err = parsePromptLine(raw)
			ok = err == nil
		case contract.FormatShareGPT:
			it, ok, err = parseShareGPTLine(raw)
		case contract.FormatShareGPTVLLM:
			it, ok, err = parseShareGPTVLLM(raw)
		default:
			return fmt.Errorf("%s: unknown dataset format %q (want prompts|sharegpt|sharegpt-vllm)", name, format)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if !ok {
			skipped++
			return nil
		}
		it.Line = line
		if held += it.size(); held > MaxDatasetBytes {
			return fmt.Errorf("%s:%d: the prompts up to this line hold %d MiB, over pel's bound of %d MiB (MaxDatasetBytes): a run holds its dataset in memory; give fewer or shorter prompts (format sharegpt-vllm keeps first turns only)",
				name, line, held>>20, MaxDatasetBytes>>20)
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		if skipped > 0 {
			if format == contract.FormatShareGPTVLLM {
				return nil, fmt.Errorf("%s: no usable prompt (%d conversations with fewer than 2 turns or outside vllm bench serve's length rules)", name, skipped)
			}
			return nil, fmt.Errorf("%s: no usable prompt (%d conversations without a human turn)", name, skipped)
		}
		return nil, fmt.Errorf("%s: no prompts", name)
	}
	return items, nil
}

func parsePromptLine(raw []byte) (Item, error) {
	var v struct {
		Prompt       *string `json:"prompt"`
		OutputTokens *int    `json:"output_tokens"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, fmt.Errorf("bad JSON: %v", err)
	}
	if v.Prompt == nil {
		return Item{}, fmt.Errorf(`want {"prompt": "..."}: no "prompt"`)
	}
	if *v.Prompt == "" {
		return Item{}, fmt.Errorf("empty prompt")
	}
	it := Item{Prompt: *v.Prompt}
	if v.OutputTokens != nil {
		if *v.OutputTokens < 1 || *v.OutputTokens > MaxLength {
			return Item{}, fmt.Errorf("output_tokens out of range: %d", *v.OutputTokens)
		}
		it.OutputTokens = *v.OutputTokens
	}
	return it, nil
}

var shareGPTRoles = map[string]string{
	"human": "user", "user": "user",
	"gpt": "assistant", "assistant": "assistant", "chatgpt": "assistant", "bard": "assistant", "bing": "assistant",
	"system": "system",
}

// parseShareGPTLine returns the item, whether it is usable, and an error for a broken line.
func parseShareGPTLine(raw []byte) (Item, bool, error) {
	var v struct {
		Conversations *[]struct {
			From  *string `json:"from"`
			Value *string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return Item{}, false, fmt.Errorf("bad JSON: %v", err)
	}
	if v.Conversations == nil {
		return Item{}, false, fmt.Errorf(`want {"conversations": [...]}: no "conversations"`)
	}
	var msgs []Message
	first, lastUser := -1, -1
	for i, t := range *v.Conversations {
		if t.From == nil || t.Value == nil {
			return Item{}, false, fmt.Errorf(`conversations[%d]: want {"from": ..., "value": ...}`, i)
		}
		role, ok := shareGPTRoles[strings.ToLower(*t.From)]
		if !ok {
			return Item{}, false, fmt.Errorf("conversations[%d]: unknown speaker %q (want human|gpt|system)", i, *t.From)
		}
		if role == "user" && *t.Value != "" {
			if first < 0 {
				first = len(msgs)
			}
			lastUser = len(msgs)
		}
		msgs = append(msgs, Message{Role: role, Content: *t.Value})
	}
	if first < 0 {
		return Item{}, false, nil
	}
	return Item{Prompt: msgs[first].Content, Messages: msgs[:lastUser+1]}, true, nil
}
