package diagnose

import (
	"container/heap"
	"sort"
	"time"

	"github.com/pel-ladder/pel/record"
)

// A llama.cpp server starts a request only in a free slot (-np of them, /props
// total_slots): a request that finds every slot busy is deferred, unprocessed, and one
// deferred request goes back to the task queue each time a slot is released
// (examples/server/server.cpp: process_single_task defers a task get_available_slot finds
// no slot for; a slot's callback_on_release calls pop_deferred_task). Neither
// timings.prompt_ms nor predicted_ms holds that wait, and a run-level mean of the
// deferred gauge gives it to every task alike, so a burst of arrivals that fills the slots
// leaves its tasks' waits unattributed. The client's records hold what replays it: when
// each request was sent and when it ended. Replayed first come, first served through the
// slots, each request's wait for one is its start less its send; test/llamacpp holds the
// replay against llama.cpp's own timings (TTFT from send − prompt_ms) task by task.

// slotWaits replays every request the run sent to its one engine through slots slots,
// first come first served, a slot held from the request's start to its end, and returns
// each request's wait in ms (only the requests that waited). Requests the client never
// sent, or whose end it did not see, hold no slot. Canary tasks went to another server and
// are left out; so is everything when the run's tasks went to several engines, whose
// slots the records cannot place.
func slotWaits(recs []record.Record, slots int) map[*record.Record]float64 {
	if slots <= 0 {
		return nil
	}
	var reqs []*record.Record
	for i := range recs {
		if recs[i].Phase == record.PhaseCanary {
			continue
		}
		for _, q := range recs[i].Requests() {
			if !q.SentAt.IsZero() && !q.DoneAt.Before(q.SentAt) && !q.DoneAt.IsZero() {
				reqs = append(reqs, q)
			}
		}
	}
	sort.SliceStable(reqs, func(a, b int) bool { return reqs[a].SentAt.Before(reqs[b].SentAt) })
	// free holds the time each busy slot frees; a slot not yet used is free from the start.
	free := make(timeHeap, 0, slots)
	out := map[*record.Record]float64{}
	for _, q := range reqs {
		start := q.SentAt
		if len(free) == slots {
			if f := heap.Pop(&free).(time.Time); f.After(start) {
				start = f
			}
		}
		// A request the replay starts after its own end (one that ended while every slot
		// was busy, or an engine serving more at once than it reports) held no slot long.
		end := q.DoneAt
		if start.After(end) {
			end = start
		}
		heap.Push(&free, end)
		if w := start.Sub(q.SentAt); w > 0 {
			out[q] = float64(w) / float64(time.Millisecond)
		}
	}
	return out
}

type timeHeap []time.Time

func (h timeHeap) Len() int { return len(h) }

func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }

func (h timeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *timeHeap) Push(x any) { *h = append(*h, x.(time.Time)) }

func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
