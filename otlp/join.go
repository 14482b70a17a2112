package otlp

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
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
	ix := newSpanIndex()
	for i := range spans {
		ix.add(&spans[i])
	}
	out := make([]Pair, len(recs))
	for i := range recs {
		out[i] = Pair{Rec: &recs[i], Span: ix.match(&recs[i])}
	}
	return out
}

// spanIndex finds a record's span: by trace id, else by request id.
type spanIndex struct{ byTrace, byReq map[string]*Span }

func newSpanIndex() *spanIndex {
	return &spanIndex{byTrace: map[string]*Span{}, byReq: map[string]*Span{}}
}

func (ix *spanIndex) add(s *Span) {
	later := func(m map[string]*Span, k string) {
		if k == "" {
			return
		}
		if old, ok := m[k]; !ok || s.StartUnixNS > old.StartUnixNS {
			m[k] = s
		}
	}
	later(ix.byTrace, s.TraceID)
	later(ix.byReq, s.RequestID)
}

func (ix *spanIndex) match(r *record.Record) *Span {
	if s := ix.byTrace[traceOf(r)]; s != nil {
		return s
	}
	return ix.byReq[r.ID]
}

// Fill adds the stage-4 OTLP signals of the run in dir, per phase (warm is the headline).
// Spans the receiver counted and did not store are noted on stage 4.
func (r *Receiver) Fill(ev *evidence.Evidence, dir *rundir.Dir) error {
	err := FillFromDir(ev, dir)
	foreign, repeats, overCap, busy, rejected := r.Dropped()
	if foreign+repeats+overCap+busy+rejected > 0 {
		st := ev.Stage(evidence.StageServingCache)
		st.Notes = append(st.Notes, fmt.Sprintf("otlp receiver: spans counted, not stored: %d of trace ids this run did not send, %d repeats of one trace id, %d past the bound of %d; exports refused: %d busy (429, %d decoding at once), %d malformed or too large",
			foreign, repeats, overCap, MaxKeptSpans, busy, MaxConcurrentExports, rejected))
	}
	return err
}

// FillFromDir joins the run directory's spans with its requests and adds the joined
// signals. The spans are indexed (the receiver keeps at most MaxKeptSpans); the records are
// streamed, and of each only the server latencies its span gives are kept.
func FillFromDir(ev *evidence.Evidence, d *rundir.Dir) error {
	ix := newSpanIndex()
	nSpans := 0
	for s, err := range rundir.JSONLines[Span](d, rundir.SpansFile) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("otlp: no %s in %s", rundir.SpansFile, d.Path)
			}
			return fmt.Errorf("otlp: %v", err)
		}
		ix.add(s)
		nSpans++
	}
	acc := newJoinAcc()
	err := d.Each(func(t *record.Record) error {
		eachRequest(t, func(q *record.Record) { acc.add(q, ix.match(q)) })
		return nil
	})
	if err != nil {
		return fmt.Errorf("otlp: %v", err)
	}
	acc.apply(ev, nSpans)
	return nil
}

// AddSignals adds, per phase, exact percentiles of the server latencies of the joined
// completed records, the join coverage and the client−server TTFT gap.
func AddSignals(ev *evidence.Evidence, pairs []Pair, nSpans int) {
	acc := newJoinAcc()
	for _, p := range pairs {
		acc.add(p.Rec, p.Span)
	}
	acc.apply(ev, nSpans)
}

// joinAcc gathers, per phase, the completed requests and the server latencies of those
// that matched a span.
type joinAcc struct{ phases map[string]*phaseAcc }

type phaseAcc struct {
	completed, matched                     int
	queue, prefill, decode, ttft, e2e, gap []float64
}

func newJoinAcc() *joinAcc { return &joinAcc{phases: map[string]*phaseAcc{}} }

func (a *joinAcc) add(r *record.Record, s *Span) {
	if !r.OK() {
		return
	}
	pa := a.phases[r.Phase]
	if pa == nil {
		pa = &phaseAcc{}
		a.phases[r.Phase] = pa
	}
	pa.completed++
	if s == nil {
		return
	}
	pa.matched++
	appendMS(&pa.queue, s.QueueS)
	appendMS(&pa.prefill, s.PrefillS)
	appendMS(&pa.decode, s.DecodeS)
	appendMS(&pa.ttft, s.TTFTS)
	appendMS(&pa.e2e, s.E2ES)
	if c, ok := r.TTFTFromSent(); ok && s.TTFTS != nil {
		pa.gap = append(pa.gap, float64(c.Microseconds())/1e3-*s.TTFTS*1e3)
	}
}

func (a *joinAcc) apply(ev *evidence.Evidence, nSpans int) {
	var order []string
	for ph := range a.phases {
		order = append(order, ph)
	}
	sort.Strings(order)
	st := ev.Stage(evidence.StageServingCache)
	added := false
	for _, ph := range order {
		pa := a.phases[ph]
		add := func(name string, v float64, unit, note string) {
			ev.Add(evidence.Signal{Name: name, Value: figure.Round3(v), Unit: unit, Stage: evidence.StageServingCache,
				Source: Source, Phase: ph, Note: note})
			added = true
		}
		add(evidence.SigOTLPJoinCoverage, float64(pa.matched)/float64(pa.completed), "ratio",
			fmt.Sprintf("%d of %d completed tasks matched a span (%d spans received)", pa.matched, pa.completed, nSpans))
		pct := func(p50, p99 string, xs []float64, note string) {
			if len(xs) == 0 {
				return
			}
			sort.Float64s(xs)
			add(p50, quantile.Sorted(xs, 0.50), "ms", note)
			add(p99, quantile.Sorted(xs, 0.99), "ms", note)
		}
		pct(evidence.SigOTLPQueueP50, evidence.SigOTLPQueueP99, pa.queue, "")
		pct(evidence.SigOTLPPrefillP50, evidence.SigOTLPPrefillP99, pa.prefill, "")
		pct(evidence.SigOTLPDecodeP50, evidence.SigOTLPDecodeP99, pa.decode, "")
		pct(evidence.SigOTLPTTFTP50, evidence.SigOTLPTTFTP99, pa.ttft, "")
		pct(evidence.SigOTLPE2EP50, evidence.SigOTLPE2EP99, pa.e2e, "")
		pct(evidence.SigTTFTGapP50, evidence.SigTTFTGapP99, pa.gap, "per request: client TTFT from sent − server time_to_first_token")
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
