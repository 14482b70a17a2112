package contract

import (
	"slices"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// TestJudgeFinishClasses: an answer that did not end as a completion is rejected under its
// own class, and one the content filter withheld fails as a check, in single tasks and in
// the calls of a multi-step task.
func TestJudgeFinishClasses(t *testing.T) {
	c := mustParse(t, judgeContract)
	failed := func(class string) *record.Record {
		r := rec("plain", 200*time.Millisecond, 20*time.Millisecond, 5)
		r.Status, r.ErrorClass = record.StatusStreamError, class
		return r
	}
	filtered := func() *record.Record {
		r := rec("plain", 200*time.Millisecond, 20*time.Millisecond, 5)
		r.FinishReason = record.FinishContentFilter
		return r
	}
	for _, tc := range []struct {
		name string
		rec  *record.Record
		want []string
	}{
		{"finish error", failed(record.ErrFinishError), []string{"error: finish_error"}},
		{"aborted", failed(record.ErrAborted), []string{"error: aborted"}},
		{"no finish reason", failed(record.ErrNoFinish), []string{"error: no_finish_reason"}},
		{"cut stream keeps its reason", failed(record.ErrIncomplete), []string{"error: stream"}},
		{"content filter", filtered(), []string{"check content_filter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			single, step := *tc.rec, *tc.rec
			c.Judge(&single, "ok fine")
			if !slices.Equal(single.Reasons, tc.want) || single.Accepted {
				t.Errorf("Judge: reasons %q accepted %v, want %q", single.Reasons, single.Accepted, tc.want)
			}
			c.JudgeStep(&step, "ok fine", false)
			if !slices.Equal(step.Reasons, tc.want) || step.Accepted {
				t.Errorf("JudgeStep: reasons %q accepted %v, want %q", step.Reasons, step.Accepted, tc.want)
			}
		})
	}
}
