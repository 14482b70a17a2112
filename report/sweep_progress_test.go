package report

import (
	"bytes"
	"testing"

	"github.com/pel-ladder/pel/sweep"
)

// TestSweepProgress: a line per event, each saying what the event carries: the point
// about to run and how many are planned, a finished point's figures and whether it meets
// the contract (not measured where it has no sample, never 0 ms), a point that could not
// run, and a warning.
func TestSweepProgress(t *testing.T) {
	yes, no := true, false
	var b bytes.Buffer
	p := SweepProgress(&b)
	p.Starting(1, 3, false, "c1")
	p.Done(sweep.Point{Name: "c1", Requests: 40, GoodputRPS: 3.25, TTFTP99: 120, ITLP99: 8, MeetsSLO: &yes})
	p.Starting(2, 6, true, "r8")
	p.Done(sweep.Point{Name: "r8", Requests: 80, GoodputRPS: 7.5, TTFTP99: 900, NotMeasured: []string{sweep.QITL}, MeetsSLO: &no, SLOMiss: "ttft p99 900 ms > 500 ms"})
	p.Done(sweep.Point{Name: "c64", Error: "target gone"})
	p.Warning("point c1: 12 warm tasks")
	want := "sweep: point 1 of 3: c1\n" +
		"sweep c1: 40 requests, goodput 3.250/s, TTFT p99 120.0 ms, ITL p99 8.0 ms, meets the contract\n" +
		"sweep: point 2 of at most 6: r8\n" +
		"sweep r8: 80 requests, goodput 7.500/s, TTFT p99 900.0 ms, ITL p99 not measured, misses the contract: ttft p99 900 ms > 500 ms\n" +
		"sweep c64: target gone\n" +
		"sweep: warning: point c1: 12 warm tasks\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
