package rundir

import (
	"bufio"
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/lineio"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// LateLagMs: a shard whose own schedule lag reaches this at p99 ran late (the bound the
// diagnosis holds client timings to, scheduleLagMaxMs).
const LateLagMs = 50.0

// Merge writes one run directory, out, from the directories of every shard of one sharded
// run (pel run --shard i/n), so that analysing it gives what one process running the whole
// schedule would have produced: requests.jsonl is the union of the shards' records, in the
// order they ended; contract.yaml is the contract they share; evidence.json holds the run's
// information with one entry per shard (its tasks, schedule lag and clock against the
// target). Engine metrics come from the lowest shard that sampled them (every shard sees
// the same engine), OTLP spans from all.
//
// It refuses, before writing anything, shards of different contracts (sha256), of
// different runs (start or shard count), a shard given twice or missing, and while
// copying, a task in two shards or in the wrong one; out is then removed. out must be
// absent or empty.
func Merge(out string, in []string) (*evidence.Evidence, error) {
	if len(in) == 0 {
		return nil, bad(errors.New("no shard directories given"))
	}
	shards := make([]*Dir, len(in))
	for i, p := range in {
		d, err := Open(p)
		if err != nil {
			return nil, err
		}
		if d.Evidence == nil {
			return nil, bad(fmt.Errorf("%s has no %s: the shard has not finished (or its run failed before writing it)", p, EvidenceFile))
		}
		if d.Evidence.Run.Shard == nil {
			return nil, bad(fmt.Errorf("%s is not a shard of a sharded run (pel run --shard I/N --start-at T)", p))
		}
		shards[i] = d
	}
	sort.SliceStable(shards, func(i, j int) bool {
		return shards[i].Evidence.Run.Shard.Index < shards[j].Evidence.Run.Shard.Index
	})
	if err := checkShards(shards); err != nil {
		return nil, err
	}
	od, err := Create(out)
	if err != nil {
		return nil, err
	}
	ev, err := writeMerged(od, shards)
	if err != nil {
		od.Discard()
		return nil, err
	}
	return ev, nil
}

// checkShards refuses shards that are not the whole of one run.
func checkShards(shards []*Dir) error {
	first := shards[0]
	s0 := first.Evidence.Run.Shard
	for _, d := range shards[1:] {
		s := d.Evidence.Run.Shard
		if h0, h := first.Contract.SHA256(), d.Contract.SHA256(); h != h0 {
			return bad(fmt.Errorf("%s ran contract sha256 %.12s, %s ran %.12s: shards of one run share its contract", d.Path, h, first.Path, h0))
		}
		if s.Count != s0.Count {
			return bad(fmt.Errorf("%s is shard %d/%d, %s shard %d/%d: not the same run", d.Path, s.Index, s.Count, first.Path, s0.Index, s0.Count))
		}
		if !s.StartAt.Equal(s0.StartAt) {
			return bad(fmt.Errorf("%s started its schedule at %s, %s at %s: shards of one run share --start-at", d.Path,
				s.StartAt.UTC().Format(time.RFC3339Nano), first.Path, s0.StartAt.UTC().Format(time.RFC3339Nano)))
		}
	}
	for i := 1; i < len(shards); i++ {
		if a, b := shards[i-1], shards[i]; a.Evidence.Run.Shard.Index == b.Evidence.Run.Shard.Index {
			return bad(fmt.Errorf("%s and %s are both shard %d/%d: overlapping shards", a.Path, b.Path, b.Evidence.Run.Shard.Index, s0.Count))
		}
	}
	if len(shards) != s0.Count {
		var missing []string
		have := map[int]bool{}
		for _, d := range shards {
			have[d.Evidence.Run.Shard.Index] = true
		}
		for i := 0; i < s0.Count && len(missing) < 10; i++ {
			if !have[i] {
				missing = append(missing, fmt.Sprintf("%d/%d", i, s0.Count))
			}
		}
		return bad(fmt.Errorf("%d of %d shards given; missing %s: a merge of part of the schedule is not the run", len(shards), s0.Count, strings.Join(missing, ", ")))
	}
	return nil
}

// shardAcc is what the merge counts of one shard.
type shardAcc struct {
	d     *Dir
	tag   string
	tasks int
	lag   *stats.Dist
	end   time.Time
}

func writeMerged(out *Dir, shards []*Dir) (*evidence.Evidence, error) {
	first := shards[0]
	n := first.Evidence.Run.Shard.Count
	raw, err := safefile.ReadFile(first.File(ContractFile))
	if err != nil {
		return nil, bad(err)
	}
	if err := out.WriteContract(raw); err != nil {
		return nil, err
	}
	accs := make([]*shardAcc, len(shards))
	for i, d := range shards {
		s := d.Evidence.Run.Shard
		accs[i] = &shardAcc{d: d, tag: fmt.Sprintf("%d/%d", s.Index, s.Count), lag: stats.NewDist()}
	}
	seen := &bitset{}
	check := func(a *shardAcc, r *record.Record) error {
		if r.Shard != a.tag {
			return fmt.Errorf("%s holds a record of shard %q (seq %d): it is not shard %s's", a.d.Path, r.Shard, r.Seq, a.tag)
		}
		if r.Step != nil {
			return nil
		}
		if r.Seq >= contract.MaxPlannedRequests {
			// The bitset below is sized by seq: a seq no schedule reaches is refused first.
			return fmt.Errorf("%s holds seq %d, beyond any schedule (pel plans at most %d requests)", a.d.Path, r.Seq, contract.MaxPlannedRequests)
		}
		if r.Seq < 0 || r.Seq%n != a.d.Evidence.Run.Shard.Index {
			return fmt.Errorf("%s holds seq %d, which is not shard %s's part of the schedule", a.d.Path, r.Seq, a.tag)
		}
		if seen.testAndSet(r.Seq) {
			return fmt.Errorf("seq %d is recorded twice (again in %s): overlapping shards", r.Seq, a.d.Path)
		}
		a.tasks++
		if v, ok := r.ScheduleLag(); ok {
			a.lag.Add(v)
		}
		if r.DoneAt.After(a.end) {
			a.end = r.DoneAt
		}
		return nil
	}
	if err := mergeRequests(out, accs, check); err != nil {
		return nil, err
	}
	// Only regular files are carried over: a link planted in a shard's directory (to a file
	// outside the run) is refused, not followed.
	var notes []string
	for _, d := range shards {
		ok, err := d.Has(MetricsFile)
		if err != nil {
			return nil, bad(err)
		}
		if ok {
			if err := copyInto(out, MetricsFile, []*Dir{d}); err != nil {
				return nil, err
			}
			s := d.Evidence.Run.Shard
			notes = append(notes, fmt.Sprintf("engine metrics from shard %d/%d's %s (every shard sampled the same engine)", s.Index, s.Count, MetricsFile))
			break
		}
	}
	var withSpans []*Dir
	for _, d := range shards {
		ok, err := d.Has(SpansFile)
		if err != nil {
			return nil, bad(err)
		}
		if ok {
			withSpans = append(withSpans, d)
		}
	}
	if len(withSpans) > 0 {
		if err := copyInto(out, SpansFile, withSpans); err != nil {
			return nil, err
		}
	}
	ev := mergedEvidence(first, accs, notes)
	if err := out.WriteEvidence(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// mergedEvidence is the merged run's information: the first shard's target and engine,
// the shared start, and each shard's figures.
func mergedEvidence(first *Dir, accs []*shardAcc, notes []string) *evidence.Evidence {
	r0 := first.Evidence.Run
	ev := evidence.New()
	start := r0.Shard.StartAt
	ev.Run = evidence.Run{Target: r0.Target, Engine: r0.Engine, Model: r0.Model, StartedAt: start, EngineConfig: r0.EngineConfig}
	var end time.Time
	var offs []string
	for _, a := range accs {
		s := *a.d.Evidence.Run.Shard
		s.Dir, s.Tasks = a.d.Path, a.tasks
		s.ScheduleLagP50Ms, s.ScheduleLagP99Ms = a.lag.Quantiles().P50, a.lag.Quantiles().P99
		if s.ScheduleLagP99Ms >= LateLagMs {
			s.Note = fmt.Sprintf("late: this shard ran %.0f ms behind its schedule at p99 (its machine was starved or far from the target)", s.ScheduleLagP99Ms)
		}
		ev.Run.Shards = append(ev.Run.Shards, s)
		// A shard that was itself cut short (interrupted, stopped early, torn) leaves the
		// merged run partial: every shard being present is not the whole schedule then.
		if c := a.d.Evidence.Run.Completeness; c != nil {
			for _, g := range c.Gaps {
				if g.Kind != evidence.GapShard {
					ev.Run.AddGap(g.Kind, fmt.Sprintf("shard %d/%d: %s", s.Index, s.Count, g.Detail))
				}
			}
		}
		if a.end.After(end) {
			end = a.end
		}
		if c := s.Clock; c != nil {
			offs = append(offs, fmt.Sprintf("%d: %+.1f ± %.1f", s.Index, c.OffsetMs, c.BoundMs))
		}
	}
	if end.After(start) {
		ev.Run.DurationS = end.Sub(start).Seconds()
	}
	msg := fmt.Sprintf("merged from %d shards of one schedule (pel merge)", len(accs))
	if len(offs) > 0 {
		// Each shard measured the target's clock against its own; the shards' clocks agree
		// with each other to within the spread of those offsets plus their bounds.
		spread := 0.0
		for _, a := range ev.Run.Shards {
			for _, b := range ev.Run.Shards {
				if a.Clock != nil && b.Clock != nil {
					spread = max(spread, math.Abs(a.Clock.OffsetMs-b.Clock.OffsetMs)+a.Clock.BoundMs+b.Clock.BoundMs)
				}
			}
		}
		msg += fmt.Sprintf("; target clock minus each shard's, ms: %s; the shards' clocks differ by at most %.1f ms", strings.Join(offs, ", "), spread)
	}
	ev.Run.Notes = append([]string{msg}, notes...)
	for _, s := range ev.Run.Shards {
		if s.Note != "" {
			ev.Run.Notes = append(ev.Run.Notes, fmt.Sprintf("shard %d/%d %s", s.Index, s.Count, s.Note))
		}
	}
	return ev
}

// mergeRequests writes the union of the shards' requests.jsonl to path, in the order the
// records ended (each file is already in that order, nearly: a k-way merge by done_at),
// the lines as written, each checked by check.
func mergeRequests(out *Dir, accs []*shardAcc, check func(*shardAcc, *record.Record) error) error {
	f, err := out.Append(RequestsFile)
	if err != nil {
		return bad(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	h := &lineHeap{}
	readers := make([]*lineReader, len(accs))
	for i, a := range accs {
		lr, err := openLines(a.d, RequestsFile)
		if err != nil {
			return err
		}
		defer lr.close()
		readers[i] = lr
		if err := pushNext(h, lr, i); err != nil {
			return err
		}
	}
	for h.Len() > 0 {
		x := heap.Pop(h).(lineItem)
		if err := check(accs[x.src], &x.rec); err != nil {
			return bad(err)
		}
		if _, err := bw.Write(x.line); err != nil {
			return err
		}
		if err := pushNext(h, readers[x.src], x.src); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// lineReader reads a requests.jsonl line by line, decoding each (a torn last line ends it).
type lineReader struct {
	f    *os.File
	br   *bufio.Reader
	path string
	n    int
}

func openLines(d *Dir, name string) (*lineReader, error) {
	f, err := d.OpenFile(name)
	if err != nil {
		return nil, bad(err)
	}
	return &lineReader{f: f, br: bufio.NewReaderSize(f, 256<<10), path: d.File(name)}, nil
}

func (l *lineReader) close() { l.f.Close() }

// next returns the next record and its line (newline included); ok false at the end.
func (l *lineReader) next() (rec record.Record, line []byte, ok bool, err error) {
	for {
		// Bounded: a longer line is refused by its length, never held whole.
		b, rerr := lineio.ReadOrStop(l.br, record.MaxLine)
		if errors.Is(rerr, lineio.ErrTooLong) {
			return rec, nil, false, bad(fmt.Errorf("%s: line %d: record longer than %d MiB", l.path, l.n+1, record.MaxLine>>20))
		}
		if rerr != nil && rerr != io.EOF {
			return rec, nil, false, rerr
		}
		if len(b) == 0 && rerr == io.EOF {
			return rec, nil, false, nil
		}
		l.n++
		t := bytes.TrimSpace(b)
		if len(t) == 0 {
			if rerr == io.EOF {
				return rec, nil, false, nil
			}
			continue
		}
		complete := rerr == nil // a last line without its newline may be torn
		if derr := record.Decode(t, &rec); derr != nil {
			if !complete {
				return rec, nil, false, nil // a torn last line: the shard's analysis skipped it too
			}
			return rec, nil, false, bad(fmt.Errorf("%s: line %d: %v", l.path, l.n, derr))
		}
		return rec, append(b, '\n'), true, nil
	}
}

type lineItem struct {
	key  time.Time
	src  int
	rec  record.Record
	line []byte
}

type lineHeap []lineItem

func (h lineHeap) Len() int { return len(h) }
func (h lineHeap) Less(i, j int) bool {
	if !h[i].key.Equal(h[j].key) {
		return h[i].key.Before(h[j].key)
	}
	return h[i].src < h[j].src
}
func (h lineHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *lineHeap) Push(x any)   { *h = append(*h, x.(lineItem)) }
func (h *lineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func pushNext(h *lineHeap, lr *lineReader, src int) error {
	rec, line, ok, err := lr.next()
	if err != nil || !ok {
		return err
	}
	key := rec.DoneAt
	if key.IsZero() {
		key = rec.ScheduledAt // a task never sent ended when it was cut
	}
	heap.Push(h, lineItem{key: key, src: src, rec: rec, line: line})
	return nil
}

// bitset marks seqs seen.
type bitset struct{ w []uint64 }

func (b *bitset) testAndSet(i int) bool {
	k := i / 64
	if k >= len(b.w) {
		b.w = slices.Grow(b.w, k+1-len(b.w))[:k+1]
	}
	m := uint64(1) << (i % 64)
	was := b.w[k]&m != 0
	b.w[k] |= m
	return was
}

// copyInto writes out's file name as the concatenation of the same file of each of from,
// each opened only when it is a regular file.
func copyInto(out *Dir, name string, from []*Dir) error {
	dst, err := out.Append(name)
	if err != nil {
		return err
	}
	for _, d := range from {
		in, err := d.OpenFile(name)
		if err != nil {
			dst.Close()
			return bad(err)
		}
		_, err = io.Copy(dst, in)
		in.Close()
		if err != nil {
			dst.Close()
			return err
		}
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
