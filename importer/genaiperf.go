package importer

import (
	"encoding/json"
	"fmt"
	"io"
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
	f.notes = append(f.notes, "token counts are the responses that carried content (genai-perf counts with a tokenizer pel does not have); prompt lengths are not in the file")
	var lo, hi time.Time
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
		content := 0
		prev := q.Timestamp
		for k, ts := range q.ResponseTimestamps {
			if ts < prev {
				return badf("%s.response_timestamps[%d]: %d is before the one it follows", at, k, ts)
			}
			if k < len(q.ResponseOutputs) && !carriesContent(q.ResponseOutputs[k].Response) {
				continue
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
		if err := s.emit(rec); err != nil {
			return err
		}
	}
	if !lo.IsZero() && hi.After(lo) {
		f.durationS = hi.Sub(lo).Seconds()
	}
	return nil
}

// carriesContent reports whether one streamed response holds generated text: not the
// [DONE] marker, not an empty SSE event.
func carriesContent(resp string) bool {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(resp), "data:"))
	if t == "" || t == "[DONE]" {
		return false
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
	}
	if json.Unmarshal([]byte(t), &chunk) != nil || len(chunk.Choices) == 0 {
		return true // not OpenAI's shape: count the response
	}
	for _, c := range chunk.Choices {
		if c.Delta.Content != nil && *c.Delta.Content != "" || c.Text != nil && *c.Text != "" || c.Message != nil && c.Message.Content != nil && *c.Message.Content != "" {
			return true
		}
	}
	return false
}
