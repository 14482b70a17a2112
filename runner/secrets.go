package runner

import (
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/record"
)

// The API key never reaches a file or a report, even when a server echoes it: every string
// a server's answers put in a record, the evidence or the output (a finish_reason, an
// error, a model id from /v1/models, build information from /props) passes scrub.Secret
// before it is stored or printed. Strings pel makes itself (the prompt) cannot hold it.

// scrubRecord removes the key from the record's outside strings.
func scrubRecord(r *record.Record, key string) {
	if key == "" {
		return
	}
	r.FinishReason = scrub.Secret(r.FinishReason, key)
	r.Error = scrub.Secret(r.Error, key)
	r.Output = scrub.Secret(r.Output, key)
	for i := range r.Reasons {
		r.Reasons[i] = scrub.Secret(r.Reasons[i], key)
	}
}

// scrubbedSink is sink with every record scrubbed of the key first.
func scrubbedSink(sink func(*record.Record) error, key string) func(*record.Record) error {
	if key == "" {
		return sink
	}
	return func(r *record.Record) error {
		scrubRecord(r, key)
		return sink(r)
	}
}

// scrubConfig removes the key from the engine's reported configuration (in place).
func scrubConfig(m map[string]string, key string) map[string]string {
	for k, v := range m {
		m[k] = scrub.Secret(v, key)
	}
	return m
}
