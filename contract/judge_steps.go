package contract

import (
	"fmt"

	"github.com/pel-ladder/pel/record"
)

// JudgeStep judges one call of a multi-step task the way Judge judges a single task, less
// the bounds that belong to the whole task (e2e, max_steps): the call completed, its output
// passed the task's checks when it is an answer (text for the user: a chat turn, or the
// last call of a tool loop; not a tool call and not an embeddings batch), and it met the
// per-call max bounds of TTFT (from the call's own due time), ITL and TPOT.
func (c *Contract) JudgeStep(rec *record.Record, output string, answer bool) {
	var reasons []string
	if r := errorReason(rec); r != "" {
		reasons = append(reasons, r)
	} else if t := c.Task(rec.Task); t == nil {
		reasons = append(reasons, "unknown task")
	} else {
		if r := filterReason(rec); r != "" {
			reasons = append(reasons, r)
		}
		if answer {
			for i := range t.Checks {
				if ch := &t.Checks[i]; !ch.Pass(output, rec.OutputTokens) {
					reasons = append(reasons, "check "+ch.Label())
				}
			}
		}
		var objs []Objective
		for _, o := range c.ObjectivesFor(rec.Task) {
			if o.Metric != MetricE2E { // the whole task's, judged by JudgeTask
				objs = append(objs, o)
			}
		}
		reasons = append(reasons, sloReasons(objs, rec)...)
	}
	rec.Accepted = len(reasons) == 0
	rec.Reasons = reasons
}

// JudgeTask decides a multi-step task from its judged steps: it is accepted when every step
// completed and was accepted, nothing left it unfinished (a tool loop still calling tools
// at max_calls), the whole task met the e2e max bound, and it took no more steps than
// slo.max_steps. A failed step gives the task its one error reason (and the task record
// carries that step's status); a step's own reasons get " (step N)" appended, so they still
// count by kind ("slo ttft max 2s (step 3)") and say which call missed.
func (c *Contract) JudgeTask(task *record.Record, steps []*record.Record, unfinished string) {
	var reasons []string
	if r := errorReason(task); r != "" {
		reasons = append(reasons, r)
	} else if c.Task(task.Task) == nil {
		reasons = append(reasons, "unknown task")
	} else {
		for i, st := range steps {
			if st.Accepted {
				continue
			}
			for _, why := range st.Reasons {
				reasons = append(reasons, why+" "+StepLabel(i))
			}
		}
		if unfinished != "" {
			reasons = append(reasons, unfinished)
		}
		for _, o := range c.ObjectivesFor(task.Task) {
			if o.Metric == MetricE2E && o.Exceeded(task) {
				reasons = append(reasons, o.Reason())
			}
		}
		s := c.SLOFor(task.Task)
		if s.MaxSteps > 0 && len(steps) > s.MaxSteps {
			reasons = append(reasons, fmt.Sprintf("slo steps max %d", s.MaxSteps))
		}
	}
	task.Accepted = len(reasons) == 0
	task.Reasons = reasons
}
