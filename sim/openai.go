package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// apiError is an OpenAI-shaped error: {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, a...), Type: "BadRequestError", Param: param}
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}
	b := body{Message: e.Message, Type: e.Type, Code: e.Status}
	if e.Param != "" {
		b.Param = &e.Param
	}
	data, _ := json.Marshal(map[string]body{"error": b})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(append(data, '\n'))
}

// chatMessage accepts content as a string or an array of {type:"text", text} parts; an
// assistant message may carry tool_calls instead (tools.go).
type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// completionRequest is the union of the chat and completions request fields the sim reads;
// other fields are accepted and ignored, as vLLM does.
type completionRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
	N         *int `json:"n"`
	// Tools and ToolChoice: OpenAI tool calling (tools.go).
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage   `json:"tool_choice"`
	// ResponseFormat and vLLM's guided-decoding parameters ask for structured output.
	ResponseFormat    json.RawMessage `json:"response_format"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       json.RawMessage `json:"guided_regex"`
	GuidedChoice      json.RawMessage `json:"guided_choice"`
	GuidedGrammar     json.RawMessage `json:"guided_grammar"`
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
}

// parsedRequest is a validated request, ready for the engine.
type parsedRequest struct {
	chat         bool
	model        string
	promptIDs    []uint32
	maxTokens    int // as requested (0: not given)
	stream       bool
	includeUsage bool
	ignoreEOS    bool
	// tool, when set, is the tool call the model answers with (tools.go); nil: text.
	tool *toolCall
	// structured: the request asks for guided decoding (a JSON object or schema, a regex,
	// a choice, a grammar), which costs the engine a bitmask per sampled token.
	structured bool
}

// parseRequest decodes and validates a request body. It never panics on any input (see
// FuzzParseRequest) and returns OpenAI-shaped errors naming the offending parameter.
func parseRequest(body []byte, chat bool, servedModel string, maxModelLen int) (*parsedRequest, *apiError) {
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return nil, badRequest(te.Field, "invalid type for %q: expected %s, got %s", te.Field, te.Type, te.Value)
		case errors.As(err, &se):
			return nil, badRequest("", "malformed JSON body at byte %d: %v", se.Offset, err)
		default:
			return nil, badRequest("", "malformed JSON body: %v", err)
		}
	}
	p := &parsedRequest{chat: chat, model: req.Model, stream: req.Stream, ignoreEOS: req.IgnoreEOS}
	if req.StreamOptions != nil {
		if !req.Stream {
			return nil, badRequest("stream_options", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = req.StreamOptions.IncludeUsage
	}
	if p.model == "" {
		p.model = servedModel
	}
	if p.model != servedModel {
		return nil, &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Param: "model",
			Message: fmt.Sprintf("The model `%s` does not exist.", req.Model)}
	}
	if req.N != nil && *req.N != 1 {
		return nil, badRequest("n", "n=%d is not supported by pel sim; use n=1", *req.N)
	}
	if aerr := p.readStructured(&req); aerr != nil {
		return nil, aerr
	}
	if chat {
		if len(req.Messages) == 0 {
			return nil, badRequest("messages", "messages must be a non-empty array")
		}
		for i, m := range req.Messages {
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
			}
			text, err := contentText(m.Content)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
			}
			p.promptIDs = Tokenize(text, p.promptIDs)
			var aerr *apiError
			if p.promptIDs, aerr = toolCallTokens(m.ToolCalls, i, p.promptIDs); aerr != nil {
				return nil, aerr
			}
		}
		var aerr *apiError
		if p.promptIDs, p.tool, aerr = decideTool(&req, p.promptIDs); aerr != nil {
			return nil, aerr
		}
	} else {
		ids, err := promptIDs(req.Prompt)
		if err != nil {
			return nil, badRequest("prompt", "prompt: %v", err)
		}
		p.promptIDs = ids
	}
	if len(p.promptIDs) == 0 {
		// An empty prompt still costs the BOS token in a real engine.
		p.promptIDs = append(p.promptIDs, 1)
	}
	mt := req.MaxTokens
	param := "max_tokens"
	if req.MaxCompletionTokens != nil {
		mt, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	if mt != nil {
		if *mt < 1 {
			return nil, badRequest(param, "%s must be at least 1, got %d", param, *mt)
		}
		p.maxTokens = *mt
	}
	// maxTokens > maxModelLen-n, not n+maxTokens > maxModelLen: max_tokens 2^63-1 overflowed
	// the sum past the check.
	if n := len(p.promptIDs); n >= maxModelLen || (p.maxTokens > 0 && p.maxTokens > maxModelLen-n) {
		return nil, badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			maxModelLen, min(uint64(n)+uint64(p.maxTokens), math.MaxInt64), n, p.maxTokens)
	}
	return p, nil
}

// readStructured sets structured when the request constrains its output: response_format
// of type json_object or json_schema (text is no constraint), or any of vLLM's guided_* or
// structured_outputs parameters.
func (p *parsedRequest) readStructured(req *completionRequest) *apiError {
	given := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	if given(req.ResponseFormat) {
		var rf struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil {
			return badRequest("response_format", "response_format must be an object with a type")
		}
		switch rf.Type {
		case "text":
		case "json_object", "json_schema", "structural_tag":
			p.structured = true
		default:
			return badRequest("response_format.type", "response_format.type %q is not one of text, json_object, json_schema", rf.Type)
		}
	}
	for _, raw := range []json.RawMessage{req.GuidedJSON, req.GuidedRegex, req.GuidedChoice, req.GuidedGrammar, req.StructuredOutputs} {
		if given(raw) {
			p.structured = true
		}
	}
	return nil
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, pt := range parts {
		if pt.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported (text only)", pt.Type)
		}
		b.WriteString(pt.Text)
		b.WriteByte(' ')
	}
	return b.String(), nil
}

// promptIDs accepts a string, an array of one string, or an array of token ids.
func promptIDs(raw json.RawMessage) ([]uint32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return Tokenize(s, nil), nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil {
		if len(ss) != 1 {
			return nil, errors.New("batched prompts are not supported by pel sim; send one prompt")
		}
		return Tokenize(ss[0], nil), nil
	}
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err == nil {
		out := make([]uint32, len(ids))
		for i, id := range ids {
			if id < 0 || id > 1<<31 {
				return nil, fmt.Errorf("token id %d out of range", id)
			}
			out[i] = uint32(id)
		}
		return out, nil
	}
	return nil, errors.New("must be a string, an array of one string, or an array of token ids")
}

// chunkWriter renders OpenAI response JSON by hand: the hot path of a 2,000-stream run
// writes tens of thousands of chunks per second, and encoding/json per chunk would dominate.
type chunkWriter struct {
	chat    bool
	id      string
	created string
	model   string
	tool    *toolCall // the answer is this tool call (tools.go), not text
	// The head of every chunk of one object type is the same: rendered once.
	headObj string
	headB   []byte
}

func appendJSONString(b []byte, s string) []byte {
	// Printable ASCII without quotes or backslashes (every token of the vocabulary) is its
	// own JSON string; anything else is quoted (our strings are ASCII words and model names).
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (c *chunkWriter) head(b []byte, object string) []byte {
	if c.headB == nil || c.headObj != object {
		c.headObj, c.headB = object, c.renderHead(nil, object)
	}
	return append(b, c.headB...)
}

func (c *chunkWriter) renderHead(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = append(b, c.created...)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	return b
}

func (c *chunkWriter) object(stream bool) string {
	switch {
	case c.chat && stream:
		return "chat.completion.chunk"
	case c.chat:
		return "chat.completion"
	default:
		return "text_completion"
	}
}

// sseChunk appends one `data: {...}\n\n` event carrying text (and a finish reason if set).
func (c *chunkWriter) sseChunk(b []byte, text string, role bool, finish string) []byte {
	b = append(b, "data: "...)
	b = c.head(b, c.object(true))
	b = append(b, `,"choices":[{"index":0,`...)
	if c.chat && c.tool != nil {
		b = c.tool.delta(b, text, role, finish)
		finish = c.tool.finish(finish)
	} else if c.chat {
		b = append(b, `"delta":{`...)
		if role {
			b = append(b, `"role":"assistant",`...)
		}
		b = append(b, `"content":`...)
		b = appendJSONString(b, text)
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = appendJSONString(b, text)
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, finish)
	}
	b = append(b, "}]}\n\n"...)
	return b
}

func appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, '}')
	return b
}

// sseUsage is the final usage-only chunk sent with stream_options.include_usage.
func (c *chunkWriter) sseUsage(b []byte, prompt, completion int) []byte {
	b = append(b, "data: "...)
	b = c.head(b, c.object(true))
	b = append(b, `,"choices":[],`...)
	b = appendUsage(b, prompt, completion)
	b = append(b, "}\n\n"...)
	return b
}

// full is a non-streaming response body.
func (c *chunkWriter) full(b []byte, text, finish string, prompt, completion int) []byte {
	b = c.head(b, c.object(false))
	b = append(b, `,"choices":[{"index":0,`...)
	if c.chat && c.tool != nil {
		b = c.tool.message(b, text, finish)
		finish = c.tool.finish(finish)
	} else if c.chat {
		b = append(b, `"message":{"role":"assistant","content":`...)
		b = appendJSONString(b, text)
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = appendJSONString(b, text)
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = appendJSONString(b, finish)
	b = append(b, "}],"...)
	b = appendUsage(b, prompt, completion)
	b = append(b, "}\n"...)
	return b
}
