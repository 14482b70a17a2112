package compare

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// maxPhases is the most distinct phases a run may hold: pel writes three (cold, warm,
// canary); a file with more is not a run pel wrote, and each phase holds its own sides.
const maxPhases = 8

// summary is what a comparison reads of one run, accumulated record by record in memory
// bounded whatever the run's length: per phase, the sides the statistics resample (the
// whole phase, and each of the contract's task types with bounds of its own), and the
// figures the preconditions compare.
type summary struct {
	phases  map[string]*phaseSum
	order   []string        // the phases, in the order their first task was read
	first   time.Time       // earliest scheduled_at
	prompts distinct        // prompt hashes, every phase
	taskSet map[string]bool // the contract's task types with objectives of their own
	// scoped are the metrics some task type replaces with bounds of its own, each with the
	// task types that keep the global bounds of it (the global objectives' tasks).
	scoped map[contract.Metric]map[string]bool
	budget pools
}

// phaseSum is one phase of a run.
type phaseSum struct {
	all    *sideAcc
	byTask map[string]*sideAcc // the contract's task types with bounds of their own
	// global holds, for each scoped metric, the tasks of the types its global objectives
	// govern.
	global map[contract.Metric]*sideAcc
	// prompts are the phase's prompt hashes; cached and prompt the completed tasks' cached
	// and prompt tokens; usageCache whether any task reported cached tokens.
	prompts        distinct
	cached, prompt float64
	usageCache     bool
	// tokN completed tasks say where their token counts came from, tokEst of them estimated.
	tokN, tokEst int
	lag          *quantile.Hist // schedule lag, as stage 1 records it
}

func newSummary(c *contract.Contract) *summary {
	s := &summary{phases: map[string]*phaseSum{}, taskSet: map[string]bool{}, scoped: map[contract.Metric]map[string]bool{}}
	if c == nil {
		return s
	}
	for _, ob := range c.Objectives() {
		if ob.Task != "" {
			s.taskSet[ob.Task] = true
		}
	}
	for m := range scopedMetrics(c) {
		keep := map[string]bool{}
		for _, t := range c.Tasks {
			if c.Governs(contract.Objective{Metric: m}, t.Name) {
				keep[t.Name] = true
			}
		}
		s.scoped[m] = keep
	}
	return s
}

// summarize reduces records held in memory.
func summarize(c *contract.Contract, recs []record.Record) (*summary, error) {
	s := newSummary(c)
	for i := range recs {
		if err := s.add(&recs[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *summary) add(r *record.Record) error {
	ps := s.phases[r.Phase]
	if ps == nil {
		if len(s.phases) == maxPhases {
			return fmt.Errorf("task %d: phase %.40q is one more than the %d distinct phases a run holds (pel writes cold, warm and canary)", r.Seq, r.Phase, maxPhases)
		}
		ps = &phaseSum{all: s.budget.add(newSideAcc(true)), byTask: map[string]*sideAcc{}, global: map[contract.Metric]*sideAcc{}, lag: quantile.NewHist()}
		s.phases[r.Phase] = ps
		s.order = append(s.order, r.Phase)
	}
	if s.first.IsZero() || r.ScheduledAt.Before(s.first) {
		s.first = r.ScheduledAt
	}
	ps.all.add(r)
	if s.taskSet[r.Task] {
		t := ps.byTask[r.Task]
		if t == nil {
			t = s.budget.add(newSideAcc(false))
			ps.byTask[r.Task] = t
		}
		t.add(r)
	}
	// In metric order: the sides join the pool's budget in the order they are made, and
	// which side folds first when it is spent must not depend on a map's order.
	for _, m := range contract.Metrics {
		keep, ok := s.scoped[m]
		if !ok || !keep[r.Task] {
			continue
		}
		g := ps.global[m]
		if g == nil {
			g = s.budget.add(newSideAcc(false))
			ps.global[m] = g
		}
		g.add(r)
	}
	s.budget.check()
	if h := r.PromptHash; h != "" {
		s.prompts.add(h)
		ps.prompts.add(h)
	}
	if r.CachedPromptTokens > 0 {
		ps.usageCache = true
	}
	if r.OK() {
		ps.cached += float64(r.CachedPromptTokens)
		ps.prompt += float64(r.PromptTokens)
		if r.TokenSource != "" {
			ps.tokN++
			if r.TokenSource != record.TokensUsage {
				ps.tokEst++
			}
		}
	}
	if d, ok := r.ScheduleLag(); ok {
		ps.lag.AddUS(quantile.ClampUS(d))
	}
	return nil
}

// side is the phase's side (empty when the run has none of it).
func (ps *phaseSum) side(costPerHour float64) *side {
	if ps == nil {
		return newSideAcc(true).side(costPerHour)
	}
	return ps.all.side(costPerHour)
}

// taskSide is one task type's side in the phase (empty when it has none).
func (ps *phaseSum) taskSide(task string) *side {
	if ps == nil || ps.byTask[task] == nil {
		return newSideAcc(false).side(0)
	}
	return ps.byTask[task].side(0)
}

// lagMs is the q-quantile of the phase's schedule lag, as recorded (quantile.RecordedMs).
func (ps *phaseSum) lagMs(q float64) float64 {
	us, _ := ps.lag.QuantileUS(q)
	return float64(us) / 1000
}

// maxDistinct is the most prompt hashes a distinct set holds.
const maxDistinct = 1 << 14

// distinct is a set of strings in bounded memory: exact up to maxDistinct members, then a
// uniform sample of them by hash (adaptive distinct sampling: a string is kept when the top
// level bits of its 64-bit FNV-1a hash are zero, and level rises by one, halving the set,
// whenever it is full). Every set samples by the same rule, so two sets compared at the
// higher of their levels keep the same strings of their intersection, and each count read
// at level L estimates the true count divided by 2^L.
type distinct struct {
	level uint
	set   map[uint64]struct{}
}

func keep(h uint64, level uint) bool { return level == 0 || h>>(64-level) == 0 }

func (d *distinct) add(s string) {
	f := fnv.New64a()
	f.Write([]byte(s))
	h := f.Sum64()
	if !keep(h, d.level) {
		return
	}
	if d.set == nil {
		d.set = map[uint64]struct{}{}
	}
	d.set[h] = struct{}{}
	for len(d.set) > maxDistinct && d.level < 64 {
		d.level++
		for x := range d.set {
			if !keep(x, d.level) {
				delete(d.set, x)
			}
		}
	}
}

func (d *distinct) len() int { return len(d.set) }

// overlap counts the members of a (read at level l, at least both sets' levels) that b
// holds too, and the members of a at that level.
func overlap(a, b *distinct, l uint) (shared, of int) {
	for h := range a.set {
		if !keep(h, l) {
			continue
		}
		of++
		if _, ok := b.set[h]; ok {
			shared++
		}
	}
	return shared, of
}
