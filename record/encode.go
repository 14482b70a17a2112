package record

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/internal/jsonstr"
)

// encodeRecord appends r's JSON object to b, byte for byte what json.Marshal(r) writes. The
// writer encodes every task of a run (thousands a second under load), and encoding/json's
// reflection walk, with the allocation and re-validation of each time.Time's MarshalJSON
// output, is a sixth of a load-only run's CPU. A record json.Marshal refuses (a time outside
// years 0..9999 or with a zone offset of 24 hours or more) goes to json.Marshal, whose error
// is the reference; appendRecord's output is never used then.
func encodeRecord(b []byte, r *Record) ([]byte, error) {
	if out, ok := appendRecord(b, r); ok {
		return out, nil
	}
	j, err := json.Marshal(r)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// encodedKeys are the JSON keys, options included, of the fields appendRecord,
// appendStepRef and appendServerTimings write, in Record's field order; a test holds them to
// the struct tags, so a field added to Record fails the tests until the appender writes it.
var encodedKeys = map[string][]string{
	"Record": {"seq", "id", "trace_id,omitempty", "task", "phase", "target,omitempty", "shard,omitempty",
		"profiled,omitempty", "in_flight", "scheduled_at", "sent_at,omitzero", "headers_at,omitzero",
		"first_token_at,omitzero", "last_token_at,omitzero", "done_at,omitzero", "first_sent_at,omitzero",
		"client_queue_us,omitempty", "chunk_us,omitempty", "chunk_tokens,omitempty", "chunks,omitempty",
		"prompt_tokens", "output_tokens", "token_source,omitempty", "cached_prompt_tokens,omitempty",
		"attempts", "status", "http_status,omitempty", "error,omitempty", "finish_reason,omitempty",
		"error_class,omitempty", "sent_prompt_tokens,omitempty", "server,omitempty", "flags,omitempty",
		"accepted", "reasons,omitempty", "step,omitempty", "steps,omitempty", "prompt_sha256,omitempty",
		"prompt_chars,omitempty", "output_chars,omitempty", "prompt,omitempty", "output,omitempty"},
	"StepRef": {"task", "index", "kind", "turn", "think_us,omitempty", "tool_us,omitempty",
		"carried_tokens,omitempty", "tool_calls,omitempty", "inputs,omitempty", "dims,omitempty",
		"answer,omitempty"},
	"ServerTimings": {"prefill_us", "decode_us", "prompt_n,omitempty"},
}

// appendRecord appends r as json.Marshal writes it; ok is false when json.Marshal would fail.
func appendRecord(b []byte, r *Record) (_ []byte, ok bool) {
	b = appendInt(append(b, `{"seq":`...), int64(r.Seq))
	b = jsonstr.Append(append(b, `,"id":`...), r.ID)
	b = appendStringOmit(b, `,"trace_id":`, r.TraceID)
	b = jsonstr.Append(append(b, `,"task":`...), r.Task)
	b = jsonstr.Append(append(b, `,"phase":`...), r.Phase)
	b = appendStringOmit(b, `,"target":`, r.Target)
	b = appendStringOmit(b, `,"shard":`, r.Shard)
	if r.Profiled {
		b = append(b, `,"profiled":true`...)
	}
	b = appendInt(append(b, `,"in_flight":`...), int64(r.InFlight))
	if b, ok = appendTime(append(b, `,"scheduled_at":`...), r.ScheduledAt); !ok {
		return b, false
	}
	for _, t := range [...]struct {
		key string
		t   time.Time
	}{
		{`,"sent_at":`, r.SentAt}, {`,"headers_at":`, r.HeadersAt}, {`,"first_token_at":`, r.FirstTokenAt},
		{`,"last_token_at":`, r.LastTokenAt}, {`,"done_at":`, r.DoneAt}, {`,"first_sent_at":`, r.FirstSentAt},
	} {
		if t.t.IsZero() {
			continue
		}
		if b, ok = appendTime(append(b, t.key...), t.t); !ok {
			return b, false
		}
	}
	b = appendIntOmit(b, `,"client_queue_us":`, r.ClientQueueUS)
	if len(r.ChunkUS) > 0 {
		b = append(b, `,"chunk_us":[`...)
		for i, v := range r.ChunkUS {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendInt(b, v)
		}
		b = append(b, ']')
	}
	if len(r.ChunkTokens) > 0 {
		b = append(b, `,"chunk_tokens":[`...)
		for i, v := range r.ChunkTokens {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendInt(b, int64(v))
		}
		b = append(b, ']')
	}
	b = appendIntOmit(b, `,"chunks":`, int64(r.Chunks))
	b = appendInt(append(b, `,"prompt_tokens":`...), int64(r.PromptTokens))
	b = appendInt(append(b, `,"output_tokens":`...), int64(r.OutputTokens))
	b = appendStringOmit(b, `,"token_source":`, r.TokenSource)
	b = appendIntOmit(b, `,"cached_prompt_tokens":`, int64(r.CachedPromptTokens))
	b = appendInt(append(b, `,"attempts":`...), int64(r.Attempts))
	b = jsonstr.Append(append(b, `,"status":`...), r.Status)
	b = appendIntOmit(b, `,"http_status":`, int64(r.HTTPStatus))
	b = appendStringOmit(b, `,"error":`, r.Error)
	b = appendStringOmit(b, `,"finish_reason":`, r.FinishReason)
	b = appendStringOmit(b, `,"error_class":`, r.ErrorClass)
	b = appendIntOmit(b, `,"sent_prompt_tokens":`, int64(r.SentPromptTokens))
	if r.Server != nil {
		b = appendServerTimings(append(b, `,"server":`...), r.Server)
	}
	b = appendStrings(b, `,"flags":`, r.Flags)
	if r.Accepted {
		b = append(b, `,"accepted":true`...)
	} else {
		b = append(b, `,"accepted":false`...)
	}
	b = appendStrings(b, `,"reasons":`, r.Reasons)
	if r.Step != nil {
		b = appendStepRef(append(b, `,"step":`...), r.Step)
	}
	b = appendIntOmit(b, `,"steps":`, int64(r.Steps))
	b = appendStringOmit(b, `,"prompt_sha256":`, r.PromptHash)
	b = appendIntOmit(b, `,"prompt_chars":`, int64(r.PromptChars))
	b = appendIntOmit(b, `,"output_chars":`, int64(r.OutputChars))
	b = appendStringOmit(b, `,"prompt":`, r.Prompt)
	b = appendStringOmit(b, `,"output":`, r.Output)
	return append(b, '}'), true
}

func appendStepRef(b []byte, s *StepRef) []byte {
	b = appendInt(append(b, `{"task":`...), int64(s.Task))
	b = appendInt(append(b, `,"index":`...), int64(s.Index))
	b = jsonstr.Append(append(b, `,"kind":`...), s.Kind)
	b = appendInt(append(b, `,"turn":`...), int64(s.Turn))
	b = appendIntOmit(b, `,"think_us":`, s.ThinkUS)
	b = appendIntOmit(b, `,"tool_us":`, s.ToolUS)
	b = appendIntOmit(b, `,"carried_tokens":`, int64(s.CarriedTokens))
	b = appendIntOmit(b, `,"tool_calls":`, int64(s.ToolCalls))
	b = appendIntOmit(b, `,"inputs":`, int64(s.Inputs))
	b = appendIntOmit(b, `,"dims":`, int64(s.Dims))
	if s.Answer {
		b = append(b, `,"answer":true`...)
	}
	return append(b, '}')
}

func appendServerTimings(b []byte, s *ServerTimings) []byte {
	b = appendInt(append(b, `{"prefill_us":`...), s.PrefillUS)
	b = appendInt(append(b, `,"decode_us":`...), s.DecodeUS)
	b = appendIntOmit(b, `,"prompt_n":`, int64(s.PromptN))
	return append(b, '}')
}

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendIntOmit writes key and v unless v is 0 (omitempty).
func appendIntOmit(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendInt(append(b, key...), v)
}

// appendStringOmit writes key and s unless s is empty (omitempty).
func appendStringOmit(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonstr.Append(append(b, key...), s)
}

// appendStrings writes key and ss as an array unless ss is empty (omitempty: nil and empty alike).
func appendStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, key...)
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, s)
	}
	return append(b, ']')
}

// appendTime writes t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds, trailing
// zeros dropped); ok is false for a time MarshalJSON refuses, which AppendText refuses too:
// both check with the same strict RFC 3339 rules.
func appendTime(b []byte, t time.Time) (_ []byte, ok bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}
