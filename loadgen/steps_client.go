package loadgen

import (
	"context"
	"encoding/json"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// StepCall is one call of a multi-step task, built by the driver from the task's plan and
// the conversation so far: a chat or tools call (Request.Messages is the whole
// conversation; Request.PlannedPromptTokens what pel knows of its length), or an embeddings
// batch (Inputs).
type StepCall struct {
	Kind       string // record.StepChat | StepTools | StepEmbeddings
	Request    workload.Request
	Tools      []workload.Tool
	ToolChoice string
	NoStream   bool
	Inputs     []string
}

// StepOutcome is what a call gave back that the task needs next: the answer's text (always
// kept: the next turn carries it), its length, the tool calls, and an embeddings batch's
// vector dimension.
type StepOutcome struct {
	Text      string
	Chars     int
	ToolCalls []workload.ToolCall
	Dims      int
}

// StepDoer runs the calls of multi-step tasks (Client implements it).
type StepDoer interface {
	StepBody(s *StepCall) ([]byte, error)
	DoStep(taskCtx context.Context, s *StepCall, body []byte, rec *record.Record, traceparent string) StepOutcome
}

type embeddingsBody struct {
	Model          string   `json:"model,omitempty"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// StepBody returns the JSON body of a step call.
func (c *Client) StepBody(s *StepCall) ([]byte, error) {
	if s.Kind == record.StepEmbeddings {
		model := c.cfg.EmbeddingsModel
		if model == "" {
			model = c.cfg.Model
		}
		// float, not base64: what every server implements (OpenAI's Python client asks for
		// base64 by default; llama.cpp and vLLM answer both).
		return json.Marshal(embeddingsBody{Model: model, Input: s.Inputs, EncodingFormat: "float"})
	}
	r := &s.Request
	b := requestBody{Model: c.cfg.Model, Messages: r.Messages, MaxTokens: r.MaxTokens, Stream: !c.cfg.NoStream && !s.NoStream,
		IgnoreEOS: r.IgnoreEOS, Tools: s.Tools}
	if len(s.Tools) > 0 {
		b.ToolChoice = s.ToolChoice
	}
	if b.Stream {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return encodeBody(b)
}

// DoStep performs one attempt of a step call (see Do for what it fills in rec). The
// answer's text is always returned: the conversation carries it to the next call.
func (c *Client) DoStep(taskCtx context.Context, s *StepCall, body []byte, rec *record.Record, traceparent string) StepOutcome {
	if s.Kind == record.StepEmbeddings {
		return c.embed(taskCtx, s, body, rec, traceparent)
	}
	accept := c.accept
	if s.NoStream {
		accept = acceptJSON
	}
	text, chars, calls := c.do(taskCtx, &s.Request, body, rec, traceparent,
		callOpts{url: c.url, accept: accept, keep: true, tools: s.Kind == record.StepTools})
	return StepOutcome{Text: text, Chars: chars, ToolCalls: calls}
}
