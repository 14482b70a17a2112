package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Bounds on one scraped page, Prometheus' body_size_limit and sample_limit: a page over
// either is a failed sample (a gap of that endpoint, its error naming the bound), never a
// parse that exhausts memory and loses the whole run. expfmt builds every family in memory
// at ~1.4 KiB per sample (BENCHMARKS.md), and every sample is kept in metrics.jsonl.
const (
	// MaxPageBytes: engine and dcgm-exporter pages are 10–500 KiB; 16 MiB is 30x the largest.
	MaxPageBytes = 16 << 20
	// MaxPageSamples counts sample lines (each histogram bucket is one, as in Prometheus):
	// vLLM exposes ~1,000, dcgm-exporter on 8 GPUs with MIG ~3,000, Triton with 100 models
	// ~3,000; 20,000 leaves a 5x margin and keeps a page's parse under ~30 MiB.
	MaxPageSamples = 20_000
)

// PageError is a /metrics page that does not parse. Line is 1-based (0 when unknown).
type PageError struct {
	Line int
	Msg  string
}

func (e *PageError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ParsePage parses one /metrics response body with prometheus/common/expfmt.
// contentType is the response's Content-Type: "" or text/plain selects the Prometheus
// text format; application/openmetrics-text selects the OpenMetrics decoder; the
// delimited protobuf format is also accepted. The result is sorted by family name, and
// normalised so the same engine reads the same whatever format it was served in:
//   - OpenMetrics counter families get their "_total" sample name back;
//   - a histogram exposed without TYPE (flat X_bucket{le=..}, X_count, X_sum series,
//     parsed as untyped) is regrouped into one histogram family X.
//
// A page over MaxPageBytes or MaxPageSamples is an error naming the bound.
func ParsePage(r io.Reader, contentType string) (fams []Family, err error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPageBytes {
		return nil, &PageError{Msg: fmt.Sprintf("page over %d MiB (pel's bound, MaxPageBytes): not parsed", MaxPageBytes>>20)}
	}
	return parsePage(b, contentType)
}

func parsePage(b []byte, contentType string) (fams []Family, err error) {
	defer func() {
		// expfmt is third-party code fed with outside input: a panic there must become
		// an error naming the page, not a crash of the run.
		if p := recover(); p != nil {
			fams, err = nil, &PageError{Msg: fmt.Sprintf("parser panic: %v", p)}
		}
	}()
	format := expfmt.FmtText
	if contentType != "" {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		if f := expfmt.ResponseFormat(h); f != expfmt.FmtUnknown {
			format = f
		}
	}
	var raw []*dto.MetricFamily
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	text := format.FormatType() == expfmt.TypeTextPlain || format.FormatType() == expfmt.TypeUnknown
	if text || openMetrics {
		// Counted before parsing: the parser would hold them all first.
		if n := countSampleLines(b); n > MaxPageSamples {
			return nil, tooManySamples(n)
		}
	}
	if !text && !openMetrics {
		// Counted on the wire before decoding: the decoder would allocate them all first.
		if n, err := countProtoObjects(b, maxPageObjects); err == nil && n > maxPageObjects {
			return nil, tooManyObjects(n)
		}
	}
	r := bytes.NewReader(b)
	if text {
		// UTF-8 validation: the zero TextParser is invalid since prometheus/common v0.66.
		p := expfmt.NewTextParser(model.UTF8Validation)
		m, perr := p.TextToMetricFamilies(r)
		if perr != nil {
			return nil, pageError(perr)
		}
		for _, f := range m {
			raw = append(raw, f)
		}
	} else {
		dec := expfmt.NewDecoder(r, format)
		samples := 0
		for {
			f := &dto.MetricFamily{}
			derr := dec.Decode(f)
			if errors.Is(derr, io.EOF) {
				break
			}
			if derr != nil {
				return nil, pageError(derr)
			}
			for _, m := range f.GetMetric() {
				samples += 1 + len(m.GetHistogram().GetBucket()) + len(m.GetSummary().GetQuantile())
			}
			if samples > MaxPageSamples {
				return nil, tooManySamples(samples)
			}
			if len(f.GetMetric()) > 0 {
				raw = append(raw, f)
			}
		}
	}
	out := make([]Family, 0, len(raw))
	for _, f := range raw {
		out = append(out, convertFamily(f, openMetrics))
	}
	out = regroupHistograms(out)
	sortFamilies(out)
	return out, nil
}

// countSampleLines counts the lines of a text or OpenMetrics page that hold a sample: not
// blank, not a comment (# HELP, # TYPE, # EOF...).
func countSampleLines(b []byte) int {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		line := b
		if i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		for len(line) > 0 && (line[0] == ' ' || line[0] == '\t' || line[0] == '\r') {
			line = line[1:]
		}
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

func tooManySamples(n int) error {
	return &PageError{Msg: fmt.Sprintf("page has %d samples or more, over pel's bound of %d (MaxPageSamples, like Prometheus' sample_limit): not parsed", n, MaxPageSamples)}
}

func pageError(err error) error {
	var pe expfmt.ParseError
	if errors.As(err, &pe) {
		return &PageError{Line: pe.Line, Msg: pe.Msg}
	}
	return &PageError{Msg: err.Error()}
}

// ParseFile parses a saved /metrics page (text format, or OpenMetrics when the first
// line says "# TYPE"-style OpenMetrics with a "# EOF" ending). Errors name the file and line.
func ParseFile(path string) ([]Family, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPageBytes+1))
	if err != nil {
		return nil, err
	}
	ct := ""
	if strings.HasSuffix(strings.TrimRight(string(b), "\n"), "# EOF") {
		ct = "application/openmetrics-text; version=1.0.0; charset=utf-8"
	}
	fams, err := ParsePage(bytes.NewReader(b), ct)
	if err != nil {
		var pe *PageError
		if errors.As(err, &pe) && pe.Line > 0 {
			return nil, fmt.Errorf("%s:%d: %s", filepath.Base(path), pe.Line, pe.Msg)
		}
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return fams, nil
}

func convertFamily(f *dto.MetricFamily, openMetrics bool) Family {
	out := Family{Name: f.GetName(), Type: typeName(f.GetType())}
	if openMetrics && out.Type == "counter" && !strings.HasSuffix(out.Name, "_total") {
		out.Name += "_total"
	}
	for _, m := range f.GetMetric() {
		var lm Metric
		if len(m.GetLabel()) > 0 {
			lm.Labels = make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				lm.Labels[lp.GetName()] = lp.GetValue()
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			lm.V = numPtr(m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			lm.V = numPtr(m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			lm.V = numPtr(m.GetUntyped().GetValue())
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			count := float64(h.GetSampleCount())
			if h.SampleCountFloat != nil {
				count = h.GetSampleCountFloat()
			}
			lm.C, lm.S = numPtr(count), numPtr(h.GetSampleSum())
			for _, b := range h.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue // the +Inf bucket is the count
				}
				c := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					c = b.GetCumulativeCountFloat()
				}
				lm.LE = append(lm.LE, Num(b.GetUpperBound()))
				lm.B = append(lm.B, Num(c))
			}
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			lm.C, lm.S = numPtr(float64(s.GetSampleCount())), numPtr(s.GetSampleSum())
			for _, q := range s.GetQuantile() {
				lm.Q = append(lm.Q, Num(q.GetQuantile()))
				lm.QV = append(lm.QV, Num(q.GetValue()))
			}
		}
		out.Metrics = append(out.Metrics, lm)
	}
	return out
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM:
		return "histogram"
	case dto.MetricType_GAUGE_HISTOGRAM:
		return "gaugehistogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	}
	return "untyped"
}

// regroupHistograms turns flat, untyped X_bucket{le}/X_count/X_sum families (a page
// without TYPE lines, or a Prometheus query result) into one histogram family X.
func regroupHistograms(fams []Family) []Family {
	byName := make(map[string]int, len(fams))
	for i, f := range fams {
		byName[f.Name] = i
	}
	drop := map[int]bool{}
	var added []Family
	for i, f := range fams {
		if !strings.HasSuffix(f.Name, "_bucket") || (f.Type != "untyped" && f.Type != "gauge" && f.Type != "counter") || len(f.Metrics) == 0 {
			continue
		}
		base := strings.TrimSuffix(f.Name, "_bucket")
		if j, ok := byName[base]; ok && fams[j].Type == "histogram" {
			continue
		}
		allLE := true
		for _, m := range f.Metrics {
			if _, ok := m.Labels["le"]; !ok {
				allLE = false
				break
			}
		}
		if !allLE {
			continue
		}
		type acc struct {
			labels map[string]string
			le, b  []float64
			c, s   *Num
			inf    *float64
		}
		groups := map[string]*acc{}
		var order []string
		get := func(labels map[string]string) *acc {
			sig := signature(labels, "le")
			a, ok := groups[sig]
			if !ok {
				a = &acc{labels: without(labels, "le")}
				groups[sig] = a
				order = append(order, sig)
			}
			return a
		}
		for _, m := range f.Metrics {
			if m.V == nil {
				continue
			}
			le, err := strconv.ParseFloat(m.Labels["le"], 64)
			if err != nil {
				continue
			}
			a := get(m.Labels)
			if math.IsInf(le, 1) {
				v := float64(*m.V)
				a.inf = &v
				continue
			}
			a.le = append(a.le, le)
			a.b = append(a.b, float64(*m.V))
		}
		drop[i] = true
		for _, part := range []string{"_count", "_sum"} {
			j, ok := byName[base+part]
			if !ok || fams[j].Type == "histogram" {
				continue
			}
			drop[j] = true
			for _, m := range fams[j].Metrics {
				if m.V == nil {
					continue
				}
				a := get(m.Labels)
				v := *m.V
				if part == "_count" {
					a.c = &v
				} else {
					a.s = &v
				}
			}
		}
		h := Family{Name: base, Type: "histogram"}
		for _, sig := range order {
			a := groups[sig]
			idx := make([]int, len(a.le))
			for k := range idx {
				idx[k] = k
			}
			sort.Slice(idx, func(x, y int) bool { return a.le[idx[x]] < a.le[idx[y]] })
			m := Metric{Labels: a.labels}
			if len(m.Labels) == 0 {
				m.Labels = nil
			}
			for _, k := range idx {
				m.LE = append(m.LE, Num(a.le[k]))
				m.B = append(m.B, Num(a.b[k]))
			}
			switch {
			case a.c != nil:
				m.C = a.c
			case a.inf != nil:
				m.C = numPtr(*a.inf)
			case len(m.B) > 0:
				m.C = numPtr(float64(m.B[len(m.B)-1]))
			default:
				m.C = numPtr(0)
			}
			if a.s != nil {
				m.S = a.s
			} else {
				m.S = numPtr(0)
			}
			h.Metrics = append(h.Metrics, m)
		}
		added = append(added, h)
	}
	if len(drop) == 0 {
		return fams
	}
	out := fams[:0:0]
	for i, f := range fams {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return append(out, added...)
}

func sortFamilies(fams []Family) {
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	for _, f := range fams {
		sort.SliceStable(f.Metrics, func(i, j int) bool {
			return signature(f.Metrics[i].Labels, "") < signature(f.Metrics[j].Labels, "")
		})
	}
}

// signature is a canonical string of a label set, leaving out the label named skip.
func signature(labels map[string]string, skip string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != skip {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte(0xff)
	}
	return b.String()
}

func without(labels map[string]string, skip ...string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if !slices.Contains(skip, k) {
			out[k] = v
		}
	}
	return out
}
