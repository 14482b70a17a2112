package loadgen

import (
	"strconv"

	"github.com/pel-ladder/pel/internal/jsonstr"
	"github.com/pel-ladder/pel/workload"
)

// encodeBody is a request body's JSON, json.Marshal's bytes: appendBody's where it writes
// the body, else marshalBody's (bigbody.go).
func encodeBody(b requestBody) ([]byte, error) {
	if out, ok := appendBody(nil, &b); ok {
		return out, nil
	}
	return marshalBody(b)
}

// appendBody appends b as json.Marshal writes it, byte for byte, without reflection: the
// pacer builds one body per arrival, and at thousands a second encoding/json's reflection
// was over a third of the arrival loop's own CPU. Each text is written once into a buffer
// sized for it, so a long prompt is not copied by buffer doubling either. ok is false for a
// body this encoder does not write (tools, or a message carrying tool calls): marshalBody
// writes those.
func appendBody(dst []byte, b *requestBody) (out []byte, ok bool) {
	if len(b.Tools) > 0 || b.ToolChoice != "" {
		return dst, false
	}
	size := len(b.Model) + 128
	for i := range b.Messages {
		m := &b.Messages[i]
		if len(m.ToolCalls) > 0 {
			return dst, false
		}
		size += len(m.Role) + len(m.Content) + len(m.ToolCallID) + 48
	}
	if b.Prompt != nil {
		size += len(*b.Prompt)
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size+size/32), dst...)
	}
	dst = append(dst, '{')
	comma := false
	key := func(k string) {
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	if b.Model != "" {
		key("model")
		dst = jsonstr.Append(dst, b.Model)
	}
	if len(b.Messages) > 0 {
		key("messages")
		dst = append(dst, '[')
		for i := range b.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendMessage(dst, &b.Messages[i])
		}
		dst = append(dst, ']')
	}
	if b.Prompt != nil {
		key("prompt")
		dst = jsonstr.Append(dst, *b.Prompt)
	}
	if b.MaxTokens != 0 {
		key("max_tokens")
		dst = strconv.AppendInt(dst, int64(b.MaxTokens), 10)
	}
	key("stream")
	dst = strconv.AppendBool(dst, b.Stream)
	if b.StreamOptions != nil {
		key("stream_options")
		dst = append(dst, `{"include_usage":`...)
		dst = strconv.AppendBool(dst, b.StreamOptions.IncludeUsage)
		dst = append(dst, '}')
	}
	if b.IgnoreEOS {
		key("ignore_eos")
		dst = append(dst, "true"...)
	}
	return append(dst, '}'), true
}

// appendMessage writes one message without tool calls (appendBody checks).
func appendMessage(dst []byte, m *workload.Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsonstr.Append(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = jsonstr.Append(dst, m.Content)
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = jsonstr.Append(dst, m.ToolCallID)
	}
	return append(dst, '}')
}
