package contract

import "github.com/pel-ladder/pel/record"

// classReason is the rejection reason of a task that failed in one of the classes an answer
// gets when it arrived but did not end as a completion: its class names it, so a report
// counts "error: aborted" apart from "error: stream" (a cut or broken stream) and
// "error: timeout". "" for any other task.
func classReason(rec *record.Record) string {
	switch rec.ErrorClass {
	case record.ErrFinishError, record.ErrAborted, record.ErrNoFinish:
		if !rec.OK() && rec.Status != record.StatusCancelled {
			return "error: " + rec.ErrorClass
		}
	}
	return ""
}

// filterReason is the check failure of an answer the server's content filter withheld or
// cut (finish_reason content_filter): the exchange completed, the answer is not the one
// asked for. "" otherwise.
func filterReason(rec *record.Record) string {
	if rec.OK() && rec.FinishReason == record.FinishContentFilter {
		return "check " + record.FinishContentFilter
	}
	return ""
}
