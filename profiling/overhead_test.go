package profiling

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

// task builds a completed streamed task: scheduled and sent at s seconds, first token after
// ttft, then n-1 more tokens every gap.
func task(s float64, ttft, gap time.Duration, n int, profiled bool) *record.Record {
	sent := at(s)
	r := &record.Record{Status: record.StatusOK, Phase: record.PhaseWarm, ScheduledAt: sent, SentAt: sent, FirstSentAt: sent,
		OutputTokens: n, Profiled: profiled}
	for i := range n {
		us := (ttft + time.Duration(i)*gap).Microseconds()
		r.ChunkUS = append(r.ChunkUS, us)
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.FirstTokenAt = sent.Add(ttft)
	r.LastTokenAt = sent.Add(ttft + time.Duration(n-1)*gap)
	r.DoneAt = r.LastTokenAt
	if profiled {
		r.Phase = record.PhaseProfiled
	}
	return r
}

// Tasks inside the window take twice as long per token: the ITL and TPOT ratios are 2
// within their intervals, TTFT (not slowed here) 1; values of marked tasks outside the
// sure span are left out of both sides.
func TestOverheadRatios(t *testing.T) {
	o := NewOverhead(at(100), at(200))
	jitter := func(i int) time.Duration { return time.Duration(i%5) * 100 * time.Microsecond }
	for i := range 40 {
		o.Add(task(float64(i), 50*time.Millisecond+jitter(i), 10*time.Millisecond+jitter(i), 20, false))
		o.Add(task(110+float64(i), 50*time.Millisecond+jitter(i), 20*time.Millisecond+2*jitter(i), 20, true))
	}
	// A marked task straddling the window's start adds nothing inside but its gaps in it.
	o.Add(task(99.9, 50*time.Millisecond, 500*time.Millisecond, 5, true))
	// Failed and cold tasks are ignored.
	bad := task(5, time.Millisecond, time.Millisecond, 3, false)
	bad.Status = record.StatusHTTPError
	o.Add(bad)
	cold := task(6, time.Hour/1000, time.Millisecond, 3, false)
	cold.Phase = record.PhaseCold
	o.Add(cold)

	want := map[string]float64{MetricTTFT: 1, MetricITL: 2, MetricTPOT: 2}
	rows := o.Rows()
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		w, ok := want[r.Metric]
		if !ok {
			continue
		}
		if !r.OK || !(r.RatioLo <= w && w <= r.RatioHi) || math.Abs(r.Ratio-w) > 0.05 {
			t.Errorf("%s: ×%.3f [%.3f–%.3f] ok %v, want ×%g inside the interval", r.Metric, r.Ratio, r.RatioLo, r.RatioHi, r.OK, w)
		}
		if r.TasksOut != 40 {
			t.Errorf("%s: %d tasks outside, want the 40 warm ones", r.Metric, r.TasksOut)
		}
	}
	for _, r := range rows {
		if r.Metric == MetricTTFT && r.TasksIn != 40 {
			t.Errorf("TTFT inside over %d tasks, want 40 (the straddling one starts before the window)", r.TasksIn)
		}
		if r.Metric == MetricITL && r.TasksIn != 41 {
			t.Errorf("ITL inside over %d tasks, want 41 (the straddling one's gaps in the window count)", r.TasksIn)
		}
	}
}

// Too few values for an interval: the row says so and is not OK.
func TestOverheadTooFew(t *testing.T) {
	o := NewOverhead(at(100), at(200))
	o.Add(task(1, time.Millisecond, time.Millisecond, 3, false))
	o.Add(task(110, time.Millisecond, time.Millisecond, 3, true))
	for _, r := range o.Rows() {
		if r.OK || r.Note == "" {
			t.Errorf("%s: ok %v note %q with one task a side", r.Metric, r.OK, r.Note)
		}
	}
}

// The state is bounded: past maxSideTasks a side keeps a sample, and says so.
func TestOverheadBounded(t *testing.T) {
	o := NewOverhead(at(1e6), at(2e6))
	for i := range maxSideTasks + 500 {
		o.Add(task(float64(i), time.Millisecond, time.Millisecond, 2, false))
	}
	if len(o.out.tasks) != maxSideTasks || o.out.seen != maxSideTasks+500 {
		t.Errorf("kept %d of %d", len(o.out.tasks), o.out.seen)
	}
}

// A metric whose median outside the window is 0 (tokens arriving together, 0 µs apart) has
// no ratio: the row says so and stays encodable, never +Inf, with few tasks or many.
func TestOverheadZeroOutside(t *testing.T) {
	for _, n := range []int{1, 60} {
		o := NewOverhead(at(100), at(200))
		for i := range n {
			o.Add(task(float64(i), 50*time.Millisecond, 0, 20, false))
			o.Add(task(110+float64(i), 50*time.Millisecond, 10*time.Millisecond, 20, true))
		}
		var itl bool
		for _, r := range o.Rows() {
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%d tasks a side, %s: %v", n, r.Metric, err)
			}
			if r.Metric == "itl" {
				itl = true
				if r.Ratio != 0 || r.OK || !strings.Contains(r.Note, "no ratio") {
					t.Errorf("%d tasks a side: itl ratio %v ok %v note %q, want no ratio", n, r.Ratio, r.OK, r.Note)
				}
			}
		}
		if !itl {
			t.Fatalf("no itl row")
		}
	}
}
