package otlp

import "github.com/pel-ladder/pel/record"

// eachRequest calls f with each request of a task record that carries a span: each call of
// a multi-step task is its own request with its own trace id (the run directory's stream
// attaches them to their task); a single-request task is itself. Spans are per request, so
// this is what they join to.
func eachRequest(t *record.Record, f func(*record.Record)) {
	if ss := t.StepRecords(); len(ss) > 0 {
		for i := range ss {
			f(&ss[i])
		}
		return
	}
	f(t)
}
