package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// sideDoer completes every task at once and remembers which tasks it encoded and sent.
type sideDoer struct {
	mu           sync.Mutex
	bodies, sent map[int]bool
}

func (s *sideDoer) Body(r *workload.Request) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies[r.Seq] = true
	return []byte("{}"), nil
}

func (s *sideDoer) Do(ctx context.Context, r *workload.Request, body []byte, rec *record.Record, tp string) (string, int) {
	s.mu.Lock()
	s.sent[r.Seq] = true
	s.mu.Unlock()
	now := time.Now()
	rec.SentAt, rec.HeadersAt, rec.FirstTokenAt, rec.LastTokenAt = now, now, now, now
	rec.Status, rec.OutputTokens = record.StatusOK, 1
	return "x", 1
}

// An interleaved canary: Route marks arrivals in schedule order, and SplitDoer encodes and
// sends each one by its phase, naming its target on the record.
func TestRouteAndSplitDoer(t *testing.T) {
	base := &sideDoer{bodies: map[int]bool{}, sent: map[int]bool{}}
	cand := &sideDoer{bodies: map[int]bool{}, sent: map[int]bool{}}
	var mu sync.Mutex
	var recs []record.Record
	var order []int
	d := NewDriver(DriverConfig{
		Doer:   &SplitDoer{Base: base, Canary: cand, BaseTarget: "http://b", CanaryTarget: "http://c"},
		Warmup: 5 * time.Millisecond,
		Route: func(r *workload.Request) {
			order = append(order, r.Seq) // the pacer calls Route alone, in order
			if r.Seq%3 == 0 {
				r.Phase = record.PhaseCanary
			}
		},
		Sink: func(r *record.Record) error { mu.Lock(); recs = append(recs, *r); mu.Unlock(); return nil },
	})
	sched := at(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	for i := range sched.reqs {
		sched.reqs[i].Phase = workload.PhaseAt(sched.reqs[i].At, 5*time.Millisecond)
	}
	d.Run(context.Background(), sched)
	for i, s := range order {
		if s != i {
			t.Fatalf("Route saw arrivals out of order: %v", order)
		}
	}
	if len(recs) != 12 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		want, target, doer, other := r.Seq%3 == 0, "http://b", base, cand
		if want {
			target, doer, other = "http://c", cand, base
		}
		if (r.Phase == record.PhaseCanary) != want || r.Target != target || !doer.sent[r.Seq] || !doer.bodies[r.Seq] || other.sent[r.Seq] || other.bodies[r.Seq] {
			t.Errorf("task %d: phase %s, target %s; want candidate %v", r.Seq, r.Phase, r.Target, want)
		}
		if !want && r.Phase != workload.PhaseAt(time.Duration(r.Seq)*time.Millisecond, 5*time.Millisecond) {
			t.Errorf("task %d: a baseline task lost its cold/warm phase: %s", r.Seq, r.Phase)
		}
	}
}
