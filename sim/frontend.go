package sim

import (
	"container/heap"
	"sync"
	"time"
)

// lateQueue holds a decoupled frontend's emissions until the virtual time their API server
// has handled them (Engine.deliverDecoupled), in order of that time and, for equal times, of
// arrival, so one stream's chunks (always handled by the same API server, FIFO) keep their
// order.
type lateQueue struct {
	mu   sync.Mutex
	h    lateHeap
	n    uint64
	wake chan struct{}
}

type lateItem struct {
	em  emission
	ord uint64
}

type lateHeap []lateItem

func (h lateHeap) Len() int { return len(h) }
func (h lateHeap) Less(i, j int) bool {
	if h[i].em.at != h[j].em.at {
		return h[i].em.at < h[j].em.at
	}
	return h[i].ord < h[j].ord
}
func (h lateHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *lateHeap) Push(x any)   { *h = append(*h, x.(lateItem)) }
func (h *lateHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = lateItem{}
	*h = old[:len(old)-1]
	return it
}

func newLateQueue() *lateQueue { return &lateQueue{wake: make(chan struct{}, 1)} }

func (q *lateQueue) add(em emission) {
	q.mu.Lock()
	heap.Push(&q.h, lateItem{em: em, ord: q.n})
	q.n++
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// due pops every emission due at or before virtual time now into buf, and returns the time
// of the next one (ok false when none is left).
func (q *lateQueue) due(now float64, buf []emission) ([]emission, float64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.h.Len() > 0 && q.h[0].em.at <= now {
		buf = append(buf, heap.Pop(&q.h).(lateItem).em)
	}
	if q.h.Len() == 0 {
		return buf, 0, false
	}
	return buf, q.h[0].em.at, true
}

// deliverLate is a decoupled frontend's delivery loop for one replica: it hands each
// emission to its stream at the wall time of its virtual due time, apart from the engine
// core's loop, which never waits for it.
func (s *Server) deliverLate(r *replica) {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var buf []emission
	for {
		var next float64
		var pending bool
		buf, next, pending = r.late.due(s.virtNow(), buf[:0])
		for i, em := range buf {
			em.st.push(em.tokens, em.finish)
			buf[i] = emission{}
		}
		var tc <-chan time.Time
		if pending {
			timer.Reset(max(0, time.Until(s.wallAt(next))))
			tc = timer.C
		}
		select {
		case <-tc:
		case <-r.late.wake:
			timer.Stop() // since Go 1.23 a stopped timer's channel holds no stale value
		case <-s.closed:
			return
		}
	}
}
