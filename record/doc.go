// Package record holds the one-record-per-task type that every stage-1 measurement is
// derived from, and its JSONL codec. A run's requests.jsonl is a stream of these records,
// appended and flushed as each task ends, so summaries can always be rebuilt from it.
//
// Timing names follow DESIGN.md §1: ScheduledAt is when the arrival process said the task
// should start (the absolute schedule), SentAt when its request bytes were written. TTFT and
// E2E are measured from ScheduledAt so coordinated omission is never hidden; the *FromSent
// variants exist for comparison with tools that measure from the send.
package record
