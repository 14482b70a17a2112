package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// heldDoer answers only once release is closed.
type heldDoer struct{ release chan struct{} }

func (h *heldDoer) Body(*workload.Request) ([]byte, error) { return []byte("{}"), nil }

func (h *heldDoer) Do(ctx context.Context, _ *workload.Request, _ []byte, rec *record.Record, _ string) (string, int) {
	rec.SentAt = time.Now()
	<-h.release
	rec.Status = record.StatusOK
	rec.FirstTokenAt, rec.LastTokenAt = time.Now(), time.Now()
	return "ok", 2
}

// TestAbandonRecordsEveryStartedTask: three tasks due, two sending (max_in_flight 2) and one
// waiting for a slot. Abandon writes one cancelled record for each of the three, with the
// time the two were sent; what they finish afterwards is dropped, so each task keeps
// exactly one record.
func TestAbandonRecordsEveryStartedTask(t *testing.T) {
	doer := &heldDoer{release: make(chan struct{})}
	var mu sync.Mutex
	var recs []record.Record
	d := NewDriver(DriverConfig{Doer: doer, MaxInFlight: 2, Sink: func(r *record.Record) error {
		mu.Lock()
		recs = append(recs, *r)
		mu.Unlock()
		return nil
	}})
	sched := at(0, 0, 0)
	done := make(chan Result)
	go func() { done <- d.Run(context.Background(), sched) }()
	for i := 0; ; i++ {
		if p := d.Progress(); p.InFlight == 2 && p.Queued == 1 {
			break
		}
		if i == 5000 {
			t.Fatalf("tasks never started: %+v", d.Progress())
		}
		time.Sleep(time.Millisecond)
	}
	if n := d.Abandon(); n != 3 {
		t.Fatalf("Abandon recorded %d tasks, want 3", n)
	}
	if n := d.Abandon(); n != 0 {
		t.Errorf("a second Abandon recorded %d more", n)
	}
	close(doer.release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 3 {
		t.Fatalf("%d records after the tasks finished, want exactly the 3 Abandon wrote", len(recs))
	}
	sent, seqs := 0, map[int]bool{}
	for _, r := range recs {
		seqs[r.Seq] = true
		if r.Status != record.StatusCancelled || r.ScheduledAt.IsZero() || r.DoneAt.IsZero() || r.Accepted {
			t.Errorf("record %d: status %s, scheduled %v, done %v, accepted %v", r.Seq, r.Status, r.ScheduledAt, r.DoneAt, r.Accepted)
		}
		if !r.SentAt.IsZero() {
			sent++
		}
	}
	if len(seqs) != 3 || sent != 2 {
		t.Errorf("records for tasks %v, %d with a send time; want 3 tasks, 2 sent", seqs, sent)
	}
}
