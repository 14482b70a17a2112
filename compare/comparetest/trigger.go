package comparetest

import (
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// P99TTFT is the nearest-rank p99 TTFT (ms) of completed records.
func P99TTFT(recs []record.Record) float64 {
	var v []float64
	for i := range recs {
		if d, ok := recs[i].TTFT(); ok {
			v = append(v, float64(d)/float64(time.Millisecond))
		}
	}
	sort.Float64s(v)
	return v[int(math.Ceil(0.99*float64(len(v))))-1]
}

// TTFTTrigger is a rollback trigger like the diagnosis derives: base p99 TTFT + margin.
func TTFTTrigger(recs []record.Record, margin float64) []evidence.Trigger {
	return []evidence.Trigger{{Signal: evidence.SigTTFTP99, Op: ">", Bound: P99TTFT(recs) * (1 + margin), Unit: "ms", Basis: "test: base p99 + margin"}}
}
