package otlp

import "github.com/pel-ladder/pel/record"

// requests expands task records into the requests that carry spans: each call of a
// multi-step task is its own request with its own trace id (record.ReadFile attaches them
// to their task); a single-request task is itself. Spans are per request, so this is what
// they join to.
func requests(recs []record.Record) []record.Record {
	multi := false
	for i := range recs {
		if len(recs[i].StepRecords()) > 0 {
			multi = true
			break
		}
	}
	if !multi {
		return recs
	}
	var out []record.Record
	for i := range recs {
		if s := recs[i].StepRecords(); len(s) > 0 {
			out = append(out, s...)
		} else {
			out = append(out, recs[i])
		}
	}
	return out
}
