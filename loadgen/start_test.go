package loadgen

import (
	"context"
	"testing"
	"time"
)

// A shared start time (a sharded run's --start-at): the driver waits for it, and every
// task is due at that start plus its offset, however early Run was called.
func TestDriverWaitsForSharedStart(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now().Add(30 * time.Second)
	sched := at(0, 10, 250)
	h := newHarness(t, DriverConfig{Start: start}, &fakeDoer{clk: clk, def: attempt{dur: ms(5), code: 200}})
	res := h.run(context.Background(), sched, func() bool {
		if clk.Now().Before(start) {
			return clk.Sleepers() == 1 // only the wait for the start
		}
		return openQuiet(h, sched, start)()
	}, nil)
	if !res.Start.Equal(start) || len(h.recs) != 3 {
		t.Fatalf("start %v, %d records", res.Start.Sub(clk.now), len(h.recs))
	}
	for i, r := range h.recs {
		if due := start.Add(sched.reqs[i].At); !r.ScheduledAt.Equal(due) || !r.SentAt.Equal(due) {
			t.Errorf("seq %d scheduled %v sent %v, want %v", i, r.ScheduledAt, r.SentAt, due)
		}
	}
}

// Stopped before the shared start: nothing was due, nothing is recorded.
func TestDriverStoppedBeforeSharedStart(t *testing.T) {
	clk := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := newHarness(t, DriverConfig{Start: clk.Now().Add(time.Minute)}, &fakeDoer{clk: clk, def: attempt{dur: ms(5), code: 200}})
	res := h.d.Run(ctx, at(0, 10))
	if !res.Interrupted || res.Records != 0 || len(h.recs) != 0 {
		t.Fatalf("%+v, %d records", res, len(h.recs))
	}
}
