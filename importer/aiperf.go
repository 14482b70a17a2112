package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/lineio"
	"github.com/pel-ladder/pel/record"
)

// MaxLine bounds one line of a JSONL result file (a record with a 65,536-chunk stream's
// latencies is ~1.5 MiB).
const MaxLine = 16 << 20

// aiperfValue is one metric of an AIPerf record: a number or a list, with its unit.
type aiperfValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

type aiperfRecord struct {
	Metadata struct {
		TimestampNS    *int64 `json:"timestamp_ns"`     // AIPerf 0.1: the request's start
		RequestStartNS *int64 `json:"request_start_ns"` // later versions
		RequestAckNS   *int64 `json:"request_ack_ns"`
		RequestEndNS   *int64 `json:"request_end_ns"`
		XRequestID     string `json:"x_request_id"`
		CreditPhase    string `json:"credit_phase"`
		BenchmarkPhase string `json:"benchmark_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]aiperfValue `json:"metrics"`
	Error   *struct {
		Code    int    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// aiperfSummary is the part of profile_export_aiperf.json, written beside the JSONL, that
// says how the load was generated.
type aiperfSummary struct {
	InputConfig struct {
		Endpoint struct {
			ModelNames []string `json:"model_names"`
		} `json:"endpoint"`
		Loadgen struct {
			Concurrency int     `json:"concurrency"`
			RequestRate float64 `json:"request_rate"`
		} `json:"loadgen"`
	} `json:"input_config"`
}

// AIPerfSummaryFile is the aggregate file AIPerf writes next to profile_export.jsonl.
const AIPerfSummaryFile = "profile_export_aiperf.json"

func readAIPerf(r io.Reader, name string, s *sink) error {
	s.facts.sendTimes = true
	readAIPerfSummary(name, &s.facts)
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		raw, err := lineio.Read(br, MaxLine)
		if errors.Is(err, lineio.ErrTooLong) {
			return badf("%s:%d: line longer than %d bytes", name, line, MaxLine)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if perr := aiperfLine(raw, fmt.Sprintf("%s:%d", name, line), s); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

func readAIPerfSummary(name string, f *facts) {
	p := filepath.Join(filepath.Dir(name), AIPerfSummaryFile)
	in, st, err := contract.OpenFile(p)
	if err != nil {
		return
	}
	defer in.Close()
	if st.Size() > 64<<20 {
		return
	}
	var sum aiperfSummary
	if json.NewDecoder(in).Decode(&sum) != nil {
		f.notes = append(f.notes, fmt.Sprintf("%s beside the file is not AIPerf's summary: the arrival is inferred from the records alone", AIPerfSummaryFile))
		return
	}
	lg := sum.InputConfig.Loadgen
	if lg.Concurrency > 0 && lg.Concurrency <= contract.MaxConcurrency {
		f.concurrency = lg.Concurrency
	}
	if lg.RequestRate > 0 && !math.IsInf(lg.RequestRate, 0) {
		f.rate = lg.RequestRate
		if f.concurrency > 0 {
			// AIPerf's "Request Rate with Max Concurrency": sleep to the next arrival, then
			// wait for a slot, with no catch-up once slots free; the inferred contract's
			// max_in_flight keeps delayed tasks due and sends the backlog as slots free.
			f.notes = append(f.notes, fmt.Sprintf("request rate %g/s with at most %d in flight: where that cap held requests back, AIPerf did not catch up afterwards; "+
				"the inferred contract's max_in_flight does, so a re-run offers more load than this run did while the cap binds", f.rate, f.concurrency))
		}
	}
	if m := sum.InputConfig.Endpoint.ModelNames; len(m) > 0 {
		f.model = m[0]
	}
	f.notes = append(f.notes, fmt.Sprintf("arrival and model read from %s beside the file", AIPerfSummaryFile))
}

func aiperfLine(raw []byte, at string, s *sink) error {
	var v aiperfRecord
	if err := json.Unmarshal(raw, &v); err != nil {
		return badf("%s: not an AIPerf record: %v", at, err)
	}
	md := v.Metadata
	start := md.RequestStartNS
	if start == nil {
		start = md.TimestampNS
	}
	if start == nil || *start <= 0 {
		return badf("%s: metadata.request_start_ns: missing (nor timestamp_ns)", at)
	}
	rec := &record.Record{ID: md.XRequestID, TokenSource: record.TokensUsage}
	if len(rec.ID) > 128 {
		rec.ID = rec.ID[:128]
	}
	rec.SentAt = time.Unix(0, *start).UTC()
	rec.ScheduledAt = rec.SentAt
	if phase := md.BenchmarkPhase + md.CreditPhase; phase == "warmup" {
		rec.Phase = record.PhaseCold
	}
	if md.RequestAckNS != nil && *md.RequestAckNS >= *start {
		rec.HeadersAt = time.Unix(0, *md.RequestAckNS).UTC()
	}
	num := func(key string) (float64, bool, error) {
		m, ok := v.Metrics[key]
		if !ok {
			return 0, false, nil
		}
		var f float64
		if err := json.Unmarshal(m.Value, &f); err != nil {
			return 0, false, badf("%s: metrics.%s.value: want a number, got %.40s", at, key, m.Value)
		}
		return f, true, nil
	}
	dur := func(key string) (time.Duration, bool, error) {
		f, ok, err := num(key)
		if !ok || err != nil {
			return 0, ok, err
		}
		d, ok := inUnit(f, v.Metrics[key].Unit)
		if !ok {
			return 0, false, badf("%s: metrics.%s: %v %s is not a latency", at, key, f, v.Metrics[key].Unit)
		}
		return d, true, nil
	}
	tokens := func(keys ...string) (int, error) {
		for _, k := range keys {
			f, ok, err := num(k)
			if err != nil {
				return 0, err
			}
			if ok {
				return checkTokens(at+": metrics."+k, f)
			}
		}
		return 0, nil
	}
	var err error
	if rec.PromptTokens, err = tokens("input_sequence_length", "error_isl"); err != nil {
		return err
	}
	if v.Error != nil || md.WasCancelled {
		code, msg := 0, ""
		if v.Error != nil {
			code, msg = v.Error.Code, v.Error.Type+": "+v.Error.Message
		}
		if md.WasCancelled || v.Error != nil && v.Error.Type == "RequestCancellationError" {
			// AIPerf cancels requests on purpose (--request-cancellation-rate): cancelled,
			// not failed.
			rec.Status = record.StatusCancelled
		} else {
			rec.Status, rec.ErrorClass = errorClass(code, msg)
			rec.HTTPStatus = code
		}
		rec.Error = firstLine(msg)
		if md.RequestEndNS != nil && *md.RequestEndNS >= *start {
			rec.DoneAt = time.Unix(0, *md.RequestEndNS).UTC()
		} else {
			rec.DoneAt = rec.SentAt
		}
		return s.emit(rec)
	}
	// Output tokens: output_sequence_length counts reasoning tokens too (AIPerf's own ITL
	// divides by it); output_token_count only the visible ones.
	if rec.OutputTokens, err = tokens("output_sequence_length", "output_token_count"); err != nil {
		return err
	}
	latency, ok, err := dur("request_latency")
	if err != nil {
		return err
	}
	if !ok {
		return badf("%s: metrics.request_latency: missing on a request without error", at)
	}
	rec.DoneAt = rec.SentAt.Add(latency)
	rec.Status = record.StatusOK
	ttft, hasTTFT, err := dur("ttft")
	if err == nil && !hasTTFT {
		ttft, hasTTFT, err = dur("time_to_first_token")
	}
	if err != nil {
		return err
	}
	if !hasTTFT {
		// Not streamed: the whole answer came at once.
		rec.FirstTokenAt, rec.LastTokenAt = rec.DoneAt, rec.DoneAt
		return s.emit(rec)
	}
	if icl, ok := v.Metrics["inter_chunk_latency"]; ok {
		var vals []float64
		if err := json.Unmarshal(icl.Value, &vals); err != nil {
			return badf("%s: metrics.inter_chunk_latency.value: want a list of numbers: %v", at, err)
		}
		gaps := make([]time.Duration, len(vals))
		for i, g := range vals {
			d, ok := inUnit(g, icl.Unit)
			if !ok {
				return badf("%s: metrics.inter_chunk_latency.value[%d]: %v %s is not a latency", at, i, g, icl.Unit)
			}
			gaps[i] = d
		}
		s.facts.perChunk = true
		chunks(rec, ttft, gaps)
		return s.emit(rec)
	}
	// Only the first token and the end: the rest of the tokens spread over the gap, in two
	// events that are not the stream's.
	rec.FirstTokenAt, rec.LastTokenAt = rec.SentAt.Add(ttft), rec.DoneAt
	if rec.OutputTokens > 1 {
		rec.ChunkUS = []int64{ttft.Microseconds(), latency.Microseconds()}
		rec.ChunkTokens = []int{1, rec.OutputTokens - 1}
		rec.AddFlag(record.FlagEventsSummarized)
	}
	return s.emit(rec)
}

// inUnit is a latency given in unit (AIPerf writes ms; ns, us and s are read too).
func inUnit(v float64, unit string) (time.Duration, bool) {
	switch unit {
	case "ms", "":
		return ms(v)
	case "ns":
		return ms(v / 1e6)
	case "us":
		return ms(v / 1e3)
	case "s", "sec":
		return secs(v)
	}
	return 0, false
}
