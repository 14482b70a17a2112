package otlp

import (
	"errors"
	"fmt"
	"github.com/pel-ladder/pel/quantile"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Source is the evidence source name of every signal this package adds.
const Source = "otlp"

// Pair is one record joined with its engine span (Span nil when none matched).
type Pair struct {
	Rec  *record.Record
	Span *Span
}

// traceOf is the trace id pel sent for a record. Runs written before Record.TraceID existed
// used the trace id as the record ID.
func traceOf(r *record.Record) string {
	if r.TraceID != "" {
		return r.TraceID
	}
	return r.ID
}

// Join matches each record to a span by trace id, falling back to gen_ai.request.id ==
// record ID (engines that drop the traceparent but echo X-Request-Id). A retried task shares
// one trace id across attempts; the span that started last belongs to the final attempt,
// whose timings the record holds.
func Join(recs []record.Record, spans []Span) []Pair {
	byTrace := map[string]*Span{}
	byReq := map[string]*Span{}
	later := func(m map[string]*Span, k string, s *Span) {
		if k == "" {
			return
		}
		if old, ok := m[k]; !ok || s.StartUnixNS > old.StartUnixNS {
			m[k] = s
		}
	}
	for i := range spans {
		later(byTrace, spans[i].TraceID, &spans[i])
		later(byReq, spans[i].RequestID, &spans[i])
	}
	out := make([]Pair, len(recs))
	for i := range recs {
		r := &recs[i]
		s := byTrace[traceOf(r)]
		if s == nil {
			s = byReq[r.ID]
		}
		out[i] = Pair{Rec: r, Span: s}
	}
	return out
}

// Fill adds the stage-4 OTLP signals of the run in dir, per phase (warm is the headline).
// Spans the receiver counted and did not store are noted on stage 4.
func (r *Receiver) Fill(ev *evidence.Evidence, dir string) error {
	err := FillFromDir(ev, dir)
	foreign, repeats, overCap, busy, rejected := r.Dropped()
	if foreign+repeats+overCap+busy+rejected > 0 {
		st := ev.Stage(evidence.StageServingCache)
		st.Notes = append(st.Notes, fmt.Sprintf("otlp receiver: spans counted, not stored: %d of trace ids this run did not send, %d repeats of one trace id, %d past the bound of %d; exports refused: %d busy (429, %d decoding at once), %d malformed or too large",
			foreign, repeats, overCap, MaxKeptSpans, busy, MaxConcurrentExports, rejected))
	}
	return err
}

// FillFromDir reads dir/spans.jsonl and dir/requests.jsonl and adds the joined signals.
func FillFromDir(ev *evidence.Evidence, dir string) error {
	spans, err := ReadSpans(filepath.Join(dir, SpansFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("otlp: no %s in %s", SpansFile, dir)
		}
		return fmt.Errorf("otlp: %v", err)
	}
	recs, err := record.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return fmt.Errorf("otlp: %v", err)
	}
	AddSignals(ev, Join(requests(recs), spans), len(spans))
	return nil
}

// AddSignals adds, per phase, exact percentiles of the server latencies of the joined
// completed records, the join coverage and the client−server TTFT gap.
func AddSignals(ev *evidence.Evidence, pairs []Pair, nSpans int) {
	phases := map[string][]Pair{}
	var order []string
	for _, p := range pairs {
		if !p.Rec.OK() {
			continue
		}
		if _, ok := phases[p.Rec.Phase]; !ok {
			order = append(order, p.Rec.Phase)
		}
		phases[p.Rec.Phase] = append(phases[p.Rec.Phase], p)
	}
	sort.Strings(order)
	st := ev.Stage(evidence.StageServingCache)
	added := false
	for _, ph := range order {
		ps := phases[ph]
		var queue, prefill, decode, ttft, e2e, gap []float64
		matched := 0
		for _, p := range ps {
			s := p.Span
			if s == nil {
				continue
			}
			matched++
			appendMS(&queue, s.QueueS)
			appendMS(&prefill, s.PrefillS)
			appendMS(&decode, s.DecodeS)
			appendMS(&ttft, s.TTFTS)
			appendMS(&e2e, s.E2ES)
			if c, ok := p.Rec.TTFTFromSent(); ok && s.TTFTS != nil {
				gap = append(gap, float64(c.Microseconds())/1e3-*s.TTFTS*1e3)
			}
		}
		add := func(name string, v float64, unit, note string) {
			ev.Add(evidence.Signal{Name: name, Value: round(v), Unit: unit, Stage: evidence.StageServingCache,
				Source: Source, Phase: ph, Note: note})
			added = true
		}
		add(evidence.SigOTLPJoinCoverage, float64(matched)/float64(len(ps)), "ratio",
			fmt.Sprintf("%d of %d completed tasks matched a span (%d spans received)", matched, len(ps), nSpans))
		pct := func(p50, p99 string, xs []float64, note string) {
			if len(xs) == 0 {
				return
			}
			sort.Float64s(xs)
			add(p50, quantile.Sorted(xs, 0.50), "ms", note)
			add(p99, quantile.Sorted(xs, 0.99), "ms", note)
		}
		pct(evidence.SigOTLPQueueP50, evidence.SigOTLPQueueP99, queue, "")
		pct(evidence.SigOTLPPrefillP50, evidence.SigOTLPPrefillP99, prefill, "")
		pct(evidence.SigOTLPDecodeP50, evidence.SigOTLPDecodeP99, decode, "")
		pct(evidence.SigOTLPTTFTP50, evidence.SigOTLPTTFTP99, ttft, "")
		pct(evidence.SigOTLPE2EP50, evidence.SigOTLPE2EP99, e2e, "")
		pct(evidence.SigTTFTGapP50, evidence.SigTTFTGapP99, gap, "per request: client TTFT from sent − server time_to_first_token")
	}
	if added {
		for _, s := range st.Sources {
			if s == Source {
				return
			}
		}
		st = ev.Stage(evidence.StageServingCache)
		st.Sources = append(st.Sources, Source)
	}
}

func appendMS(xs *[]float64, s *float64) {
	if s != nil {
		*xs = append(*xs, *s*1e3)
	}
}

func round(v float64) float64 { return math.Round(v*1e3) / 1e3 }
