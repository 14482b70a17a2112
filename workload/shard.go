package workload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/contract"
)

// Sharding splits one seeded schedule between n load generators (pel run --shard i/n).
//
// Shard i runs every n-th arrival of the one schedule: the requests whose Seq ≡ i (mod n),
// at the times the single schedule gives them. Not 1/n of the rate with a seed per shard,
// because then the union of the shards would be a different workload from the contract's
// (other arrival times, another task mix, other lengths) and seqs would collide; with every
// n-th arrival the union is exactly the schedule one process would have run — the same
// times, tasks, lengths and seqs — so merged shards can be compared with one process
// exactly, and seqs identify each task across the fleet. What one shard offers is the
// single schedule thinned regularly: for a Poisson process of rate λ, every n-th arrival is
// an Erlang-n renewal process of rate λ/n (steadier than Poisson), but the server receives
// the superposition, which is the original Poisson process. Every shard draws the whole
// schedule and keeps its share, so drawing costs each shard what it costs one process.
//
// A closed loop has no arrival times: its concurrency is divided (shard i gets
// ⌊c/n⌋, plus one when i < c mod n), and each shard takes its requests (task mix, lengths)
// from the same every-n-th slice of the one sequence, so seqs stay disjoint.

// Shard names one shard of a sharded run: Index in [0, Count).
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" (0 ≤ i < n, n ≤ MaxShards).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/4", s)
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err := errors.Join(err1, err2); err != nil {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT of whole numbers, e.g. 0/4", s)
	}
	sh := Shard{Index: i, Count: n}
	return sh, sh.Check()
}

// MaxShards bounds a shard count: more load generators than this is a typo, not a fleet.
const MaxShards = 10_000

// Check reports a shard outside its count.
func (s Shard) Check() error {
	if s.Count < 1 || s.Count > MaxShards {
		return fmt.Errorf("shard count %d: want 1 to %d", s.Count, MaxShards)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard index %d: want 0 to %d (indices count from 0)", s.Index, s.Count-1)
	}
	return nil
}

// String is "i/n", as records carry it.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Sharded returns the part of sched that shard s runs (sched itself for a 1/1 shard).
func Sharded(sched Schedule, s Shard) Schedule {
	if s.Count <= 1 {
		return sched
	}
	x := &sharded{sched: sched, s: s}
	if sched.Closed() > 0 && x.Closed() == 0 {
		return empty{} // fewer workers than shards: this one has none (0 would mean open loop)
	}
	return x
}

type empty struct{}

func (empty) Next() (Request, bool) { return Request{}, false }
func (empty) Closed() int           { return 0 }

type sharded struct {
	sched Schedule
	s     Shard
}

// Next skips the other shards' requests: the whole schedule is drawn, so every random
// stream advances as it does in one process.
func (x *sharded) Next() (Request, bool) {
	for {
		r, ok := x.sched.Next()
		if !ok || r.Seq%x.s.Count == x.s.Index {
			return r, ok
		}
	}
}

// Closed divides a closed loop's concurrency; a shard whose share is 0 sends nothing.
func (x *sharded) Closed() int {
	c := x.sched.Closed()
	if c == 0 {
		return 0
	}
	share := c / x.s.Count
	if x.s.Index < c%x.s.Count {
		share++
	}
	return share
}

// SharedNonce is the prompt nonce every shard of one sharded run uses (NewNonce draws one
// per process, which would make the shards' prompts differ where a prefix is meant to be
// shared): derived from a key all shards know and no other run has, their shared start
// time. 0 when the contract reuses prompts across runs.
func SharedNonce(c *contract.Contract, key int64) uint64 {
	if c.Prompts.ReuseAcrossRuns {
		return 0
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(key))
	h.Write(b[:])
	h.Write([]byte(c.SHA256()))
	n := h.Sum64() % (1 << (8 * NonceWords))
	if n == 0 {
		n = 1
	}
	return n
}
