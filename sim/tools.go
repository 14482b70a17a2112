package sim

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/pel-ladder/pel/internal/jsonstr"
)

// Tool calling, as vLLM serves it with --enable-auto-tool-choice (and the OpenAI API): the
// request offers `tools` (type "function") and a `tool_choice`; the model answers either
// with text or with a tool call, whose arguments it generates as tokens like any output
// (https://platform.openai.com/docs/api-reference/chat/create, tools and tool_choice;
// streamed as delta.tool_calls fragments, finish_reason "tool_calls").
//
// pel sim's model decides deterministically, so a demo's agent loop always has the same
// shape: with tool_choice "auto" (the default when tools are offered) it calls a tool while
// the conversation holds fewer than simAutoToolRounds tool results, then answers in text;
// "required" always calls one (the offered tools in turn), a named function calls that one,
// "none" answers in text. A call's arguments are {"query": "<words>"}, about
// simToolCallTokens tokens; max_tokens below that cuts them (finish_reason "length", the
// arguments unterminated, as a real engine would leave them).
const (
	simAutoToolRounds = 2
	simToolCallTokens = 16
	// maxSimTools bounds the tools a request may offer (OpenAI's own limit).
	maxSimTools = 128
)

// toolCall is the tool call a response carries.
type toolCall struct {
	id, name string
}

type toolDef struct {
	Type     string `json:"type"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

// decideTool validates tools and tool_choice and decides the answer: a tool call, or text
// (nil). The tool definitions are rendered into the prompt by a real chat template, so
// their words count as prompt tokens (appended to ids).
func decideTool(req *completionRequest, ids []uint32) ([]uint32, *toolCall, *apiError) {
	choice := "auto"
	named := ""
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var s string
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(req.ToolChoice, &s) == nil:
			choice = s
		case json.Unmarshal(req.ToolChoice, &obj) == nil && obj.Function.Name != "":
			choice, named = "named", obj.Function.Name
		default:
			return ids, nil, badRequest("tool_choice", `tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`)
		}
		if choice != "none" && choice != "auto" && choice != "required" && choice != "named" {
			return ids, nil, badRequest("tool_choice", "tool_choice %q is not one of none, auto, required", s)
		}
	}
	if len(req.Tools) == 0 {
		if choice == "required" || choice == "named" {
			return ids, nil, badRequest("tool_choice", "tool_choice %s needs tools", choice)
		}
		return ids, nil, nil
	}
	if len(req.Tools) > maxSimTools {
		return ids, nil, badRequest("tools", "at most %d tools, got %d", maxSimTools, len(req.Tools))
	}
	var names []string
	for i, raw := range req.Tools {
		var td toolDef
		if err := json.Unmarshal(raw, &td); err != nil || td.Type != "function" || td.Function == nil || td.Function.Name == "" {
			return ids, nil, badRequest(fmt.Sprintf("tools[%d]", i), `tools[%d] must be {"type": "function", "function": {"name": ..., "parameters": {...}}}`, i)
		}
		names = append(names, td.Function.Name)
		ids = Tokenize(string(raw), ids)
	}
	results := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			results++
		}
	}
	name := ""
	switch choice {
	case "none":
		return ids, nil, nil
	case "named":
		for _, n := range names {
			if n == named {
				name = n
			}
		}
		if name == "" {
			return ids, nil, badRequest("tool_choice", "tool_choice names %q, which is not among the tools", named)
		}
	case "required":
		name = names[results%len(names)]
	default:
		if results >= simAutoToolRounds {
			return ids, nil, nil
		}
		name = names[results%len(names)]
	}
	return ids, &toolCall{id: "call_" + strconv.Itoa(results) + "_" + strconv.Itoa(len(req.Messages)), name: name}, nil
}

// toolCallTokens adds the tool calls of an assistant message (messages[i].tool_calls) to
// the prompt: a template renders their names and arguments.
func toolCallTokens(raw json.RawMessage, i int, ids []uint32) ([]uint32, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return ids, nil
	}
	var calls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return ids, badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "messages[%d].tool_calls must be an array of calls", i)
	}
	for _, c := range calls {
		ids = Tokenize(c.Function.Name+" "+string(c.Function.Arguments), ids)
	}
	return ids, nil
}

const argsHead, argsTail = `{"query": "`, `"}`

// finish is the finish_reason of a tool call: "tool_calls" when the model ended it, else
// what cut it ("length").
func (t *toolCall) finish(f string) string {
	if f == "stop" {
		return "tool_calls"
	}
	return f
}

// delta renders a streamed tool-call delta: the first carries the call's index, id, type,
// name and the opening of its arguments; later ones fragments of the arguments; the one
// that ends the call (finish "stop") closes them.
func (t *toolCall) delta(b []byte, text string, first bool, finish string) []byte {
	args := text
	if first {
		args = argsHead + args
	}
	if finish == "stop" {
		args += argsTail
	}
	b = append(b, `"delta":{`...)
	if first {
		b = append(b, `"role":"assistant","content":null,`...)
	}
	b = append(b, `"tool_calls":[{"index":0,`...)
	if first {
		b = append(b, `"id":`...)
		b = jsonstr.Append(b, t.id)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsonstr.Append(b, t.name)
		b = append(b, `,"arguments":`...)
	} else {
		b = append(b, `"function":{"arguments":`...)
	}
	b = appendJSONString(b, args)
	return append(b, "}}]}"...)
}

// message renders a non-streamed assistant message with the tool call.
func (t *toolCall) message(b []byte, text, finish string) []byte {
	args := argsHead + text
	if finish == "stop" {
		args += argsTail
	}
	b = append(b, `"message":{"role":"assistant","content":null,"tool_calls":[{"id":`...)
	b = jsonstr.Append(b, t.id)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = jsonstr.Append(b, t.name)
	b = append(b, `,"arguments":`...)
	b = appendJSONString(b, args)
	return append(b, "}}]}"...)
}
