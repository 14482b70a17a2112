package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
)

// Event is one arrival of a replay trace.
type Event struct {
	At           time.Duration // offset from the trace's start (before the contract's speed)
	PromptTokens int           // 0: drawn from the task's distribution
	OutputTokens int           // 0: drawn from the task's distribution
	Task         string        // "": chosen by weight
	Line         int           // 1-based line in the trace
}

// LoadReplay reads a replay trace file (see ReadReplay).
func LoadReplay(path string) ([]Event, error) {
	f, _, err := contract.OpenFile(path) // a FIFO would block: regular files only
	if err != nil {
		return nil, fmt.Errorf("replay trace: %w", err)
	}
	defer f.Close()
	return ReadReplay(f, path)
}

// ReadReplay reads a replay trace: one JSON object per line,
//
//	{"t": 0.25, "prompt_tokens": 512, "output_tokens": 128, "task": "short-chat"}
//
// where "t" is seconds from the trace's start, or instead "timestamp": an RFC 3339 time
// ("2024-05-01T12:00:00.250Z") or Unix seconds (1714564800.25), made relative to the
// earliest one. One file uses one of the two. prompt_tokens, output_tokens and task are
// optional (absent: drawn from the contract / chosen by weight); a task must name a
// contract task (checked by New). Unknown keys are errors, to catch misspelt lengths.
// Events are replayed in time order (a stable sort), so a trace need not be sorted.
func ReadReplay(r io.Reader, name string) ([]Event, error) {
	var events []Event
	var stamps []int64
	mode := ""
	err := eachJSON(r, name, func(raw []byte, line int) error {
		var v struct {
			T            *float64        `json:"t"`
			Timestamp    json.RawMessage `json:"timestamp"`
			PromptTokens *int            `json:"prompt_tokens"`
			OutputTokens *int            `json:"output_tokens"`
			Task         *string         `json:"task"`
		}
		if err := decodeStrict(raw, &v); err != nil {
			return fmt.Errorf("%s:%d: bad trace line: %v", name, line, err)
		}
		e := Event{Line: line}
		switch {
		case v.T != nil && v.Timestamp != nil:
			return fmt.Errorf("%s:%d: give t or timestamp, not both", name, line)
		case v.T != nil:
			if mode == "timestamp" {
				return fmt.Errorf("%s:%d: t here but timestamp on earlier lines: use one", name, line)
			}
			mode = "t"
			if *v.T < 0 || math.IsNaN(*v.T) || *v.T > 1e9 {
				return fmt.Errorf("%s:%d: t out of range: %v", name, line, *v.T)
			}
			e.At = time.Duration(*v.T * 1e9)
		case v.Timestamp != nil:
			if mode == "t" {
				return fmt.Errorf("%s:%d: timestamp here but t on earlier lines: use one", name, line)
			}
			mode = "timestamp"
			ns, err := parseTimestamp(v.Timestamp)
			if err != nil {
				return fmt.Errorf("%s:%d: %v", name, line, err)
			}
			stamps = append(stamps, ns)
		default:
			return fmt.Errorf(`%s:%d: want "t" (seconds) or "timestamp"`, name, line)
		}
		for _, f := range []struct {
			key string
			p   *int
			dst *int
		}{{"prompt_tokens", v.PromptTokens, &e.PromptTokens}, {"output_tokens", v.OutputTokens, &e.OutputTokens}} {
			if f.p != nil {
				if *f.p < 1 || *f.p > MaxLength {
					return fmt.Errorf("%s:%d: %s out of range: %d", name, line, f.key, *f.p)
				}
				*f.dst = *f.p
			}
		}
		if v.Task != nil {
			e.Task = *v.Task
		}
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%s: empty trace", name)
	}
	if mode == "timestamp" {
		t0 := stamps[0]
		for _, s := range stamps {
			t0 = min(t0, s)
		}
		for i := range events {
			d := stamps[i] - t0
			if d < 0 || d > int64(1e9)*int64(time.Second) {
				return nil, fmt.Errorf("%s:%d: timestamp too far from the trace's start", name, events[i].Line)
			}
			events[i].At = time.Duration(d)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].At < events[j].At })
	return events, nil
}

// parseTimestamp reads an RFC 3339 string or Unix seconds, as nanoseconds since the epoch.
func parseTimestamp(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("bad timestamp: %v", err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("bad timestamp %q (want RFC 3339, like 2024-05-01T12:00:00.25Z, or Unix seconds)", s)
		}
		if t.Year() < 1970 || t.Year() > 2200 {
			return 0, fmt.Errorf("timestamp %q out of range", s)
		}
		return t.UnixNano(), nil
	}
	return unixNanos(string(raw))
}

// unixNanos parses decimal Unix seconds exactly ("1714564800.25"); float64 would lose
// about 0.2 µs at today's epoch. Exponent forms fall back to float64.
func unixNanos(s string) (int64, error) {
	bad := fmt.Errorf("bad timestamp %s (want RFC 3339 or Unix seconds)", s)
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > 1e13 || math.IsNaN(f) {
			return 0, bad
		}
		return int64(f * 1e9), nil
	}
	ip, fp, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(ip, 10, 64)
	if err != nil || sec < 0 || sec > 1e10 {
		return 0, bad
	}
	var ns int64
	if fp != "" {
		if len(fp) > 9 {
			fp = fp[:9]
		}
		frac, err := strconv.ParseUint(fp, 10, 64)
		if err != nil {
			return 0, bad
		}
		ns = int64(frac)
		for i := len(fp); i < 9; i++ {
			ns *= 10
		}
	}
	return sec*1e9 + ns, nil
}
