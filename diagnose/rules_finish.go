package diagnose

import (
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// The classes of answers that arrived but did not end as completions (record.ErrFinishError,
// ErrAborted, ErrNoFinish) each get the error rule every class has (errorRule), with their
// own owner and prediction.
func init() {
	for _, c := range []struct {
		class  string
		layer  evidence.Layer
		conf   float64
		what   string
		why    string
		fix    string
		action evidence.Action
	}{
		{record.ErrFinishError, evidence.LayerApplication, 0.7, `ended with finish_reason "error"`,
			"The engine stops answers part-way and says they failed: an error inside generation (its log at those times names it), although the HTTP status said success.",
			"If the engine's failure is what its log names, fixing it brings finish_reason \"error\" to 0 and acceptance up by the same share.", evidence.ActFixErrors},
		{record.ErrAborted, evidence.LayerScheduling, 0.6, `aborted by the engine (finish_reason "abort")`,
			"The engine aborts requests it had admitted: it cancels or evicts them (a scheduler limit, a preemption policy, or a restart) rather than finishing them.",
			"If the engine aborts admitted requests, the setting or event its log names (preemption, a queue or time limit, a restart) is the cause: removing it brings aborts to 0.", evidence.ActFixErrors},
		{record.ErrNoFinish, evidence.LayerApplication, 0.7, "ended without saying why (no finish_reason)",
			"Answers end without a finish_reason: the server (or a proxy that rewrites its responses) does not say whether the completion ended, so none counts as complete.",
			"If the server or a proxy drops finish_reason, fixing it (or the proxy) brings this error rate to 0.", evidence.ActFixErrors},
	} {
		errorClassLayer[c.class] = struct {
			layer  evidence.Layer
			conf   float64
			what   string
			why    string
			fix    string
			action evidence.Action
		}{c.layer, c.conf, c.what, c.why, c.fix, c.action}
		rules = append(rules, errorRule(c.class))
	}
}
