package scrape

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/internal/safefile"
)

// Kinds of endpoint.
const (
	KindEngine = "engine"
	KindDCGM   = "dcgm"
)

// Origins of a sample.
const (
	OriginScrape     = "scrape"     // pel fetched the endpoint itself
	OriginPrometheus = "prometheus" // converted from a Prometheus query_range result
)

// Sample is one line of metrics.jsonl: one attempt to read one endpoint at one instant.
// A failed attempt is kept (OK false, Err set) so gaps stay visible after the fact.
type Sample struct {
	T        time.Time `json:"t"`                // when the request was sent (Prometheus: the query step)
	Endpoint string    `json:"ep"`               // URL scraped, or "prom:<instance>" for the Prometheus path
	Kind     string    `json:"kind"`             // engine | dcgm
	Origin   string    `json:"origin,omitempty"` // scrape | prometheus
	// Engine is the adapter forced at sampling time (--engine), so a later analysis
	// (pel analyze) reads the page the same way; empty means auto-detect.
	Engine   string   `json:"engine,omitempty"`
	OK       bool     `json:"ok"`
	Err      string   `json:"err,omitempty"`
	DurMs    float64  `json:"dur_ms,omitempty"` // request duration (scrape origin only)
	Families []Family `json:"fam,omitempty"`
}

// Family is one parsed metric family. Counter families are stored under their exposed
// sample name (with "_total"), whatever the exposition format, so that text and
// OpenMetrics pages of the same engine read the same.
type Family struct {
	Name    string   `json:"n"`
	Type    string   `json:"y"` // counter | gauge | histogram | summary | untyped
	Metrics []Metric `json:"m"`
}

// Metric is one labelled series of a family. Scalar types carry V; histograms carry LE
// (finite upper bounds, ascending), B (cumulative counts per bound), C (count, i.e. the
// +Inf bucket) and S (sum); summaries carry Q/QV (quantile, value), C and S.
type Metric struct {
	Labels map[string]string `json:"l,omitempty"`
	V      *Num              `json:"v,omitempty"`
	C      *Num              `json:"c,omitempty"`
	S      *Num              `json:"s,omitempty"`
	LE     []Num             `json:"le,omitempty"`
	B      []Num             `json:"b,omitempty"`
	Q      []Num             `json:"q,omitempty"`
	QV     []Num             `json:"qv,omitempty"`
}

// Num is a float64 whose JSON form also carries NaN and ±Inf (as the strings "NaN",
// "+Inf", "-Inf"), which /metrics pages may legitimately contain.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("number %q: %w", s, err)
		}
		*n = Num(f)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("number %s: %w", b, err)
	}
	*n = Num(f)
	return nil
}

func numPtr(f float64) *Num { n := Num(f); return &n }

// Writer appends samples to metrics.jsonl. It is safe for concurrent use: every
// endpoint goroutine writes whole lines under one lock, so lines never interleave.
type Writer struct {
	f   *os.File
	w   *bufio.Writer
	err error
}

// CreateWriter creates path, which must not exist (nor be a link), with mode 0600.
func CreateWriter(path string) (*Writer, error) {
	f, err := safefile.Create(path)
	if err != nil {
		return nil, err
	}
	return newWriter(f), nil
}

func newWriter(f *os.File) *Writer { return &Writer{f: f, w: bufio.NewWriterSize(f, 64<<10)} }

// Write appends one sample and flushes it, so a crash loses at most the line in flight.
// Callers serialise calls (the Collector holds a mutex).
func (w *Writer) Write(s *Sample) error {
	if w.err != nil {
		return w.err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if len(b) >= MaxSampleLine || countObjects(b, maxLineObjects) > maxLineObjects {
		// Kept as a gap: the reader refuses such a line, and one page must not cost the run.
		gap := Sample{T: s.T, Endpoint: s.Endpoint, Kind: s.Kind, Origin: s.Origin, Engine: s.Engine, DurMs: s.DurMs,
			Err: fmt.Sprintf("page of %d bytes as JSON, over metrics.jsonl's line bound of %d MiB (MaxSampleLine)", len(b), MaxSampleLine>>20)}
		if b, err = json.Marshal(&gap); err != nil {
			return err
		}
	}
	b = append(b, '\n')
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return err
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	ferr := w.w.Flush()
	cerr := w.f.Close()
	if w.err != nil {
		return w.err
	}
	if ferr != nil {
		return ferr
	}
	return cerr
}

// ReadSamples reads metrics.jsonl whole. A malformed line is an error naming the file and
// line; a truncated last line (a crash mid-write) is skipped. It holds every sample: an
// analysis streams the file instead (FillFromDir); this serves tests and small files.
func ReadSamples(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := DecodeSamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return out, nil
}

// lineError is a decode error at a line of metrics.jsonl.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// DecodeSamples reads JSONL samples from r into memory (see EachSample).
func DecodeSamples(r io.Reader) ([]Sample, error) {
	var out []Sample
	err := EachSample(r, func(s *Sample) error {
		out = append(out, *s)
		return nil
	})
	return out, err
}

// MaxSampleLine bounds one line of metrics.jsonl. A line is one page: at most MaxPageBytes
// of text, whose JSON form is smaller (a histogram's labels are written once, not per
// bucket), so 16 MiB holds any page pel keeps; the Writer turns a sample that would not fit
// into a failed one, so pel never writes a line its reader refuses.
const MaxSampleLine = MaxPageBytes

// maxLineObjects bounds the JSON objects of one line (a sample, its families, metrics and
// label sets): a page holds at most MaxPageSamples samples, a Prometheus range answer
// MaxPromSeries series, each at most one family, one metric and one label set. A line of
// many tiny objects would otherwise decode to ~50x its size.
const maxLineObjects = 3*max(MaxPageSamples, MaxPromSeries) + 1024

// EachSample decodes the JSONL samples of r one line at a time, calling f with each (a new
// Sample every call, which f may keep). A malformed line, a line longer than MaxSampleLine
// or with more objects than a page holds is an error naming the line, found before the
// line is decoded; a torn last line (the writer died mid-line) is skipped.
func EachSample(r io.Reader, f func(*Sample) error) error {
	return eachSample(r, func(line int, b []byte, last bool) error {
		var s Sample
		if jerr := json.Unmarshal(b, &s); jerr != nil {
			if last {
				return errTorn
			}
			return &lineError{line, jerr}
		}
		if s.Endpoint == "" || s.T.IsZero() {
			return &lineError{line, errors.New(`sample without "t" or "ep"`)}
		}
		return f(&s)
	})
}

// errTorn ends a read at a torn last line.
var errTorn = errors.New("torn last line")

// eachSample calls f with every non-blank line of r, trimmed; last is true for a final line
// without its newline (which f may refuse with errTorn: the read then ends without error).
func eachSample(r io.Reader, f func(line int, b []byte, last bool) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				if len(long) > MaxSampleLine {
					return &lineError{line + 1, fmt.Errorf("line longer than %d MiB (MaxSampleLine): not a metrics.jsonl pel writes", MaxSampleLine>>20)}
				}
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(b) > 0 {
			line++
			if len(b) > MaxSampleLine+1 {
				return &lineError{line, fmt.Errorf("line longer than %d MiB (MaxSampleLine): not a metrics.jsonl pel writes", MaxSampleLine>>20)}
			}
			complete := b[len(b)-1] == '\n'
			if trimmed := bytes.Trim(b, jsonSpace); len(trimmed) > 0 {
				if n := countObjects(trimmed, maxLineObjects); n > maxLineObjects {
					return &lineError{line, fmt.Errorf("more than %d JSON objects on one line: no page pel keeps has as many", maxLineObjects)}
				}
				ferr := f(line, trimmed, !complete && errors.Is(err, io.EOF))
				if ferr == errTorn {
					return nil
				}
				if ferr != nil {
					return ferr
				}
			}
		}
		if err != nil {
			return nil // io.EOF
		}
	}
}

// countObjects counts the '{' of b outside strings, stopping once past limit.
func countObjects(b []byte, limit int) int {
	n, in, esc := 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && c == '{':
			n++
			if n > limit {
				return n
			}
		}
	}
	return n
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259 §2).
const jsonSpace = " \t\r\n"
