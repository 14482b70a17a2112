package report

import (
	"fmt"
	"io"

	"github.com/pel-ladder/pel/sweep"
)

// SweepProgress renders a sweep as it runs to w, a line per event: each point as it
// starts ("sweep: point i of n: name") and finishes (its requests, goodput, TTFT and ITL
// p99 and whether it meets the contract), and each warning.
func SweepProgress(w io.Writer) sweep.Progress { return sweepProgress{w} }

type sweepProgress struct{ w io.Writer }

func (s sweepProgress) Warning(msg string) { fmt.Fprintf(s.w, "sweep: warning: %s\n", msg) }

func (s sweepProgress) Starting(i, n int, atMost bool, name string) {
	of := fmt.Sprint(n)
	if atMost {
		of = "at most " + of
	}
	fmt.Fprintf(s.w, "sweep: point %d of %s: %s\n", i, of, name)
}

func (s sweepProgress) Done(p sweep.Point) {
	if p.Error != "" && p.Requests == 0 {
		fmt.Fprintf(s.w, "sweep %s: %s\n", p.Name, p.Error)
		return
	}
	fmt.Fprintf(s.w, "sweep %s: %d requests, goodput %.3f/s, TTFT p99 %s, ITL p99 %s, %s\n", p.Name, p.Requests, p.GoodputRPS,
		withMs(p.MsText(sweep.QTTFT, p.TTFTP99)), withMs(p.MsText(sweep.QITL, p.ITLP99)), meetsText(p))
}

// withMs appends the unit to a measured value.
func withMs(s string) string {
	if s == "not measured" {
		return s
	}
	return s + " ms"
}

// meetsText says whether a point meets the contract, and why not.
func meetsText(p sweep.Point) string {
	switch {
	case p.MeetsSLO == nil:
		return "not judged"
	case *p.MeetsSLO:
		return "meets the contract"
	}
	return "misses the contract: " + p.SLOMiss
}
