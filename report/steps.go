package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/pel-ladder/pel/evidence"
)

// stepTable prints workload.steps: one row per call position of each multi-step task type
// (a call's acceptance is its own bounds and checks; the task's is in BY TASK TYPE).
func stepTable(w io.Writer, steps []evidence.StepSummary) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  task\tcall\tkind\tcalls\taccepted\tTTFT p50\tTTFT p99\tE2E p99\tprompt\tcarried\tcached\twait p50\t\n")
	for _, s := range steps {
		cached := "-"
		if s.CachedShare != nil {
			cached = fmt.Sprintf("%.0f%%", *s.CachedShare*100)
		}
		wait := "-"
		if s.WaitMs.N > 0 {
			wait = num(s.WaitMs.P50)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%.1f%%\t%s\t%s\t%s\t%.0f\t%.0f\t%s\t%s\t\n", s.Task, s.Index+1, s.Kind, s.Requests,
			s.AcceptanceRate*100, qnum(s.Latency.TTFTms, "p50"), qnum(s.Latency.TTFTms, "p99"), qnum(s.Latency.E2Ems, "p99"),
			s.PromptTokensMean, s.CarriedTokensMean, cached, wait)
	}
	tw.Flush()
}
