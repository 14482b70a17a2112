package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// vllmResult is the part of a vllm bench serve --save-result file pel reads; the
// per-request arrays come with --save-detailed, index i of each being request i.
type vllmResult struct {
	Date           string          `json:"date"`
	Backend        string          `json:"backend"`
	ModelID        string          `json:"model_id"`
	RequestRate    json.RawMessage `json:"request_rate"` // a number, or "inf"
	Burstiness     *float64        `json:"burstiness"`
	MaxConcurrency *int            `json:"max_concurrency"`
	Duration       *float64        `json:"duration"`
	Completed      *int            `json:"completed"`

	InputLens  []float64   `json:"input_lens"`
	OutputLens []float64   `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Errors     []string    `json:"errors"`
	// StartTimes, which recent vllm bench serve versions write, is each request's send
	// time on the benchmark's monotonic clock, in seconds.
	StartTimes []float64 `json:"start_times"`
}

func readVLLM(r io.Reader, name string, s *sink) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var v vllmResult
	if err := strictJSON(pythonJSON(data), &v); err != nil {
		return badf("%s: not a vllm bench serve result: %v", name, jsonError(data, err))
	}
	n := len(v.TTFTs)
	if n == 0 {
		return badf("%s: ttfts: no per-request arrays (write the file with vllm bench serve --save-result --save-detailed)", name)
	}
	for _, a := range []struct {
		field string
		n     int
	}{{"input_lens", len(v.InputLens)}, {"output_lens", len(v.OutputLens)}, {"itls", len(v.ITLs)}} {
		if a.n != n {
			return badf("%s: %s: %d entries, ttfts has %d (one per request each)", name, a.field, a.n, n)
		}
	}
	if v.Errors != nil && len(v.Errors) != n {
		return badf("%s: errors: %d entries, ttfts has %d", name, len(v.Errors), n)
	}
	f := &s.facts
	f.model, f.engine = v.ModelID, vllmEngine(v.Backend)
	rate, err := vllmRate(v.RequestRate)
	if err != nil {
		return badf("%s: request_rate: %v", name, err)
	}
	f.rate = rate
	// vllm bench serve's request_rate defaults to inf: every request due at once.
	f.burst = rate == 0
	if v.Burstiness != nil {
		if *v.Burstiness <= 0 {
			return badf("%s: burstiness: %v is not a gamma shape (want > 0)", name, *v.Burstiness)
		}
		f.burstiness = *v.Burstiness
	}
	if v.MaxConcurrency != nil && *v.MaxConcurrency > 0 {
		f.concurrency = *v.MaxConcurrency
	}
	start := time.Unix(0, 0).UTC()
	if t, err := time.Parse("20060102-150405", v.Date); err == nil {
		start = t
		f.notes = append(f.notes, "the run's start is the file's date field, read as UTC (vllm bench serve writes the local time without a zone)")
	}
	if v.Duration != nil && *v.Duration > 0 {
		f.durationS = *v.Duration
	}
	for i, g := range v.ITLs {
		if len(g) >= record.MaxChunkTimings {
			return badf("%s: itls[%d]: %d inter-token latencies, over the %d a record holds (record.MaxChunkTimings): not a request vllm bench serve measures", name, i, len(g), record.MaxChunkTimings-1)
		}
	}
	// Without start_times the file does not say when each request was sent, but it says
	// how they were offered: all at once (request_rate inf), or at request_rate, each
	// through one of max_concurrency slots when it is set. The schedule is rebuilt from
	// that and each request's own latency, so the rates the run reaches are the file's.
	sendAt, dueAt := vllmSchedule(&v, f, start, n)
	if len(v.StartTimes) > 0 {
		if len(v.StartTimes) != n {
			return badf("%s: start_times: %d entries, ttfts has %d", name, len(v.StartTimes), n)
		}
		t0 := v.StartTimes[0]
		for i, t := range v.StartTimes {
			if d := t - t0; d < -1e6 || d > 1e6 {
				return badf("%s: start_times[%d]: %v is %v s from the first request's", name, i, t, d)
			}
			t0 = min(t0, t)
		}
		f.sendTimes = true
		sendAt = func(i int) time.Time {
			return start.Add(time.Duration((v.StartTimes[i] - t0) * float64(time.Second)))
		}
		dueAt = sendAt
	}
	f.perChunk = true
	for i := 0; i < n; i++ {
		rec := &record.Record{TokenSource: record.TokensUsage}
		rec.SentAt = sendAt(i)
		rec.ScheduledAt = dueAt(i)
		if q := rec.SentAt.Sub(rec.ScheduledAt); q > 0 {
			rec.FirstSentAt = rec.SentAt
			rec.ClientQueueUS = q.Microseconds() // waited for a max_concurrency slot
		}
		at := func(field string) string { return fmt.Sprintf("%s[%d]", field, i) }
		if rec.PromptTokens, err = checkTokens(name+": "+at("input_lens"), v.InputLens[i]); err != nil {
			return err
		}
		if rec.OutputTokens, err = checkTokens(name+": "+at("output_lens"), v.OutputLens[i]); err != nil {
			return err
		}
		msg := ""
		if v.Errors != nil {
			msg = v.Errors[i]
		}
		ttft, ok := secs(v.TTFTs[i])
		if !ok {
			return badf("%s: %s: %v is not a time to first token in seconds", name, at("ttfts"), v.TTFTs[i])
		}
		// vllm bench serve marks a failed request by its error text; one without output
		// (no first token) failed too.
		if msg != "" || ttft == 0 {
			rec.Status, rec.ErrorClass = errorClass(0, msg)
			rec.Error = firstLine(msg)
			if rec.Error == "" {
				// The tool counted it a success, yet no token came: an empty completion,
				// which the file shows as no more than that.
				rec.Status, rec.ErrorClass = record.StatusInvalid, record.ErrInvalid
				rec.Error = "vllm bench serve recorded a success with no output token (ttft 0, output_lens 0): an empty completion"
			} else if rec.ErrorClass == record.ErrStreamEvent {
				rec.Error = "the measuring client failed on a stream chunk without choices (the server's in-band error object): " + rec.Error
			}
			rec.DoneAt = rec.SentAt
			if err := s.emit(rec); err != nil {
				return err
			}
			continue
		}
		gaps := make([]time.Duration, len(v.ITLs[i]))
		for j, g := range v.ITLs[i] {
			if gaps[j], ok = secs(g); !ok {
				return badf("%s: itls[%d][%d]: %v is not an inter-token latency in seconds", name, i, j, g)
			}
		}
		e2e := ttft
		for _, g := range gaps {
			e2e += g
		}
		if e2e.Microseconds() > quantile.MaxUS {
			return badf("%s: itls[%d]: the request's first token and gaps add to %v, past the %v pel records a latency to: not a request vllm bench serve measures", name, i, e2e.Round(time.Second), time.Duration(quantile.MaxUS)*time.Microsecond)
		}
		rec.Status = record.StatusOK
		chunks(rec, ttft, gaps)
		rec.DoneAt = rec.LastTokenAt
		if err := s.emit(rec); err != nil {
			return err
		}
	}
	return nil
}

func vllmRate(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		if strings.EqualFold(str, "inf") {
			return 0, nil
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%q is not a rate", str)
		}
		return v, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || v < 0 {
		return 0, fmt.Errorf("%s is not a rate", raw)
	}
	return v, nil
}

// vllmEngine is the engine a vllm bench serve backend name implies, when it implies one.
func vllmEngine(backend string) string {
	switch b := strings.ToLower(backend); {
	case b == "vllm" || b == "vllm-chat":
		return "vllm"
	case strings.HasPrefix(b, "sglang"):
		return "sglang"
	case b == "tgi":
		return "tgi"
	case b == "tensorrt-llm":
		return "trtllm"
	}
	return ""
}

// strictJSON decodes one JSON value and refuses anything after it.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// pythonJSON rewrites the NaN, Infinity and -Infinity that Python's json module writes
// (as in a failed request's statistics) to null, outside strings, so encoding/json reads
// the file; a field that must be a number then says so by name.
func pythonJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if in {
			out = append(out, c)
			if c == '\\' && i+1 < len(data) {
				i++
				out = append(out, data[i])
			} else if c == '"' {
				in = false
			}
			continue
		}
		switch {
		case c == '"':
			in = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out = append(out, "null"...)
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out = append(out, "null"...)
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out = append(out, "null"...)
			i += len("Infinity") - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// vllmSchedule rebuilds when each request of a file without start_times was due and sent:
// due at i/request_rate (all at 0 for request_rate inf; the file keeps no draw of a Poisson
// or gamma process, so the spacing is the rate's mean), and sent when one of
// max_concurrency slots came free (at once without a cap), a slot being held for the
// request's own end-to-end time (first token plus its inter-token gaps; a failed request's
// is not known and frees its slot at once). The notes say so.
func vllmSchedule(v *vllmResult, f *facts, start time.Time, n int) (sendAt, dueAt func(int) time.Time) {
	due := make([]time.Duration, n)
	sent := make([]time.Duration, n)
	if f.rate > 0 {
		for i := range due {
			due[i] = time.Duration(float64(i) / f.rate * float64(time.Second))
		}
	}
	e2e := func(i int) time.Duration {
		if v.Errors != nil && v.Errors[i] != "" {
			return 0
		}
		d, ok := secs(v.TTFTs[i])
		if !ok {
			return 0
		}
		for _, g := range v.ITLs[i] {
			if x, ok := secs(g); ok {
				d += x
			}
		}
		return d
	}
	if c := f.concurrency; c > 0 {
		free := make([]time.Duration, c) // when each slot is next free
		for i := range sent {
			k := 0
			for j := range free {
				if free[j] < free[k] {
					k = j
				}
			}
			sent[i] = max(due[i], free[k])
			free[k] = sent[i] + e2e(i)
		}
	} else {
		copy(sent, due)
	}
	switch {
	case f.rate == 0 && f.concurrency == 0:
		f.notes = append(f.notes, "a burst run (request_rate inf, no max_concurrency): every request was due and sent at once")
	case f.rate == 0:
		f.notes = append(f.notes, fmt.Sprintf("request_rate inf with max_concurrency %d: every request was due at once and sent when one of the %d slots came free (each held for its request's own latency)", f.concurrency, f.concurrency))
	default:
		how := "Poisson"
		if f.burstiness > 0 && f.burstiness != 1 {
			how = "gamma"
		}
		s := fmt.Sprintf("offered at request_rate %g/s (%s in the tool; the file keeps no draw, so arrivals are spaced at the rate's mean)", f.rate, how)
		if f.concurrency > 0 {
			s += fmt.Sprintf(", each sent when one of max_concurrency %d slots came free", f.concurrency)
		}
		f.notes = append(f.notes, s)
	}
	return func(i int) time.Time { return start.Add(sent[i]) }, func(i int) time.Time { return start.Add(due[i]) }
}

// jsonError says where a JSON file went wrong in terms of the file: the byte offset where
// it ends early or holds a syntax error, the field and request index where a value has the
// wrong type (Go's own message names Go types and struct fields).
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the file ends at byte %d inside its JSON value (cut short?)", len(data))
	case errors.As(err, &se):
		return fmt.Errorf("byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the top level"
		}
		if i, ok := elementIndex(data, te.Field, te.Offset); ok {
			field = fmt.Sprintf("%s[%d]", field, i) // the request's index
		}
		return fmt.Errorf("%s, near byte %d: a JSON %s where the file format wants %s", field, te.Offset, te.Value, jsonKind(te.Type.Kind().String()))
	}
	return err
}

// jsonKind names a Go kind as the JSON it decodes from.
func jsonKind(k string) string {
	switch k {
	case "float64", "float32", "int", "int64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	}
	return k
}

// elementIndex is which element of the top-level array field the byte offset falls in (the
// request's index in a per-request array), by counting the array's own commas before it.
func elementIndex(data []byte, field string, off int64) (int, bool) {
	if field == "" || strings.Contains(field, ".") || off <= 0 || off > int64(len(data)) {
		return 0, false
	}
	key := []byte(`"` + field + `"`)
	k := bytes.LastIndex(data[:off], key)
	if k < 0 {
		return 0, false
	}
	open := bytes.IndexByte(data[k:off], '[')
	if open < 0 {
		return 0, false
	}
	depth, idx, inStr := 0, 0, false
	for i := k + open; i < int(off); i++ {
		c := data[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			idx++
		}
	}
	return idx, depth >= 1
}
