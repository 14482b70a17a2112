package loadgen

import (
	"math"

	"github.com/pel-ladder/pel/record"
)

// serverTimings is llama.cpp's per-request "timings" object (examples/server/server.cpp
// result_timings: prompt_n, prompt_ms, predicted_n, predicted_ms), sent on the final chunk of
// a stream and in a non-streamed response. prompt_ms is the engine's prompt processing time
// only: it excludes the wait for a free slot and for an HTTP worker thread, which is what
// lets the diagnosis split a client's TTFT into queue and service.
type serverTimings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMS    float64 `json:"prompt_ms"`
	PredictedMS float64 `json:"predicted_ms"`
}

// maxServerMS bounds a plausible server-reported duration (one day); anything else is
// ignored rather than trusted.
const maxServerMS = 24 * 3600 * 1000

// apply stores plausible timings on rec; implausible ones (negative, NaN, beyond a day)
// are dropped, never trusted.
func (t *serverTimings) apply(rec *record.Record) {
	ok := func(ms float64) bool { return !math.IsNaN(ms) && ms >= 0 && ms <= maxServerMS }
	if t == nil || !ok(t.PromptMS) || !ok(t.PredictedMS) || t.PromptN < 0 {
		return
	}
	rec.Server = &record.ServerTimings{
		PrefillUS: int64(t.PromptMS * 1000),
		DecodeUS:  int64(t.PredictedMS * 1000),
		PromptN:   t.PromptN,
	}
}
