package stats

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"

	"github.com/pel-ladder/pel/record"
)

// DefaultSampleBytes bounds the task records a Sample keeps per phase: 32 MiB holds every
// task of a phase up to ~35,000 tasks of 16 tokens (~15,000 of 128), so every run a test
// or a demo makes is analysed whole, while an hour at 1,000 tasks/s (3.6 M) is not held
// in memory.
const DefaultSampleBytes = 32 << 20

// Sample keeps the task records of a run while they fit a memory budget, and beyond it a
// seeded uniform sample of them, stratified by phase (a short cold phase stays whole next
// to an hour of warm tasks).
//
// A task is kept when its priority — a hash of what identifies it (seq, request id, task
// type, scheduled time), never of the order it arrives in — is at most its phase's
// threshold, and the threshold halves whenever the kept records pass the budget. So the
// sample is a function of the set of tasks alone: the same tasks read in any order, or
// from shards merged in any order, give the same sample, and the sample of a union is the
// sample of the union of the parts' samples. Records are kept without their text (prompt,
// output, hashes, ids): nothing the statistics read.
type Sample struct {
	budget int64
	strata map[string]*stratum
	next   int64
	intern map[string]string
	// outside marks, after Records, which records were offered with AddOutside.
	outside []bool
}

type stratum struct {
	items        []sampled
	bytes        int64
	tau          uint64 // keep priority <= tau
	seen         int
	kept         int // len(items) until Records hands them over
	nonCancelled int // tasks seen that were not cancelled (the diagnosis's phase denominators)
}

type sampled struct {
	rec     record.Record
	outside bool // for the diagnosis only (Stream.AddOutside)
	prio    uint64
	order   int64
	size    int64
}

// NewSample returns a sample with a per-phase budget in bytes (<= 0: DefaultSampleBytes).
func NewSample(budget int64) *Sample {
	if budget <= 0 {
		budget = DefaultSampleBytes
	}
	return &Sample{budget: budget, strata: map[string]*stratum{}, intern: map[string]string{}}
}

// Priority is the sampling priority of a task: a 64-bit hash of its seq, request id, task
// type and scheduled time.
func Priority(r *record.Record) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(r.Seq))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.ScheduledAt.UnixNano()))
	h.Write(b[:])
	h.Write([]byte(r.ID))
	h.Write([]byte{0})
	h.Write([]byte(r.Task))
	return mix64(h.Sum64())
}

// mix64 is splitmix64's finaliser: FNV's low bits are weak, thresholds use the high ones.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Add offers one task record (steps attached); the sample copies what it keeps.
func (s *Sample) Add(r *record.Record) { s.add(r, false) }

func (s *Sample) add(r *record.Record, outside bool) {
	st := s.strata[r.Phase]
	if st == nil {
		st = &stratum{tau: math.MaxUint64}
		s.strata[r.Phase] = st
	}
	st.seen++
	if r.Status != record.StatusCancelled {
		st.nonCancelled++
	}
	s.next++
	p := Priority(r)
	if p > st.tau {
		return
	}
	c := s.compact(r)
	size := recordSize(&c)
	st.items = append(st.items, sampled{rec: c, outside: outside, prio: p, order: s.next, size: size})
	st.bytes += size
	defer func() { st.kept = len(st.items) }()
	for st.bytes > s.budget && len(st.items) > 1 && st.tau > 0 {
		st.tau >>= 1
		kept := st.items[:0]
		st.bytes = 0
		for _, it := range st.items {
			if it.prio <= st.tau {
				kept = append(kept, it)
				st.bytes += it.size
			}
		}
		clear(st.items[len(kept):]) // let the dropped records go
		st.items = kept
	}
}

// compact copies r without the text and ids no statistic reads, with its repeated short
// strings shared.
func (s *Sample) compact(r *record.Record) record.Record {
	c := *r
	c.ID, c.TraceID, c.PromptHash, c.Prompt, c.Output = "", "", "", "", ""
	c.Task, c.Phase, c.Status = s.str(c.Task), s.str(c.Phase), s.str(c.Status)
	c.TokenSource, c.FinishReason, c.ErrorClass = s.str(c.TokenSource), s.str(c.FinishReason), s.str(c.ErrorClass)
	if len(c.Reasons) > 0 {
		c.Reasons = append([]string(nil), c.Reasons...)
		for i := range c.Reasons {
			c.Reasons[i] = s.str(c.Reasons[i])
		}
	}
	if steps := r.StepRecords(); len(steps) > 0 {
		cs := make([]record.Record, len(steps))
		for i := range steps {
			cs[i] = s.compact(&steps[i])
		}
		c.AttachSteps(cs)
	}
	return c
}

// maxInterned bounds the shared strings: reasons and statuses repeat, error texts may not.
const maxInterned = 4096

func (s *Sample) str(x string) string {
	if x == "" {
		return ""
	}
	if y, ok := s.intern[x]; ok {
		return y
	}
	if len(s.intern) < maxInterned && len(x) <= 256 {
		s.intern[x] = x
	}
	return x
}

// recordSize estimates the memory a kept record holds: the struct in the sample's slice
// (its capacity grows ahead), its slices and strings.
func recordSize(r *record.Record) int64 {
	n := int64(900 + 8*len(r.ChunkUS) + 8*len(r.ChunkTokens) + 16*len(r.Reasons) + 16*len(r.Flags) + len(r.Error))
	if r.Server != nil {
		n += 64
	}
	if r.Step != nil {
		n += 96
	}
	for _, st := range r.StepRecords() {
		n += recordSize(&st)
	}
	return n
}

// Complete reports whether every task offered is in the sample.
func (s *Sample) Complete() bool {
	for _, st := range s.strata {
		if st.kept < st.seen {
			return false
		}
	}
	return true
}

// Records hands over the kept records in the order they were offered; the sample keeps
// only its counts after (the records are not held twice).
func (s *Sample) Records() []record.Record {
	n := 0
	for _, st := range s.strata {
		n += len(st.items)
	}
	all := make([]*sampled, 0, n)
	for _, st := range s.strata {
		for i := range st.items {
			all = append(all, &st.items[i])
		}
	}
	sortByOrder(all)
	out := make([]record.Record, len(all))
	s.outside = make([]bool, len(all))
	for i, it := range all {
		out[i], s.outside[i] = it.rec, it.outside
		it.rec = record.Record{}
	}
	for _, st := range s.strata {
		st.items = nil
	}
	return out
}

func sortByOrder(xs []*sampled) {
	// Strata are each in order: a k-way merge would do, a sort is simpler and rare.
	slices.SortFunc(xs, func(a, b *sampled) int {
		switch {
		case a.order < b.order:
			return -1
		case a.order > b.order:
			return 1
		}
		return 0
	})
}

// Seen is how many tasks of phase were offered; Kept how many are in the sample.
func (s *Sample) Seen(phase string) int {
	if st := s.strata[phase]; st != nil {
		return st.seen
	}
	return 0
}

// Kept is how many tasks of phase the sample holds.
func (s *Sample) Kept(phase string) int {
	if st := s.strata[phase]; st != nil {
		return st.kept
	}
	return 0
}

// Tasks is how many tasks were offered in all; NonCancelled per phase counts those that
// were not cancelled (the diagnosis's phase denominators), over every task, kept or not.
func (s *Sample) Tasks() int {
	n := 0
	for _, st := range s.strata {
		n += st.seen
	}
	return n
}

// NonCancelled returns, per phase, the tasks offered that were not cancelled.
func (s *Sample) NonCancelled() map[string]int {
	out := map[string]int{}
	for p, st := range s.strata {
		out[p] = st.nonCancelled
	}
	return out
}
