package otlp

import (
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// maxSpanSeconds bounds a latency read from a span (outside input): a day.
const maxSpanSeconds = 86400

// EngineSpans joins the run directory's spans with recs (and the calls of multi-step
// tasks) and returns each matched request's engine timings, for the time budget's per-task
// split. nil without a spans file.
func EngineSpans(d *rundir.Dir, recs []record.Record) (map[*record.Record]record.EngineSpan, error) {
	ix := newSpanIndex()
	for s, err := range rundir.JSONLines[Span](d, rundir.SpansFile) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("otlp: %v", err)
		}
		ix.add(s)
	}
	out := map[*record.Record]record.EngineSpan{}
	us := func(p *float64) int64 {
		if p == nil || math.IsNaN(*p) || *p <= 0 || *p > maxSpanSeconds {
			return 0
		}
		return int64(math.Round(*p * 1e6))
	}
	for i := range recs {
		eachRequest(&recs[i], func(q *record.Record) {
			s := ix.match(q)
			if s == nil {
				return
			}
			e := record.EngineSpan{QueueUS: us(s.QueueS), PrefillUS: us(s.PrefillS), DecodeUS: us(s.DecodeS), TTFTUS: us(s.TTFTS)}
			if e != (record.EngineSpan{}) {
				out[q] = e
			}
		})
	}
	return out, nil
}
