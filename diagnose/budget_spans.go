package diagnose

import (
	"fmt"

	"github.com/pel-ladder/pel/record"
)

// useSpans makes the budget split each task that has an engine span (OTLP) by its own
// timings: the engine's queue and prefill from its span, and the time outside the engine as
// the client's TTFT from send less the span's TTFT. Tasks without one keep the run-level
// means.
func (b *budgetCtx) useSpans(spans map[*record.Record]record.EngineSpan) {
	if len(spans) == 0 {
		return
	}
	b.spans = spans
	note := fmt.Sprintf("per task from its engine span (OTLP gen_ai.latency.*, %d requests joined by trace id); tasks without one: ", len(spans))
	b.src[cOutside] = note + orNone(b.src[cOutside])
	b.src[cQueue] = note + orNone(b.src[cQueue])
	b.unc[cOutside] = "network and delivery both ways are in it"
	b.measuredBy[cQueue], b.measuredBy[cOutside] = "", ""
}

func orNone(s string) string {
	if s == "" {
		return "not split"
	}
	return s
}
