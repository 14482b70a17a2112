package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/workload"
)

// Bounds on the tool calls one response may make pel hold.
const (
	// MaxToolCalls bounds the tool calls kept from one response: 128 is OpenAI's limit on
	// tools per request, and a model cannot usefully call more tools than it was offered.
	MaxToolCalls = 128
	// maxToolNameBytes bounds one function name (OpenAI allows 64 characters).
	maxToolNameBytes = 256
)

// toolAcc assembles an assistant's tool calls, streamed or whole, in OpenAI's wire format
// (https://platform.openai.com/docs/api-reference/chat-streaming/streaming, delta.tool_calls):
// the first delta of a call carries its index, id, type and function name, later deltas of
// the same index carry fragments of function.arguments to be concatenated. Servers differ:
// some reuse index 0 for every call of a parallel batch and tell them apart by id only
// (Ollama), some omit the index, some send arguments as a JSON object instead of a string;
// all are read. What a hostile server sends is bounded (MaxToolCalls, MaxKeptOutput bytes of
// arguments in all) and never trusted: problem reports calls a client could not run.
type toolAcc struct {
	calls []accCall
	slot  map[int]int // wire index -> current slot in calls
	bytes int         // argument bytes kept, all calls together
	over  string      // the first bound exceeded
	held  holding     // the arguments, against the budget (held.go)
	bad   string      // the first malformed delta
}

type accCall struct {
	id, typ, name string
	args          strings.Builder
}

type wireToolCall struct {
	Index    *int            `json:"index"`
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"`
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// delta adds one streamed delta's tool_calls array.
func (a *toolAcc) delta(raw json.RawMessage) { a.add(raw, true) }

// whole adds a complete message's tool_calls array (a non-streamed response).
func (a *toolAcc) whole(raw json.RawMessage) { a.add(raw, false) }

func (a *toolAcc) add(raw json.RawMessage, streamed bool) {
	var items []wireToolCall
	if err := json.Unmarshal(raw, &items); err != nil {
		a.malformed("tool_calls is not an array of calls: " + err.Error())
		return
	}
	if a.slot == nil {
		a.slot = map[int]int{}
	}
	for i, it := range items {
		idx := i
		if it.Index != nil {
			idx = *it.Index
		} else if streamed && len(a.calls) > 0 && it.ID == "" {
			idx = -1 // no index and no id: a fragment of the call in progress
		}
		s, seen := a.slot[idx]
		if idx == -1 {
			s, seen = len(a.calls)-1, true
		}
		// A new id at an index already in use opens a new call (a parallel batch that
		// reuses index 0); so does every item of a whole message.
		if !seen || !streamed || (it.ID != "" && a.calls[s].id != "" && it.ID != a.calls[s].id) {
			if len(a.calls) >= MaxToolCalls {
				a.overBound(fmt.Sprintf("more than %d tool calls in one response (MaxToolCalls)", MaxToolCalls))
				return
			}
			a.calls = append(a.calls, accCall{})
			s = len(a.calls) - 1
			if idx >= 0 {
				a.slot[idx] = s
			}
		}
		c := &a.calls[s]
		if it.ID != "" && c.id == "" {
			c.id = clip(it.ID, maxToolNameBytes)
		}
		if it.Type != "" && c.typ == "" {
			c.typ = clip(it.Type, 32)
		}
		if !present(it.Function) {
			continue
		}
		var fn wireFunction
		if err := json.Unmarshal(it.Function, &fn); err != nil {
			a.malformed("function is not an object: " + err.Error())
			continue
		}
		if fn.Name != "" && c.name == "" {
			c.name = clip(fn.Name, maxToolNameBytes)
		}
		frag := ""
		if present(fn.Arguments) {
			var str string
			if json.Unmarshal(fn.Arguments, &str) == nil {
				frag = str
			} else {
				frag = string(fn.Arguments) // an object instead of its JSON text
			}
		}
		if a.bytes+len(frag) > MaxKeptOutput {
			a.overBound(fmt.Sprintf("tool call arguments over %d MiB (MaxKeptOutput)", MaxKeptOutput>>20))
			return
		}
		if !a.held.grow(int64(len(frag))) {
			a.overBound(errHeld.Error())
			return
		}
		a.bytes += len(frag)
		c.args.WriteString(frag)
	}
}

func (a *toolAcc) malformed(msg string) {
	if a.bad == "" {
		a.bad = oneLine(msg, 160)
	}
}

func (a *toolAcc) overBound(msg string) {
	if a.over == "" {
		a.over = msg
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return scrub.Text(s)
}

// problem says why the calls could not be run by a client ("" when they can): a bound
// exceeded, a malformed delta, a call without a function name, or arguments that are not
// JSON (a call cut by max_tokens). The first words are the stable reason.
func (a *toolAcc) problem() string {
	switch {
	case a.over != "":
		return "tool calls over pel's bounds: " + a.over
	case a.bad != "":
		return "tool calls malformed: " + a.bad
	}
	for i := range a.calls {
		c := &a.calls[i]
		if c.name == "" {
			return fmt.Sprintf("tool call without a function name (call %d of %d)", i+1, len(a.calls))
		}
		if args := bytes.TrimSpace([]byte(c.args.String())); len(args) > 0 && !json.Valid(args) {
			return fmt.Sprintf("tool call arguments not JSON (call %d of %d, %d bytes)", i+1, len(a.calls), c.args.Len())
		}
	}
	return ""
}

// result returns the calls to send back with the next request. A call without an id gets
// "call_N" (llama.cpp b4750's generic tool format gives none), the same in the assistant
// message and in its tool result; empty arguments become "{}".
func (a *toolAcc) result() []workload.ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]workload.ToolCall, len(a.calls))
	for i := range a.calls {
		c := &a.calls[i]
		id, typ, args := c.id, c.typ, strings.TrimSpace(c.args.String())
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		if typ == "" {
			typ = "function"
		}
		if args == "" {
			args = "{}"
		}
		out[i] = workload.ToolCall{ID: id, Type: typ, Function: workload.FunctionCall{Name: c.name, Arguments: args}}
	}
	return out
}
