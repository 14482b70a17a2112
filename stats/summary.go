package stats

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// RequestSLO holds the per-request (max) bounds of one task type; zero means unbounded.
type RequestSLO struct {
	TTFT, ITL, TPOT, E2E time.Duration
}

// Options are the inputs the records do not carry.
type Options struct {
	// SLOFor returns the per-request bounds of a task type (for client.slo_miss_rate);
	// nil means none.
	SLOFor func(task string) RequestSLO
	// CostPerHourUSD is the price of the accelerators per hour (price × count); 0: unknown,
	// and cost per accepted task is null.
	CostPerHourUSD float64
	// Start is the run's start (times in signals and series are seconds since it); zero
	// means the earliest scheduled_at.
	Start time.Time
	// MinSamples below which a statistic carries a "few samples" note (default 20).
	MinSamples int
	// MinHOLSamples is the fewest short prompts on each side of the head-of-line ratio
	// (default 10).
	MinHOLSamples int
	// Join, when set, gives the headline set's stall alignment and head-of-line waits from
	// every task (Stream: the records given are a sample of a larger run).
	Join *Join
}

// Result is everything stage 1 contributes to the evidence.
type Result struct {
	Start, End time.Time
	Workload   evidence.Workload
	Phases     []evidence.Phase
	Signals    []evidence.Signal
	Series     []evidence.Series
	Notes      []Note
}

// Source is the signal source of every client-side figure.
const Source = "client"

// Compute summarises records. It never fails: an empty input gives an empty summary and a
// note.
func Compute(recs []record.Record, opt Options) *Result {
	if opt.MinSamples <= 0 {
		opt.MinSamples = 20
	}
	if opt.MinHOLSamples <= 0 {
		opt.MinHOLSamples = 10
	}
	res := &Result{Start: opt.Start}
	all := make([]*record.Record, len(recs))
	for i := range recs {
		all[i] = &recs[i]
	}
	if len(all) == 0 {
		res.Notes = append(res.Notes, Note{NoteNoRecords, "no task records: nothing was measured"})
		return res
	}
	if res.Start.IsZero() {
		res.Start = all[0].ScheduledAt
		for _, r := range all {
			if r.ScheduledAt.Before(res.Start) {
				res.Start = r.ScheduledAt
			}
		}
	}
	for _, r := range all {
		if r.DoneAt.After(res.End) {
			res.End = r.DoneAt
		}
	}
	byPhase := group(all, func(r *record.Record) string { return r.Phase })
	phaseNames := sortedKeys(byPhase)
	sort.SliceStable(phaseNames, func(i, j int) bool { return phaseRank(phaseNames[i]) < phaseRank(phaseNames[j]) })
	windows := map[string]window{}
	for _, p := range phaseNames {
		w := windowOf(byPhase[p])
		windows[p] = w
		res.Phases = append(res.Phases, w.phase(p, res.Start))
	}
	// Run phases are time ranges that never overlap, so that a server-side window (metrics,
	// traces) holds one phase: a phase ends where the next one's schedule begins, even though
	// its own slowest tasks may still be finishing (their records keep their phase label).
	clipPhases(res.Phases)
	head := byPhase[record.PhaseWarm]
	headPhase := record.PhaseWarm
	if len(head) == 0 {
		head, headPhase = all, ""
		res.Notes = append(res.Notes, Note{NoteNoWarm, "no warm-phase tasks: the headline summary covers all tasks"})
	}
	hw := windowOf(head)
	if headPhase != "" {
		hw = windows[headPhase]
	}
	w := &res.Workload
	w.Summary = Summarize(head, hw.dur(), opt.CostPerHourUSD)
	w.TokenSource = tokenSource(head)
	if est := countEstimated(head); est > 0 {
		res.Notes = append(res.Notes, Note{NoteTokenEstimate, fmt.Sprintf("%d completed tasks came without a usage block: their output tokens are counted as one per content event (token_source estimate), which undercounts multi-token chunks", est)})
	}
	w.ByPhase = map[string]evidence.Summary{}
	for _, p := range phaseNames {
		w.ByPhase[p] = Summarize(byPhase[p], windows[p].dur(), opt.CostPerHourUSD)
	}
	byTask := group(head, func(r *record.Record) string { return r.Task })
	w.ByTaskType = map[string]evidence.Summary{}
	for name, rs := range byTask {
		w.ByTaskType[name] = Summarize(rs, hw.dur(), opt.CostPerHourUSD)
	}
	w.ByBand = bandSummaries(head, hw.dur(), opt.CostPerHourUSD)
	w.Steps = stepTables(head, hw.dur())
	w.Histograms = histograms(head)
	if n := countSent(head); n < len(head) {
		res.Notes = append(res.Notes, Note{NoteNeverSent, fmt.Sprintf("%d tasks were never sent (cancelled while queued); they count in every rate but in no concurrency band", len(head)-n)})
	}
	if len(head) == 1 {
		res.Notes = append(res.Notes, Note{NoteOneTask, "one task: no rate (goodput, throughput, tokens/s) is computed over its own duration"})
	}
	completed := w.Summary.Requests - w.Summary.Failed - w.Summary.Cancelled
	if completed < opt.MinSamples {
		res.Notes = append(res.Notes, Note{NoteFewCompleted, fmt.Sprintf("only %d completed tasks in the headline phase (fewer than %d): percentiles are indicative only, not grounds for a verdict", completed, opt.MinSamples)})
	} else if completed < 100 {
		res.Notes = append(res.Notes, Note{NoteFewCompleted, fmt.Sprintf("%d completed tasks: p99 rests on the top one or two samples", completed)})
	}
	res.signals(all, byPhase, head, headPhase, hw, byTask, opt)
	res.Series = series(all, res.Start, res.End)
	return res
}

// Apply writes the result into ev: the workload block, the run phases, stage 1 (collected)
// with its signals, series and notes.
func (r *Result) Apply(ev *evidence.Evidence) {
	ev.Workload = r.Workload
	ev.Run.Phases = r.Phases
	if ev.Run.Phases == nil {
		ev.Run.Phases = []evidence.Phase{}
	}
	st := ev.Stage(evidence.StageRequestTrace)
	st.Status = evidence.StatusCollected
	st.Sources = []string{Source}
	st.Signals = append(st.Signals[:0], r.Signals...)
	st.Series = r.Series
	st.Notes = texts(r.Notes)
}

// window is the measured window of a set of tasks: first scheduled_at (start) to last
// done_at (end); lastArrival is the last scheduled_at.
type window struct{ start, end, lastArrival time.Time }

func (w window) dur() time.Duration { return w.end.Sub(w.start) }

// phase is the run phase name over w, in seconds since start.
func (w window) phase(name string, start time.Time) evidence.Phase {
	return evidence.Phase{Name: name, StartS: secs(w.start.Sub(start)), EndS: secs(w.end.Sub(start)), ArrivalsEndS: secs(w.lastArrival.Sub(start))}
}

// clipPhases ends each phase where the next one's schedule begins (see Compute).
func clipPhases(ps []evidence.Phase) {
	for i := 0; i+1 < len(ps); i++ {
		if next := ps[i+1].StartS; ps[i].EndS > next && next >= ps[i].StartS {
			ps[i].EndS = next
			ps[i].ArrivalsEndS = min(ps[i].ArrivalsEndS, next)
		}
	}
}

// windowOf is the measured window of a set of tasks: first scheduled_at to last done_at.
func windowOf(rs []*record.Record) window {
	var w window
	for i, r := range rs {
		if i == 0 || r.ScheduledAt.Before(w.start) {
			w.start = r.ScheduledAt
		}
		if r.ScheduledAt.After(w.lastArrival) {
			w.lastArrival = r.ScheduledAt
		}
		end := r.DoneAt
		if end.IsZero() {
			end = r.ScheduledAt
		}
		if end.After(w.end) {
			w.end = end
		}
	}
	return w
}

func secs(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e6 }

func phaseRank(p string) int {
	switch p {
	case record.PhaseCold:
		return 0
	case record.PhaseWarm:
		return 1
	case record.PhaseCanary:
		return 2
	}
	return 3
}

func group(rs []*record.Record, key func(*record.Record) string) map[string][]*record.Record {
	m := map[string][]*record.Record{}
	for _, r := range rs {
		k := key(r)
		m[k] = append(m[k], r)
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func countSent(rs []*record.Record) int {
	n := 0
	for _, r := range rs {
		if r.Attempts > 0 {
			n++
		}
	}
	return n
}

func countEstimated(rs []*record.Record) int {
	n := 0
	for _, r := range rs {
		if r.OK() && r.TokenSource == record.TokensEstimate {
			n++
		}
	}
	return n
}

func tokenSource(rs []*record.Record) string {
	src := ""
	for _, r := range rs {
		if !r.OK() || r.TokenSource == "" {
			continue
		}
		if src == "" {
			src = r.TokenSource
		} else if src != r.TokenSource {
			return "mixed"
		}
	}
	return src
}

// Summarize is the summary of one set of tasks measured over a window of length win
// (rates are per second of win). Every task is in the denominators; latency distributions
// are over completed (status ok) tasks, schedule lag and client queue over sent ones.
func Summarize(rs []*record.Record, win time.Duration, costPerHourUSD float64) evidence.Summary {
	a := newSetAcc()
	for _, r := range rs {
		a.add(r, nil)
	}
	return a.summary(win, costPerHourUSD)
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Band returns the concurrency band of a task: concurrency at send c = in-flight + 1
// (itself included), banded by powers of two: 1, 2-3, 4-7, 8-15, ...
func Band(inFlight int) (name string, lo, hi int) {
	c := max(inFlight+1, 1)
	k := bits.Len(uint(c)) - 1
	lo, hi = 1<<k, 1<<(k+1)-1
	if lo == hi {
		return fmt.Sprint(lo), lo, hi
	}
	return fmt.Sprintf("%d-%d", lo, hi), lo, hi
}

func bandSummaries(rs []*record.Record, win time.Duration, cost float64) []evidence.BandSummary {
	m := map[int][]*record.Record{}
	for _, r := range rs {
		if r.Attempts == 0 {
			continue // never sent: no concurrency at send
		}
		_, lo, _ := Band(r.InFlight)
		m[lo] = append(m[lo], r)
	}
	var los []int
	for lo := range m {
		los = append(los, lo)
	}
	sort.Ints(los)
	var out []evidence.BandSummary
	for _, lo := range los {
		name, lo, hi := Band(lo - 1)
		out = append(out, evidence.BandSummary{Band: name, Lo: lo, Hi: hi, Summary: Summarize(m[lo], win, cost)})
	}
	return out
}

func histograms(rs []*record.Record) map[string]evidence.Histogram {
	ttft, itl, e2e := NewDist(), NewDist(), NewDist()
	for _, r := range rs {
		if !r.OK() {
			continue
		}
		if v, ok := r.TTFT(); ok {
			ttft.Add(v)
		}
		r.ITLs(itl.Add)
		if v, ok := r.E2E(); ok {
			e2e.Add(v)
		}
	}
	out := map[string]evidence.Histogram{}
	for name, d := range map[string]*Dist{"ttft_ms": ttft, "itl_ms": itl, "e2e_ms": e2e} {
		if d.N() > 0 {
			out[name] = d.Histogram()
		}
	}
	return out
}

// MissedSLO lists the per-request bounds a completed task exceeded ("ttft", "itl", "tpot",
// "e2e"); ITL is judged on the task's worst token gap.
func MissedSLO(r *record.Record, s RequestSLO) []string {
	var out []string
	if v, ok := r.TTFT(); ok && s.TTFT > 0 && v > s.TTFT {
		out = append(out, "ttft")
	}
	if s.ITL > 0 {
		var worst time.Duration
		r.ITLs(func(d time.Duration) { worst = max(worst, d) })
		if worst > s.ITL {
			out = append(out, "itl")
		}
	}
	if v, ok := r.TPOT(); ok && s.TPOT > 0 && v > s.TPOT {
		out = append(out, "tpot")
	}
	if v, ok := r.E2E(); ok && s.E2E > 0 && v > s.E2E {
		out = append(out, "e2e")
	}
	return out
}

// joinNote joins non-empty notes.
func joinNote(parts ...string) string {
	var ps []string
	for _, p := range parts {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return strings.Join(ps, "; ")
}
