package stats

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// The seconds in flight per window, from parts and whole-second runs, are what a walk over
// every second gives; a span of two years gets at most MaxSeriesWindows windows.
func TestBusyWindows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	recs := []*record.Record{
		{SentAt: at(0.5), DoneAt: at(3.5)},   // 0.5, 1, 1, 0.5
		{SentAt: at(1.25), DoneAt: at(1.75)}, // 0.5 in second 1
		{SentAt: at(-1), DoneAt: at(2)},      // counted from the start: 1, 1
	}
	for _, c := range []struct {
		width, n int
		want     []float64
	}{
		{1, 4, []float64{1.5, 2.5, 1, 0.5}},
		{2, 2, []float64{4, 1.5}},
		{3, 2, []float64{5, 0.5}},
	} {
		b := newBusyAcc(t0)
		for _, r := range recs {
			b.add(r)
		}
		got := b.windows(c.width, c.n)
		for i := range c.want {
			if d := got[i] - c.want[i]; d > 1e-9 || d < -1e-9 {
				t.Errorf("width %d: windows %v, want %v", c.width, got, c.want)
				break
			}
		}
	}
	late := []*record.Record{{SentAt: at(0), FirstTokenAt: at(0.1), DoneAt: t0.AddDate(2, 0, 0), Status: record.StatusOK, Accepted: true}}
	ss := series(late, t0, late[0].DoneAt)
	for _, s := range ss {
		if len(s.T) > MaxSeriesWindows {
			t.Errorf("%s: %d points over two years, want at most %d", s.Name, len(s.T), MaxSeriesWindows)
		}
	}
	if v := ss[4].V[len(ss[4].V)/2]; v < 0.999 || v > 1.001 {
		t.Errorf("in flight mid-run %v, want 1 (the one task)", v)
	}
}
