package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pel-ladder/pel/record"
)

// guidellmFile is the part of a GuideLLM benchmarks JSON (guidellm benchmark --output-path
// benchmarks.json) pel reads: the 0.2 to 0.3 schema (args, worker, scheduler_info and
// per-request times) and the 0.4 on (config, metrics.request_totals and info.timings).
type guidellmFile struct {
	Benchmarks []guidellmBenchmark `json:"benchmarks"`
}

type guidellmStrategy struct {
	Type    string   `json:"type_"`
	Rate    *float64 `json:"rate"`
	Streams *int     `json:"streams"`
}

type guidellmTotals struct {
	Successful int `json:"successful"`
	Errored    int `json:"errored"`
	Incomplete int `json:"incomplete"`
}

type guidellmBenchmark struct {
	Args struct {
		Strategy guidellmStrategy `json:"strategy"`
	} `json:"args"`
	Worker struct {
		BackendModel string `json:"backend_model"`
	} `json:"worker"`
	Config struct {
		Strategy *guidellmStrategy `json:"strategy"`
		Backend  struct {
			Model string `json:"model"`
		} `json:"backend"`
	} `json:"config"`
	Metrics struct {
		RequestTotals *guidellmTotals `json:"request_totals"`
	} `json:"metrics"`
	StartTime     float64        `json:"start_time"`
	EndTime       float64        `json:"end_time"`
	Duration      float64        `json:"duration"`
	RequestTotals guidellmTotals `json:"request_totals"`
	Requests      struct {
		Successful []guidellmRequest `json:"successful"`
		Errored    []guidellmRequest `json:"errored"`
		Incomplete []guidellmRequest `json:"incomplete"`
	} `json:"requests"`
}

type guidellmRequest struct {
	RequestID     string `json:"request_id"`
	SchedulerInfo struct {
		TargetedStartTime float64 `json:"targeted_start_time"`
		RequestStart      float64 `json:"request_start"`
		RequestEnd        float64 `json:"request_end"`
	} `json:"scheduler_info"`
	PromptTokens   *float64 `json:"prompt_tokens"`
	OutputTokens   *float64 `json:"output_tokens"`
	StartTime      float64  `json:"start_time"`
	EndTime        float64  `json:"end_time"`
	FirstTokenTime *float64 `json:"first_token_time"`
	LastTokenTime  *float64 `json:"last_token_time"`
	Error          string   `json:"error"`
	// GuideLLM 0.4 on keeps a request's times in info.timings and its error in info.
	Info struct {
		Timings struct {
			TargetedStart       float64  `json:"targeted_start"`
			RequestStart        float64  `json:"request_start"`
			FirstTokenIteration *float64 `json:"first_token_iteration"`
			LastTokenIteration  *float64 `json:"last_token_iteration"`
			RequestEnd          float64  `json:"request_end"`
		} `json:"timings"`
		Error json.RawMessage `json:"error"`
	} `json:"info"`
	RequestStartTime float64 `json:"request_start_time"`
	RequestEndTime   float64 `json:"request_end_time"`
}

// normalize moves a 0.4-on request's times and error into the fields the 0.2-0.3 schema
// names, where those are empty.
func (q *guidellmRequest) normalize() {
	t := q.Info.Timings
	first := func(vs ...float64) float64 {
		for _, v := range vs {
			if v != 0 {
				return v
			}
		}
		return 0
	}
	q.SchedulerInfo.RequestStart = first(q.SchedulerInfo.RequestStart, q.StartTime, t.RequestStart, q.RequestStartTime)
	q.SchedulerInfo.TargetedStartTime = first(q.SchedulerInfo.TargetedStartTime, t.TargetedStart)
	q.EndTime = first(q.EndTime, q.SchedulerInfo.RequestEnd, t.RequestEnd, q.RequestEndTime)
	if q.FirstTokenTime == nil {
		q.FirstTokenTime = t.FirstTokenIteration
	}
	if q.LastTokenTime == nil {
		q.LastTokenTime = t.LastTokenIteration
	}
	if q.Error == "" && len(q.Info.Error) > 0 {
		var msg string
		if json.Unmarshal(q.Info.Error, &msg) != nil {
			msg = string(q.Info.Error) // not a string: its JSON, bounded by firstLine
		}
		if msg != "null" {
			q.Error = msg
		}
	}
}

// readGuideLLM imports the file's one benchmark; a sweep's file holds several, and
// Options.Benchmark picks one (pel import guidellm FILE --benchmark N, once per point).
func readGuideLLM(r io.Reader, name string, s *sink) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var v guidellmFile
	if err := strictJSON(pythonJSON(data), &v); err != nil {
		return badf("%s: not a GuideLLM benchmarks file: %v", name, err)
	}
	if len(v.Benchmarks) == 0 {
		return badf("%s: benchmarks: empty (or not a GuideLLM benchmarks file)", name)
	}
	i := s.opt.Benchmark
	if i < 0 || i >= len(v.Benchmarks) {
		return badf("%s: benchmarks: %d benchmarks, no benchmark %d (--benchmark counts from 0)", name, len(v.Benchmarks), i)
	}
	if len(v.Benchmarks) > 1 {
		s.facts.notes = append(s.facts.notes, fmt.Sprintf("benchmark %d of the file's %d (a GuideLLM sweep: import each with --benchmark N)", i, len(v.Benchmarks)))
	}
	b := v.Benchmarks[i]
	f := &s.facts
	f.model = b.Worker.BackendModel
	if f.model == "" {
		f.model = b.Config.Backend.Model
	}
	strategy := b.Args.Strategy
	if b.Config.Strategy != nil && strategy.Type == "" {
		strategy = *b.Config.Strategy
	}
	totals := b.RequestTotals
	if b.Metrics.RequestTotals != nil && totals == (guidellmTotals{}) {
		totals = *b.Metrics.RequestTotals
	}
	f.sendTimes, f.schedule = true, true
	if b.Duration > 0 && b.Duration < 1e9 {
		f.durationS = b.Duration
	}
	switch st := strategy; st.Type {
	case "synchronous":
		f.concurrency = 1
	case "concurrent":
		if st.Streams != nil && *st.Streams > 0 {
			f.concurrency = *st.Streams
		}
	case "constant", "poisson":
		if st.Rate != nil && *st.Rate > 0 {
			f.rate = *st.Rate
		}
	}
	kept := len(b.Requests.Successful)
	if t := totals.Successful; t > kept {
		f.notes = append(f.notes, fmt.Sprintf("the file keeps %d of the benchmark's %d successful requests (GuideLLM samples them): pel's figures are of the %d kept, GuideLLM's metrics of all %d", kept, t, kept, t))
	}
	at := func(list string, j int, field string) string {
		return fmt.Sprintf("%s: benchmarks[%d].requests.%s[%d].%s", name, i, list, j, field)
	}
	for _, l := range []struct {
		name string
		reqs []guidellmRequest
	}{{"successful", b.Requests.Successful}, {"errored", b.Requests.Errored}, {"incomplete", b.Requests.Incomplete}} {
		for j, q := range l.reqs {
			rec, err := guidellmRecord(q, l.name, func(field string) string { return at(l.name, j, field) })
			if err != nil {
				return err
			}
			if err := s.emit(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func guidellmRecord(q guidellmRequest, list string, at func(string) string) (*record.Record, error) {
	q.normalize()
	rec := &record.Record{ID: q.RequestID, TokenSource: record.TokensUsage}
	if len(rec.ID) > 128 {
		rec.ID = rec.ID[:128]
	}
	sent := q.SchedulerInfo.RequestStart
	if sent == 0 {
		sent = q.StartTime
	}
	var ok bool
	if rec.SentAt, ok = unixSecs(sent); !ok {
		return nil, badf("%s (info.timings.request_start from GuideLLM 0.4 on): %v is not a time", at("scheduler_info.request_start"), sent)
	}
	rec.ScheduledAt = rec.SentAt
	if t, ok := unixSecs(q.SchedulerInfo.TargetedStartTime); ok && !t.After(rec.SentAt) {
		rec.ScheduledAt = t
	}
	var err error
	if q.PromptTokens != nil {
		if rec.PromptTokens, err = checkTokens(at("prompt_tokens"), *q.PromptTokens); err != nil {
			return nil, err
		}
	}
	if q.OutputTokens != nil {
		if rec.OutputTokens, err = checkTokens(at("output_tokens"), *q.OutputTokens); err != nil {
			return nil, err
		}
	}
	end := q.EndTime
	if end == 0 {
		end = q.SchedulerInfo.RequestEnd
	}
	rec.DoneAt, ok = unixSecs(end)
	if !ok || rec.DoneAt.Before(rec.SentAt) {
		rec.DoneAt = rec.SentAt
	}
	switch list {
	case "errored":
		rec.Status, rec.ErrorClass = errorClass(0, q.Error)
		rec.Error = firstLine(q.Error)
		return rec, nil
	case "incomplete":
		// Still running when the benchmark ended: cut by the tool, as pel's own cancelled.
		rec.Status = record.StatusCancelled
		return rec, nil
	}
	rec.Status = record.StatusOK
	if q.FirstTokenTime == nil {
		rec.FirstTokenAt, rec.LastTokenAt = rec.DoneAt, rec.DoneAt
		return rec, nil
	}
	first, ok1 := unixSecs(*q.FirstTokenTime)
	last := first
	if q.LastTokenTime != nil {
		last, _ = unixSecs(*q.LastTokenTime)
	}
	if !ok1 || first.Before(rec.SentAt) || last.Before(first) {
		return nil, badf("%s: first %v / last %v token times out of order with the request's start %v", at("first_token_time"), *q.FirstTokenTime, q.LastTokenTime, sent)
	}
	rec.FirstTokenAt, rec.LastTokenAt = first, last
	if rec.OutputTokens > 1 {
		// GuideLLM keeps the first and last token's times: the tokens between share the gap,
		// in two events that are not the stream's.
		rec.ChunkUS = []int64{first.Sub(rec.SentAt).Microseconds(), last.Sub(rec.SentAt).Microseconds()}
		rec.ChunkTokens = []int{1, rec.OutputTokens - 1}
		rec.AddFlag(record.FlagEventsSummarized)
	}
	return rec, nil
}

// unixSecs is a Unix time in (fractional) seconds, refusing what no run's clock reads.
func unixSecs(v float64) (time.Time, bool) {
	if math.IsNaN(v) || v <= 0 || v > 1e11 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}
