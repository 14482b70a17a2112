package loadgen

import (
	"math"
	"testing"

	"github.com/pel-ladder/pel/record"
)

// TestServerTimings: llama.cpp's final chunk (captured from llama-server b4750) carries the
// engine's own prompt and generation times; they reach the record, and implausible ones
// never do.
func TestServerTimings(t *testing.T) {
	srv := serveFile(t, "llamacpp-timings.sse", 200)
	rec := doFile(t, srv.URL, false)
	if rec.Server == nil || rec.Server.PrefillUS != 72855 || rec.Server.DecodeUS != 32292 || rec.Server.PromptN != 30 {
		t.Fatalf("server timings %+v", rec.Server)
	}
	for _, bad := range []serverTimings{{PromptMS: -1}, {PromptMS: math.NaN()}, {PredictedMS: 1e12}, {PromptN: -3}} {
		var r record.Record
		bad.apply(&r)
		if r.Server != nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
