package loadgen

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// sliceSchedule is a fixed schedule.
type sliceSchedule struct {
	reqs   []workload.Request
	i      int
	closed int
}

func (s *sliceSchedule) Next() (workload.Request, bool) {
	if s.i >= len(s.reqs) {
		return workload.Request{}, false
	}
	s.i++
	return s.reqs[s.i-1], true
}
func (s *sliceSchedule) Closed() int { return s.closed }

func at(ms ...int) *sliceSchedule {
	s := &sliceSchedule{}
	for i, m := range ms {
		s.reqs = append(s.reqs, workload.Request{Seq: i, At: time.Duration(m) * time.Millisecond, Task: "t", Prompt: "hello"})
	}
	return s
}

// attempt is one scripted server answer: it takes dur (on the fake clock), then ends with
// HTTP status code (200 = a completed stream of 4 tokens).
type attempt struct {
	dur  time.Duration
	code int
}

// fakeDoer plays scripted attempts per task (the last entry repeats).
type fakeDoer struct {
	clk    *fakeClock
	script map[int][]attempt
	def    attempt
	mu     sync.Mutex
	calls  map[int]int
	tps    []string
}

func (f *fakeDoer) Body(r *workload.Request) ([]byte, error) { return []byte("{}"), nil }

func (f *fakeDoer) Do(ctx context.Context, r *workload.Request, body []byte, rec *record.Record, tp string) (string, int) {
	resetAttempt(rec)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int]int{}
	}
	n := f.calls[r.Seq]
	f.calls[r.Seq]++
	f.tps = append(f.tps, tp)
	f.mu.Unlock()
	a := f.def
	if sc, ok := f.script[r.Seq]; ok {
		a = sc[min(n, len(sc)-1)]
	}
	rec.SentAt = f.clk.Now()
	if err := f.clk.SleepUntil(ctx, rec.SentAt.Add(a.dur)); err != nil {
		rec.Status, rec.Error = record.StatusCancelled, "cancelled"
		return "", 0
	}
	rec.HTTPStatus = a.code
	if a.code != 200 {
		rec.Status, rec.Error = record.StatusHTTPError, fmt.Sprintf("http %d", a.code)
		return "", 0
	}
	now := f.clk.Now()
	rec.HeadersAt, rec.FirstTokenAt, rec.LastTokenAt = rec.SentAt, now, now
	rec.Status, rec.OutputTokens = record.StatusOK, 4
	return "done", 4
}

type harness struct {
	t       *testing.T
	clk     *fakeClock
	d       *Driver
	mu      sync.Mutex
	recs    []record.Record
	running atomic.Bool
}

func newHarness(t *testing.T, cfg DriverConfig, doer *fakeDoer) *harness {
	h := &harness{t: t, clk: doer.clk}
	cfg.Clock, cfg.Doer = h.clk, doer
	cfg.Sink = func(r *record.Record) error {
		h.mu.Lock()
		h.recs = append(h.recs, *r)
		h.mu.Unlock()
		return nil
	}
	h.d = NewDriver(cfg)
	return h
}

// run drives the fake clock: whenever quiet() says every goroutine of the run is blocked,
// it advances to the earliest deadline. step (optional) is called at each quiet point.
func (h *harness) run(ctx context.Context, sched workload.Schedule, quiet func() bool, step func(now time.Time)) Result {
	h.running.Store(true)
	res := make(chan Result, 1)
	go func() { r := h.d.Run(ctx, sched); h.running.Store(false); res <- r }()
	for i := 0; i < 10000; i++ {
		settle(h.t, "quiet point", func() bool { return !h.running.Load() || quiet() })
		if !h.running.Load() {
			r := <-res
			sort.Slice(h.recs, func(i, j int) bool { return h.recs[i].Seq < h.recs[j].Seq })
			return r
		}
		if step != nil {
			step(h.clk.Now())
			settle(h.t, "after step", func() bool { return !h.running.Load() || quiet() })
		}
		if next, ok := h.clk.Next(); ok {
			h.clk.AdvanceTo(next)
		} else {
			// Quiet with nothing asleep: the run is returning; wait for it rather than spin
			// through the iterations before its goroutine is scheduled (a loaded machine).
			settle(h.t, "run end", func() bool { return !h.running.Load() || h.clk.Sleepers() > 0 })
		}
	}
	h.t.Fatal("run did not end")
	return Result{}
}

// openQuiet: every task launched by now is asleep, queued or done, and the pacer sleeps
// while arrivals remain.
func openQuiet(h *harness, sched *sliceSchedule, start time.Time) func() bool {
	return func() bool {
		el := h.clk.Now().Sub(start)
		launched, pacer := 0, 0
		for _, r := range sched.reqs {
			if r.At <= el {
				launched++
			} else {
				pacer = 1
			}
		}
		p := h.d.Progress()
		// A queued task counts as settled only while the slots are really held: just after
		// a slot is handed over the new holder is still counted queued.
		handoff := p.Queued > 0 && p.InFlight < int64(h.d.cfg.MaxInFlight)
		return !handoff && int64(h.clk.Sleepers())+p.Done+p.Queued == int64(launched+pacer)
	}
}

func ms(d int) time.Duration { return time.Duration(d) * time.Millisecond }

func TestOpenLoopSlowServerNeverDelaysSchedule(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 10, 25, 25, 100)
	h := newHarness(t, DriverConfig{Warmup: ms(20)}, &fakeDoer{clk: clk, def: attempt{dur: time.Second, code: 200}})
	res := h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	if res.Records != 5 || len(h.recs) != 5 || res.Interrupted {
		t.Fatalf("records %d/%d interrupted %v", res.Records, len(h.recs), res.Interrupted)
	}
	wantPhase := []string{"cold", "cold", "warm", "warm", "warm"}
	for i, r := range h.recs {
		due := start.Add(sched.reqs[i].At)
		if !r.ScheduledAt.Equal(due) || !r.SentAt.Equal(due) {
			t.Errorf("seq %d scheduled %v sent %v, want both %v", i, r.ScheduledAt.Sub(start), r.SentAt.Sub(start), sched.reqs[i].At)
		}
		if lag, _ := r.ScheduleLag(); lag != 0 {
			t.Errorf("seq %d lag %v", i, lag)
		}
		// Nobody finished, so in-flight at send grows by one per arrival (seq 2 and 3 are
		// due at the same instant and may be sent in either order).
		if wantIF := map[int][]int{0: {0}, 1: {1}, 2: {2, 3}, 3: {2, 3}, 4: {4}}[i]; r.InFlight != wantIF[0] && r.InFlight != wantIF[len(wantIF)-1] {
			t.Errorf("seq %d in_flight %d, want %v", i, r.InFlight, wantIF)
		}
		if e2e, _ := r.E2E(); e2e != time.Second {
			t.Errorf("seq %d e2e %v", i, e2e)
		}
		if r.Phase != wantPhase[i] || !r.Accepted || r.Attempts != 1 {
			t.Errorf("seq %d phase %s accepted %v attempts %d", i, r.Phase, r.Accepted, r.Attempts)
		}
	}
	if !res.End.Equal(start.Add(ms(1100))) {
		t.Errorf("end %v", res.End.Sub(start))
	}
}

func TestMaxInFlightCountsClientQueue(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 0, 0, 35)
	h := newHarness(t, DriverConfig{MaxInFlight: 1}, &fakeDoer{clk: clk, def: attempt{dur: ms(10), code: 200}})
	h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	// Three tasks due at 0 share one slot (in any order), the fourth finds it free.
	want := []struct{ sent, queue int }{{0, 0}, {10, 10}, {20, 20}, {35, 0}}
	if len(h.recs) != 4 {
		t.Fatalf("%d records", len(h.recs))
	}
	sort.Slice(h.recs, func(i, j int) bool { return h.recs[i].SentAt.Before(h.recs[j].SentAt) })
	for i, r := range h.recs {
		if r.SentAt.Sub(start) != ms(want[i].sent) || r.ClientQueueUS != int64(want[i].queue*1000) {
			t.Errorf("seq %d sent %v queue %dus, want %dms %dms", i, r.SentAt.Sub(start), r.ClientQueueUS, want[i].sent, want[i].queue)
		}
		if lag, _ := r.ScheduleLag(); lag != 0 {
			t.Errorf("seq %d: queue time leaked into schedule lag %v", i, lag)
		}
		if ttft, _ := r.TTFT(); ttft != ms(10+want[i].queue) {
			t.Errorf("seq %d: TTFT %v must include the queue wait", i, ttft)
		}
	}
}

func TestRetriesPerPolicy(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 0, 0)
	doer := &fakeDoer{clk: clk, def: attempt{dur: ms(10), code: 200}, script: map[int][]attempt{
		0: {{ms(10), 500}, {ms(10), 429}, {ms(10), 200}},
		1: {{ms(10), 400}},
		2: {{ms(10), 503}},
	}}
	cfg := DriverConfig{Retry: RetryPolicy{
		MaxAttempts: 3,
		ShouldRetry: func(st string, code int) bool { return code == 429 || code >= 500 },
		Backoff:     func(n int) time.Duration { return ms(100 * n) },
	}}
	h := newHarness(t, cfg, doer)
	h.run(context.Background(), sched, openQuiet(h, sched, start), nil)
	type w struct {
		attempts, first, sent int
		status                string
		code                  int
		accepted              bool
	}
	want := []w{
		{3, 0, 320, record.StatusOK, 200, true}, // 0-10, +100, 110-120, +200, 320-330
		{1, 0, 0, record.StatusHTTPError, 400, false},
		{3, 0, 320, record.StatusHTTPError, 503, false},
	}
	for i, r := range h.recs {
		g := w{r.Attempts, int(r.FirstSentAt.Sub(start) / time.Millisecond), int(r.SentAt.Sub(start) / time.Millisecond), r.Status, r.HTTPStatus, r.Accepted}
		if g != want[i] {
			t.Errorf("seq %d: got %+v want %+v", i, g, want[i])
		}
	}
	// One trace id per task, a new span id per attempt.
	seen := map[string]bool{}
	traces := map[string]int{}
	for _, tp := range doer.tps {
		if len(tp) != 55 || seen[tp] {
			t.Errorf("bad or repeated traceparent %q", tp)
		}
		seen[tp] = true
		traces[tp[3:35]]++
	}
	if len(traces) != 3 || len(doer.tps) != 7 {
		t.Errorf("traces %v over %d attempts", traces, len(doer.tps))
	}
}

func TestCancelStopsArrivalsGraceThenCancels(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 1, 1000)
	doer := &fakeDoer{clk: clk, script: map[int][]attempt{0: {{ms(10), 200}}, 1: {{ms(10000), 200}}}}
	h := newHarness(t, DriverConfig{Grace: ms(100)}, doer)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := false
	quiet := func() bool {
		p := h.d.Progress()
		if !cancelled {
			return openQuiet(h, sched, start)()
		}
		// after cancel: the pacer has left its sleep, the grace timer sleeps, and every
		// unfinished task sleeps
		return !clk.hasSleeper(start.Add(ms(1000))) && int64(clk.Sleepers()) == 1+(2-p.Done)
	}
	res := h.run(ctx, sched, quiet, func(now time.Time) {
		if !cancelled && now.Sub(start) == ms(1) {
			cancelled = true
			cancel()
		}
	})
	if !res.Interrupted || len(h.recs) != 2 {
		t.Fatalf("interrupted %v, %d records (the 1000 ms arrival must never be sent)", res.Interrupted, len(h.recs))
	}
	if r := h.recs[0]; r.Status != record.StatusOK || r.DoneAt.Sub(start) != ms(10) {
		t.Errorf("seq 0 finished in grace: %s at %v", r.Status, r.DoneAt.Sub(start))
	}
	if r := h.recs[1]; r.Status != record.StatusCancelled || r.DoneAt.Sub(start) != ms(101) || r.Accepted {
		t.Errorf("seq 1 cut at grace end: %s at %v accepted %v", r.Status, r.DoneAt.Sub(start), r.Accepted)
	}
}

func TestCancelWhileQueuedIsRecorded(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 0)
	h := newHarness(t, DriverConfig{MaxInFlight: 1, Grace: -1}, &fakeDoer{clk: clk, def: attempt{dur: ms(50), code: 200}})
	ctx, cancel := context.WithCancel(context.Background())
	done := false
	res := h.run(ctx, sched, func() bool {
		p := h.d.Progress()
		if done {
			return p.Done == 2 // no grace: both end at once, without the clock moving
		}
		return int64(clk.Sleepers())+p.Done+p.Queued == 2
	}, func(now time.Time) {
		if !done {
			done = true
			cancel()
		}
	})
	if len(h.recs) != 2 || !res.Interrupted {
		t.Fatalf("%d records", len(h.recs))
	}
	attempts := 0
	for _, r := range h.recs {
		if r.Status != record.StatusCancelled || r.DoneAt != start {
			t.Errorf("seq %d: %s at %v", r.Seq, r.Status, r.DoneAt.Sub(start))
		}
		attempts += r.Attempts
		if r.Attempts == 0 && !strings.Contains(r.Error, "max_in_flight") {
			t.Errorf("queued task: error %q", r.Error)
		}
	}
	if attempts != 1 { // the queued task (either one: both were due at 0) was never sent
		t.Errorf("%d attempts in all, want 1", attempts)
	}
}

func TestClosedLoopWorkers(t *testing.T) {
	clk := newFakeClock()
	start := clk.Now()
	sched := at(0, 0, 0, 0, 0)
	sched.closed = 2
	h := newHarness(t, DriverConfig{Warmup: ms(15)}, &fakeDoer{clk: clk, def: attempt{dur: ms(10), code: 200}})
	h.run(context.Background(), sched, func() bool {
		p := h.d.Progress()
		return int64(clk.Sleepers()) == min(2, 5-p.Done)
	}, nil)
	wantSent := []int{0, 0, 10, 10, 20}
	var got []int
	for _, r := range h.recs {
		got = append(got, int(r.SentAt.Sub(start)/time.Millisecond))
		if lag, _ := r.ScheduleLag(); lag != 0 {
			t.Errorf("closed loop lag %v", lag)
		}
	}
	sort.Ints(got)
	if fmt.Sprint(got) != fmt.Sprint(wantSent) {
		t.Errorf("sends %v want %v", got, wantSent)
	}
	cold := 0
	for _, r := range h.recs {
		if r.Phase == record.PhaseCold {
			cold++
		}
	}
	if cold != 4 {
		t.Errorf("%d cold tasks, want 4 (sent at 0 and 10 ms, warmup 15 ms)", cold)
	}
}

func TestClosedLoopDurationStops(t *testing.T) {
	clk := newFakeClock()
	sched := at(make([]int, 100)...)
	sched.closed = 1
	h := newHarness(t, DriverConfig{Duration: ms(35)}, &fakeDoer{clk: clk, def: attempt{dur: ms(10), code: 200}})
	h.run(context.Background(), sched, func() bool {
		return clk.Sleepers() == 1
	}, nil)
	if len(h.recs) != 4 { // sent at 0, 10, 20, 30
		t.Errorf("%d records, want 4", len(h.recs))
	}
}
