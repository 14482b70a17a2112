package stats

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Options are the inputs the records do not carry.
type Options struct {
	// Objectives returns the objectives a task type is held to (contract.ObjectivesFor):
	// its per-request bounds give client.slo_miss_rate; nil means none.
	Objectives func(task string) []contract.Objective
	// AllObjectives is every objective of the contract (contract.Objectives): each is
	// judged on the headline phase's tasks it governs (Workload.Objectives).
	AllObjectives []contract.Objective
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

// merge widens w to hold o, a window of at least one task (first: w holds none).
func (w *window) merge(o window, first bool) {
	if first || o.start.Before(w.start) {
		w.start = o.start
	}
	if o.end.After(w.end) {
		w.end = o.end
	}
	if o.lastArrival.After(w.lastArrival) {
		w.lastArrival = o.lastArrival
	}
}

// add widens w to hold task r (first: r is its first task).
func (w *window) add(r *record.Record, first bool) {
	end := r.DoneAt
	if end.IsZero() {
		end = r.ScheduledAt
	}
	if first || r.ScheduledAt.Before(w.start) {
		w.start = r.ScheduledAt
	}
	if r.ScheduledAt.After(w.lastArrival) {
		w.lastArrival = r.ScheduledAt
	}
	if end.After(w.end) {
		w.end = end
	}
}

// phase is the run phase name over w, in seconds since start.
func (w window) phase(name string, start time.Time) evidence.Phase {
	return evidence.Phase{Name: name, StartS: secs(w.start.Sub(start)), EndS: secs(w.end.Sub(start)), ArrivalsEndS: secs(w.lastArrival.Sub(start))}
}

// clipPhases ends each phase where the next one's schedule begins. Run phases are time
// ranges that never overlap, so that a server-side window (metrics, traces) holds one
// phase, even though a phase's own slowest tasks may still be finishing (their records keep
// their phase label).
func clipPhases(ps []evidence.Phase) {
	for i := 0; i+1 < len(ps); i++ {
		if next := ps[i+1].StartS; ps[i].EndS > next && next >= ps[i].StartS {
			ps[i].EndS = next
			ps[i].ArrivalsEndS = min(ps[i].ArrivalsEndS, next)
		}
	}
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

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
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

// MissedSLO lists the metrics of the per-request objectives in objs that a completed task
// exceeded ("ttft", "itl", "tpot", "e2e"; ITL judged on the task's worst token gap).
func MissedSLO(r *record.Record, objs []contract.Objective) []string {
	var out []string
	for _, o := range objs {
		if o.Exceeded(r) {
			out = append(out, string(o.Metric))
		}
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
