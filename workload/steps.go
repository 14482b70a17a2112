package workload

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
)

// ToolCall is one tool call of an assistant message, in OpenAI's wire format
// (https://platform.openai.com/docs/api-reference/chat/object, message.tool_calls): the
// driver fills it from the server's answer and sends it back in the next call's history.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function name and its arguments (a JSON text).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one tool definition offered with `tools` (type "function").
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction describes a function the model may call; Parameters is a JSON Schema.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolParameters is every synthetic tool's argument schema: one short string. The bound on
// its length matters to engines that constrain tool calls by grammar (llama.cpp --jinja):
// without it a random-weight model can fill max_tokens with one endless string.
const toolParameters = `{"type":"object","properties":{"query":{"type":"string","maxLength":48}},"required":["query"],"additionalProperties":false}`

// synthTools returns n tool definitions (lookup_0 … lookup_{n-1}), the same in every run.
func synthTools(n int) []Tool {
	out := make([]Tool, n)
	for i := range out {
		out[i] = Tool{Type: "function", Function: ToolFunction{
			Name:        fmt.Sprintf("lookup_%d", i),
			Description: fmt.Sprintf("Looks up records of kind %d that match a query and returns them as text.", i),
			Parameters:  json.RawMessage(toolParameters),
		}}
	}
	return out
}

// StepPlan is one planned step of a multi-step task, drawn from the seed like every other
// length and word. What the server answers (the assistant's text, its tool calls) is not
// planned: the driver appends it to the conversation as the task runs.
type StepPlan struct {
	Kind string // contract.StepChat | StepTools | StepEmbeddings
	// Think is the planned wait after the previous call ended (0 for the task's first).
	Think time.Duration
	// User is the user message appended before the call ("" for none: a tools step that
	// continues the conversation); UserTokens its planned length (0 when only estimated).
	User       string
	UserTokens int
	MaxTokens  int
	IgnoreEOS  bool
	NoStream   bool

	// Tools: the definitions offered, tool_choice, the most calls, each tool result's text
	// and planned tokens (results[i % len] answers the loop's i-th tool call) and the time a
	// tool takes before its result is appended.
	Tools        []Tool
	ToolChoice   string
	MaxCalls     int
	Results      []string
	ResultTokens []int
	ToolLatency  time.Duration

	// Embeddings: the batch of inputs and each one's planned tokens.
	Inputs      []string
	InputTokens []int
}

// planSteps fills r.Steps for a multi-step task. Every draw comes from the schedule's mix
// and text streams after the task's own draws, so single-request tasks of the same contract
// are planned exactly as before.
func (s *schedule) planSteps(r *Request, tp *taskPlan) {
	t := tp.t
	first := true // the conversation's first user message carries the nonce and shared prefix
	userText := func(n int) (string, int) {
		if first {
			first = false
			var tmp Request
			tmp.Seq = r.Seq
			s.synthetic(&tmp, tp, n)
			return tmp.Prompt, tmp.PlannedPromptTokens
		}
		return s.words(n)
	}
	outputs := func(st *contract.Step) int {
		if st.OutputTokens != nil {
			return Sample(*st.OutputTokens, s.mix)
		}
		return Sample(t.OutputTokens, s.mix)
	}
	for i := range t.Steps {
		st := &t.Steps[i]
		switch {
		case st.FromDataset:
			s.planDatasetTurns(r, tp, st)
			first = false
		case st.Kind == contract.StepChat:
			for k := 0; k < st.Times(); k++ {
				p := StepPlan{Kind: st.Kind, Think: st.Think, IgnoreEOS: t.IgnoreEOS, NoStream: st.NoStream}
				p.User, p.UserTokens = userText(Sample(*st.PromptTokens, s.mix))
				p.MaxTokens = outputs(st)
				r.Steps = append(r.Steps, p)
			}
		case st.Kind == contract.StepTools:
			// No ignore_eos on a tool call: the model ends it (an engine that constrains tool
			// calls by grammar can only end them with EOS).
			p := StepPlan{Kind: st.Kind, Think: st.Think, NoStream: st.NoStream,
				Tools: synthTools(st.Tools), ToolChoice: st.ToolChoice, MaxCalls: st.MaxCalls, ToolLatency: st.ToolLatency}
			if st.PromptTokens != nil {
				p.User, p.UserTokens = userText(Sample(*st.PromptTokens, s.mix))
			}
			p.MaxTokens = outputs(st)
			for k := 0; k < st.MaxCalls; k++ {
				text, n := s.words(Sample(*st.ResultTokens, s.mix))
				p.Results = append(p.Results, text)
				p.ResultTokens = append(p.ResultTokens, n)
			}
			r.Steps = append(r.Steps, p)
		case st.Kind == contract.StepEmbeddings:
			for k := 0; k < st.Times(); k++ {
				p := StepPlan{Kind: st.Kind, Think: st.Think}
				for j := 0; j < st.Inputs; j++ {
					text, n := s.words(Sample(*st.InputTokens, s.mix))
					p.Inputs = append(p.Inputs, text)
					p.InputTokens = append(p.InputTokens, n)
				}
				r.Steps = append(r.Steps, p)
			}
		}
	}
	for i := range r.Steps {
		if r.Steps[i].User != "" {
			r.Prompt = r.Steps[i].User
			r.PromptTokens, r.PlannedPromptTokens = r.Steps[i].UserTokens, r.Steps[i].UserTokens
			break
		}
	}
	if len(r.Steps) > 0 {
		r.Steps[0].Think = 0 // the task's arrival is its first call's due time
	}
}

// planDatasetTurns replays one conversation of the task's dataset turn by turn: each human
// turn is a chat step whose max_tokens is the length of the dataset's own answer to it (as
// vLLM's ShareGPT benchmark takes the completion length from the data), else the step's
// output_tokens. The model's live answers, not the dataset's, are carried forward, so the
// prefix cache sees what a real conversation would send (AIPerf's "deltas without
// responses"). System turns before the first human turn open the conversation.
func (s *schedule) planDatasetTurns(r *Request, tp *taskPlan, st *contract.Step) {
	it := tp.items[s.mix.IntN(len(tp.items))]
	msgs := it.Messages
	if len(msgs) == 0 {
		msgs = []Message{{Role: "user", Content: it.Prompt}}
	}
	head := true
	turns := 0
	for j, m := range msgs {
		if m.Role != "user" {
			if head {
				r.Messages = append(r.Messages, m)
			}
			continue
		}
		if st.MaxTurns > 0 && turns >= st.MaxTurns {
			break
		}
		text := m.Content
		if head {
			head = false
			if len(r.Messages) > 0 {
				r.Messages[0].Content = s.withHead(tp, r.Messages[0].Content)
			} else {
				text = s.withHead(tp, text)
			}
		}
		p := StepPlan{Kind: contract.StepChat, Think: st.Think, User: text, IgnoreEOS: tp.t.IgnoreEOS, NoStream: st.NoStream}
		if s.tok != nil {
			p.UserTokens = s.tok.Count(text)
		}
		p.MaxTokens = Sample(tp.t.OutputTokens, s.mix)
		if st.OutputTokens != nil {
			p.MaxTokens = Sample(*st.OutputTokens, s.mix)
		}
		if j+1 < len(msgs) && msgs[j+1].Role == "assistant" && msgs[j+1].Content != "" {
			p.MaxTokens = min(s.count(msgs[j+1].Content), MaxLength)
		}
		r.Steps = append(r.Steps, p)
		turns++
	}
}

// withHead puts the run's nonce and the task's shared prefix in front of text.
func (s *schedule) withHead(tp *taskPlan, text string) string {
	if tp.prefix != "" {
		text = tp.prefix + " " + text
	}
	return s.nonce + text
}

// words returns n random vocabulary words (fitted to n tokens with a tokenizer) and their
// planned token count.
func (s *schedule) words(n int) (string, int) {
	if s.tok == nil {
		return strings.Join(randomWords(n, s.text), " "), n
	}
	text := fitTokens(s.tok, "", randomWords(n+n/4+16, s.text), n, 1)
	return text, s.tok.Count(text)
}
