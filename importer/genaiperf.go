package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/pel-ladder/pel/record"
)

// genaiperfFile is the part of genai-perf's profile_export.json (perf_analyzer's profile
// export) pel reads: per request, its send time and every response's arrival, in ns.
type genaiperfFile struct {
	Experiments []struct {
		Experiment struct {
			Mode  string  `json:"mode"`
			Value float64 `json:"value"`
		} `json:"experiment"`
		Requests []struct {
			Timestamp          int64   `json:"timestamp"`
			ResponseTimestamps []int64 `json:"response_timestamps"`
			ResponseOutputs    []struct {
				Response string `json:"response"`
			} `json:"response_outputs"`
		} `json:"requests"`
	} `json:"experiments"`
	ServiceKind string `json:"service_kind"`
	Endpoint    string `json:"endpoint"`
}

func readGenAIPerf(r io.Reader, name string, s *sink) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var v genaiperfFile
	if err := strictJSON(pythonJSON(data), &v); err != nil {
		return badf("%s: not a genai-perf profile export: %v", name, err)
	}
	if len(v.Experiments) == 0 {
		return badf("%s: experiments: empty (or not a genai-perf profile export)", name)
	}
	i := s.opt.Benchmark
	if i < 0 || i >= len(v.Experiments) {
		return badf("%s: experiments: %d experiments, no experiment %d (--benchmark counts from 0)", name, len(v.Experiments), i)
	}
	e := v.Experiments[i]
	f := &s.facts
	f.sendTimes, f.perChunk = true, true
	switch e.Experiment.Mode {
	case "concurrency":
		if e.Experiment.Value >= 1 {
			f.concurrency = int(e.Experiment.Value)
		}
	case "request_rate":
		if e.Experiment.Value > 0 {
			f.rate = e.Experiment.Value
		}
	}
	var lo, hi time.Time
	whole, usage := 0, 0
	for j, q := range e.Requests {
		at := fmt.Sprintf("%s: experiments[%d].requests[%d]", name, i, j)
		if q.Timestamp <= 0 {
			return badf("%s.timestamp: missing", at)
		}
		rec := &record.Record{TokenSource: record.TokensEstimate}
		rec.SentAt = time.Unix(0, q.Timestamp).UTC()
		rec.ScheduledAt = rec.SentAt
		if lo.IsZero() || rec.SentAt.Before(lo) {
			lo = rec.SentAt
		}
		var gaps []time.Duration
		var ttft time.Duration
		content, isWhole := 0, false
		var used *openAIUsage
		prev := q.Timestamp
		for k, ts := range q.ResponseTimestamps {
			if ts < prev {
				return badf("%s.response_timestamps[%d]: %d is before the one it follows", at, k, ts)
			}
			if k < len(q.ResponseOutputs) {
				r := readResponse(q.ResponseOutputs[k].Response)
				if r.usage != nil {
					used = r.usage
				}
				if !r.content {
					continue
				}
				isWhole = isWhole || r.whole
			}
			if content == 0 {
				ttft = time.Duration(ts - q.Timestamp)
			} else {
				gaps = append(gaps, time.Duration(ts-prev))
			}
			prev = ts
			content++
		}
		if n := len(q.ResponseTimestamps); n > 0 {
			rec.DoneAt = time.Unix(0, q.ResponseTimestamps[n-1]).UTC()
		} else {
			rec.DoneAt = rec.SentAt
		}
		if rec.DoneAt.After(hi) {
			hi = rec.DoneAt
		}
		if content == 0 {
			rec.Status, rec.ErrorClass = record.StatusInvalid, record.ErrInvalid
			rec.Error = "no response with content"
			if err := s.emit(rec); err != nil {
				return err
			}
			continue
		}
		rec.Status = record.StatusOK
		rec.OutputTokens = content
		chunks(rec, ttft, gaps)
		if used != nil {
			usage++
			rec.PromptTokens = used.prompt
			if content == 1 && used.completion > 0 {
				// One answer carried every token: the server's count is the request's, and
				// no time between those tokens was observed.
				rec.OutputTokens, rec.ChunkTokens[0] = used.completion, used.completion
				rec.TokenSource = record.TokensUsage
			}
		}
		if isWhole {
			whole++
		}
		if err := s.emit(rec); err != nil {
			return err
		}
	}
	if whole > 0 {
		f.notes = append(f.notes, fmt.Sprintf("%d of the %d requests were answered whole, not streamed: their TTFT is the answer's arrival (as genai-perf counts it, equal to its request latency) and no inter-token latency was observed", whole, len(e.Requests)))
	}
	if usage > 0 {
		f.notes = append(f.notes, fmt.Sprintf("%d requests carry the server's usage block: their prompt tokens, and the output tokens of those answered whole, are its counts; other output counts are the responses that carried content (genai-perf counts with a tokenizer pel does not have)", usage))
	} else {
		f.notes = append(f.notes, "token counts are the responses that carried content (genai-perf counts with a tokenizer pel does not have); prompt lengths are not in the file")
	}
	if !lo.IsZero() && hi.After(lo) {
		f.durationS = hi.Sub(lo).Seconds()
	}
	return nil
}

// openAIUsage is the token counts of an OpenAI-style usage block.
type openAIUsage struct{ prompt, completion int }

// response is what pel reads of one recorded response.
type response struct {
	content bool         // holds generated text: not the [DONE] marker, not an empty SSE event
	whole   bool         // a whole answer (choices[].message), not a streamed delta
	usage   *openAIUsage // the usage block it carries, if any
}

// readResponse reads one recorded response. A body that is not OpenAI's shape counts as
// content: the tool recorded it as a response.
func readResponse(resp string) response {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(resp), "data:"))
	if t == "" || t == "[DONE]" {
		return response{}
	}
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
			Text    *string `json:"text"`
			Message *struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     *float64 `json:"prompt_tokens"`
			CompletionTokens *float64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal([]byte(t), &chunk) != nil {
		return response{content: true}
	}
	var r response
	if u := chunk.Usage; u != nil {
		r.usage = &openAIUsage{prompt: usageCount(u.PromptTokens), completion: usageCount(u.CompletionTokens)}
	}
	if len(chunk.Choices) == 0 {
		r.content = r.usage == nil // a usage-only chunk carries no text
		return r
	}
	for _, c := range chunk.Choices {
		if c.Message != nil && c.Message.Content != nil && *c.Message.Content != "" {
			r.content, r.whole = true, true
		}
		if c.Delta.Content != nil && *c.Delta.Content != "" || c.Text != nil && *c.Text != "" {
			r.content = true
		}
	}
	return r
}

// usageCount is a usage block's token count, 0 where it is missing or no count at all.
func usageCount(v *float64) int {
	if v == nil || *v < 0 || *v > record.MaxTokens || *v != math.Trunc(*v) {
		return 0
	}
	return int(*v)
}
