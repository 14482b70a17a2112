package stats

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/pel-ladder/pel/record"
)

// Two signals join every task of a set with every other one: a decode stall counts as
// aligned when ANOTHER task's first token ends it (ShapeOf), and a short prompt counts as
// blocked when ANY long prompt was waiting as it was sent (HOL). On a sample, looking only
// at the sampled tasks would miss most partners and read both too low, so for a sample
// they are joined against every task in one more pass: the sampled streams' gaps and the
// sampled short prompts are the ones judged, every task supplies the partners. Over a
// complete sample a Join gives exactly what the records alone give.

// JoinSet is a set of tasks to join; the same set must then be the rs the statistic reads
// (ShapeWith, HOLWith).
type JoinSet struct {
	Name string
	// In selects the set's task records: their streams are judged, their first tokens end
	// each other's stalls, their short prompts are the ones blocking is measured on.
	In func(*record.Record) bool
	// Waiting selects the tasks whose long prompts can block the set's short ones (nil: In).
	Waiting func(*record.Record) bool
	// Requests: the head-of-line index is over requests (a multi-step task's calls, as stage
	// 1 reads it) rather than over task records (as the diagnosis's impact counts them).
	Requests bool
}

// Join holds one set's joined facts for the sampled records it was built over.
type Join struct {
	bit  uint8
	hits map[joinKey][]uint8 // per sampled stream, per gap (from 1): the sets whose first token ended it
	hol  *HOLIndex
	// idle are the set's completed requests sent with nothing else in flight, from every
	// task: the service-time baseline of the queue share and the prefill fit rests on them,
	// and under load they are too rare for a sample to hold enough.
	idle *idleSet
}

// idleRequests returns the join's idle-sent requests as records (nil without a join).
func (j *Join) idleRequests() []*record.Record {
	if j == nil || j.idle == nil {
		return nil
	}
	return j.idle.records()
}

// aligned reports whether gap i (between content events i-1 and i) of the sampled stream r
// ended with another task's first token of the set.
func (j *Join) aligned(r *record.Record, i int) bool {
	h := j.hits[keyOf(r)]
	return i < len(h) && h[i]&j.bit != 0
}

// HOL returns the set's head-of-line index (its long prompts' waits from every task).
func (j *Join) HOL() *HOLIndex { return j.hol }

// joinKey identifies a sampled request across copies of the sample (a filtered view of
// it keeps the joins): its task's seq, its call index (-1: the task itself) and its
// scheduled time.
type joinKey struct {
	seq, step int
	at        int64
}

func keyOf(r *record.Record) joinKey {
	k := joinKey{seq: r.Seq, step: -1, at: r.ScheduledAt.UnixNano()}
	if r.Step != nil {
		k.step = r.Step.Index
	}
	return k
}

// maxJoinSets: a set's membership is one bit of a byte per gap.
const maxJoinSets = 8

// joinStream is a sampled stream whose gaps are judged. Times are Unix nanoseconds (exact
// for any date a run has), so the pass over every task compares integers.
type joinStream struct {
	r    *record.Record
	mask uint8
	ev   []int64 // content events
	tol  int64   // half the stream's median gap
	own  int64   // its own first token
	mono bool    // events never go back: windows can be searched
	hits []uint8
}

// BuildJoins joins each set against every task of the run (each streams them once) for the
// sampled records (sample). At most maxJoinSets sets.
func BuildJoins(sample []record.Record, sets []JoinSet, each func(func(*record.Record) error) error) (map[string]*Join, error) {
	sets = sets[:min(len(sets), maxJoinSets)]
	joins := map[string]*Join{}
	membership := func(r *record.Record) (in, waiting uint8) {
		for k, s := range sets {
			if s.In(r) {
				in |= 1 << k
			}
			w := s.Waiting
			if w == nil {
				w = s.In
			}
			if w(r) {
				waiting |= 1 << k
			}
		}
		return in, waiting
	}
	// The sampled side: streams to judge, and each set's short task type from the sample.
	var streams []*joinStream
	typed := make([][]*record.Record, len(sets))
	for i := range sample {
		t := &sample[i]
		in, _ := membership(t)
		if in == 0 {
			continue
		}
		for _, q := range t.Requests() {
			if st, ok := newJoinStream(q, in); ok {
				streams = append(streams, st)
			}
		}
		for k, s := range sets {
			if in&(1<<k) == 0 {
				continue
			}
			if s.Requests {
				typed[k] = append(typed[k], t.Requests()...)
			} else {
				typed[k] = append(typed[k], t)
			}
		}
	}
	holes := make([]*HOLIndex, len(sets))
	spans := make([]spanSet, len(sets))
	idles := make([]*idleSet, len(sets))
	for k := range idles {
		idles[k] = &idleSet{tau: math.MaxUint64}
	}
	for k := range sets {
		holes[k] = holShort(typed[k])
	}
	idx := newSlotIndex(streams)
	err := each(func(q *record.Record) error {
		in, waiting := membership(q)
		if in == 0 && waiting == 0 {
			return nil
		}
		reqs := q.Requests()
		if in != 0 {
			for _, x := range reqs {
				if !x.FirstTokenAt.IsZero() {
					idx.mark(x.FirstTokenAt, in)
				}
			}
			for k := range sets {
				if in&(1<<k) != 0 {
					idles[k].add(q, reqs)
				}
			}
		}
		for k, s := range sets {
			h := holes[k]
			if waiting&(1<<k) == 0 || h.ShortTask == "" {
				continue
			}
			one := []*record.Record{q}
			if s.Requests {
				one = reqs
			}
			for _, x := range one {
				if x.PromptTokens < h.LongMin {
					continue
				}
				if sp, ok := holSpanOf(x); ok {
					spans[k].add(sp)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	hits := map[joinKey][]uint8{}
	for _, st := range streams {
		hits[keyOf(st.r)] = st.hits
	}
	for k, s := range sets {
		holes[k].waits = spans[k].merged()
		joins[s.Name] = &Join{bit: 1 << k, hits: hits, hol: holes[k], idle: idles[k]}
	}
	return joins, nil
}

// newJoinStream applies rhythm's rules: a completed stream with a rhythm (enough gaps, a
// median gap no shorter than CoalescedGap, events that are the stream's own rather than an
// importing tool's summary) has its gaps judged.
func newJoinStream(r *record.Record, mask uint8) (*joinStream, bool) {
	if !r.OK() || len(r.ChunkUS) < 2 || r.SentAt.IsZero() || len(r.ChunkUS)-1 < MinStreamTokens-1 || r.HasFlag(record.FlagEventsSummarized) {
		return nil, false
	}
	g := make([]float64, 0, len(r.ChunkUS)-1)
	mono := true
	for i := 1; i < len(r.ChunkUS); i++ {
		g = append(g, float64(r.ChunkUS[i]-r.ChunkUS[i-1]))
		if r.ChunkUS[i] < r.ChunkUS[i-1] {
			mono = false
		}
	}
	mg := med(g)
	if time.Duration(mg)*time.Microsecond < CoalescedGap {
		return nil, false
	}
	s := &joinStream{r: r, mask: mask, tol: int64(time.Duration(mg/2) * time.Microsecond), mono: mono, hits: make([]uint8, len(r.ChunkUS))}
	sent := r.SentAt.UnixNano()
	s.ev = make([]int64, len(r.ChunkUS))
	for i, us := range r.ChunkUS {
		s.ev[i] = sent + int64(time.Duration(us)*time.Microsecond)
	}
	s.own = r.FirstTokenAt.UnixNano()
	if r.FirstTokenAt.IsZero() {
		s.own = math.MinInt64
	}
	return s, true
}

// span is the instants any of the stream's gap windows covers.
func (s *joinStream) span() (a, b int64) {
	a, b = s.ev[0], s.ev[len(s.ev)-1]+s.tol
	if !s.mono {
		for i := 1; i < len(s.ev); i++ {
			a, b = min(a, s.ev[i-1]), max(b, s.ev[i]+s.tol)
		}
	}
	return a, b
}

// mark records a first token at t from tasks of the sets in mask in every gap window
// (a, b] = (event i-1, event i + tol] that holds it, except the stream's own first token
// (as rhythm's firstIn excludes it).
func (s *joinStream) mark(t int64, mask uint8) {
	m := mask & s.mask
	if m == 0 || t == s.own {
		return
	}
	n := len(s.ev)
	i := 1
	if s.mono {
		if t <= s.ev[0] || t > s.ev[n-1]+s.tol {
			return
		}
		// First gap whose window ends at or after t.
		i = 1 + sort.Search(n-1, func(k int) bool { return s.ev[k+1]+s.tol >= t })
	}
	for ; i < n; i++ {
		a, b := s.ev[i-1], s.ev[i]+s.tol
		if s.mono && t <= a {
			return // later windows start later still
		}
		if t > a && t <= b {
			s.hits[i] |= m
		}
	}
}

// slotIndex finds the sampled streams whose span holds an instant: one list per slot, a
// slot as long as a typical stream, so a lookup visits about the sampled streams in flight.
type slotIndex struct {
	origin, width int64
	slots         [][]*joinStream
}

func newSlotIndex(streams []*joinStream) *slotIndex {
	x := &slotIndex{width: int64(time.Second)}
	if len(streams) == 0 {
		return x
	}
	spans := make([]int64, 0, len(streams))
	x.origin, _ = streams[0].span()
	for _, s := range streams {
		a, b := s.span()
		x.origin = min(x.origin, a)
		spans = append(spans, b-a)
	}
	slices.Sort(spans)
	x.width = min(max(spans[len(spans)/2], int64(time.Millisecond)), int64(time.Minute))
	for _, s := range streams {
		a, b := s.span()
		for k := x.slot(a); k <= x.slot(b); k++ {
			for len(x.slots) <= k {
				x.slots = append(x.slots, nil)
			}
			x.slots[k] = append(x.slots[k], s)
		}
	}
	return x
}

func (x *slotIndex) slot(t int64) int { return int((t - x.origin) / x.width) }

func (x *slotIndex) mark(t time.Time, mask uint8) {
	ns := t.UnixNano()
	if ns < x.origin {
		return
	}
	k := x.slot(ns)
	if k >= len(x.slots) {
		return
	}
	for _, s := range x.slots[k] {
		s.mark(ns, mask)
	}
}

// idleSet keeps a set's idle-sent requests compactly, at most maxIdle of them (past that a
// seeded uniform sample, by the threshold rule of Sample: the same whatever the order).
type idleSet struct {
	xs  []idleReq
	tau uint64
}

type idleReq struct {
	task   string
	prompt int
	ttft   time.Duration // from send
	prio   uint64
}

// maxIdle bounds an idleSet: 65,536 requests, 2.5 MiB.
const maxIdle = 1 << 16

func (s *idleSet) add(task *record.Record, reqs []*record.Record) {
	p := Priority(task)
	for i, x := range reqs {
		if !x.OK() || x.InFlight != 0 {
			continue
		}
		t, has := x.TTFTFromSent()
		if !has {
			continue
		}
		prio := mix64(p + uint64(i))
		if prio > s.tau {
			continue
		}
		s.xs = append(s.xs, idleReq{task: x.Task, prompt: x.PromptTokens, ttft: t, prio: prio})
		for len(s.xs) > maxIdle && s.tau > 0 {
			s.tau >>= 1
			s.xs = slices.DeleteFunc(s.xs, func(r idleReq) bool { return r.prio > s.tau })
		}
	}
}

// records rebuilds the requests as records carrying what queue and prefill read.
func (s *idleSet) records() []*record.Record {
	out := make([]*record.Record, len(s.xs))
	t0 := time.Unix(0, 0) // any instant that is not zero: TTFTFromSent needs a send
	for i, x := range s.xs {
		out[i] = &record.Record{Task: x.task, PromptTokens: x.prompt, Status: record.StatusOK, SentAt: t0, FirstTokenAt: t0.Add(x.ttft)}
	}
	return out
}

// spanSet collects waiting intervals in bounded memory: every spanCompact additions it
// sorts and merges them, and overlapping waits (most of them under load) collapse.
type spanSet struct {
	buf  []holSpan
	done []holSpan
}

const spanCompact = 1 << 16

func (s *spanSet) add(sp holSpan) {
	s.buf = append(s.buf, sp)
	if len(s.buf) >= spanCompact {
		s.done = mergeSpans(append(s.done, s.buf...))
		s.buf = s.buf[:0]
	}
}

func (s *spanSet) merged() []holSpan {
	all := mergeSpans(append(s.done, s.buf...))
	s.buf = nil
	return all
}
