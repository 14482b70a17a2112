package diagnose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// minHOLSamples: each side of a half's (or the cold phase's) head-of-line ratio needs this
// many short prompts.
const minHOLSamples = 5

// warmWindow is the warm phase in seconds since start (from the run's phases, else from the
// warm records' schedule) and when its last task was scheduled: the phase runs on past it
// while its tasks drain.
func warmWindow(ev *evidence.Evidence, recs []record.Record) (w interval, arrivalsEnd float64, ok bool) {
	last := func() float64 {
		x := math.Inf(-1)
		for i := range recs {
			if recs[i].Phase == record.PhaseWarm {
				x = math.Max(x, relTime(ev.Run.StartedAt, recs[i].ScheduledAt))
			}
		}
		return x
	}
	for _, p := range ev.Run.Phases {
		if p.Name == evidence.PhaseWarm && p.EndS > p.StartS {
			w = interval{p.StartS, p.EndS}
			arrivalsEnd = p.ArrivalsEndS
			if arrivalsEnd <= p.StartS {
				arrivalsEnd = last() // evidence written without it
			}
			if !(arrivalsEnd > p.StartS && arrivalsEnd <= p.EndS) {
				arrivalsEnd = p.EndS
			}
			return w, arrivalsEnd, true
		}
	}
	w = interval{math.Inf(1), math.Inf(-1)}
	for i := range recs {
		if recs[i].Phase != record.PhaseWarm {
			continue
		}
		t := relTime(ev.Run.StartedAt, recs[i].ScheduledAt)
		w.a, w.b = math.Min(w.a, t), math.Max(w.b, t)
	}
	return w, w.b, w.b > w.a
}

// impactSpec says which rejected tasks a finding can explain: those rejected on one of
// dims, in phase (default warm), that overlap a time when any seriesCond in when held
// (when empty: the whole phase, for a symptom of configuration rather than of load), or,
// for head-of-line blocking, short prompts that waited while a long one was prefilled.
type impactSpec struct {
	dims  []string
	phase string
	when  []seriesCond
	hol   bool
	// match, when set, decides alone which rejected tasks the finding explains (error
	// classes, lost context); matchWhat names them for the basis.
	match     func(*record.Record) bool
	matchWhat string
}

// seriesCond is a condition on a time series; the series is found by signal name via
// seriesAliases. A sample at t covers the interval since the previous sample.
type seriesCond struct {
	sig string
	op  string
	thr float64
}

// interval is [a, b] in seconds since the run start.
type interval struct{ a, b float64 }

// Tasks is what the diagnosis reads of a run's task records. A run that fits in memory
// gives them all (All; Diagnose's recs). A longer one (stats.Stream past its bound) gives a
// seeded uniform sample per phase (Sampled), with what the sample cannot say exactly:
// per-phase counts, stage 1 of the halves and the cold phase over every task (Views, with
// joins against every task for their cross-task signals: JoinSets), and passes over every
// task for the acceptance impact and the rejection counts of the verdict.
type Tasks struct {
	All     []record.Record
	Sampled bool
	// Total and NonCancelled (per phase) count every task (Sampled only).
	Total        int
	NonCancelled map[string]int
	// Joins are stats.BuildJoins over JoinSets (Sampled only).
	Joins map[string]*stats.Join
	// Views are stage 1 over the parts of the run the diagnosis reads on their own (ViewSets:
	// the cold phase, each half of the warm window), from stage 1's accumulator (stats.ViewAcc
	// over every task, or stats.ViewsOf over All). nil: DiagnoseTasks has stats compute them
	// from All (and Joins), as a caller that holds only records gives them.
	Views map[string]stats.View
	// EachRejected streams every task record that was not accepted (Sampled only): the
	// impact and verdict counts need no others, and a reader may skip decoding them.
	EachRejected func(func(*record.Record) error) error
	// Spans are the engine's own per-request timings (OTLP spans joined to All's records and
	// their calls): the time budget splits each task by its own, not by run-level means.
	Spans map[*record.Record]record.EngineSpan
}

// present reports whether any record was given (nil degrades impact, reproduction and
// rollback to not met).
func (t Tasks) present() bool { return t.All != nil || t.Sampled }

// join returns the named join when the records are sampled.
func (t Tasks) join(name string) *stats.Join {
	if !t.Sampled {
		return nil
	}
	return t.Joins[name]
}

// Join set names.
const (
	joinCold   = "diagnose.cold"
	joinFirst  = "diagnose.first-half"
	joinSecond = "diagnose.second-half"
	joinImpact = "diagnose.impact-warm"
)

// JoinSets are the sets whose cross-task signals the diagnosis reads over a sample: the
// cold phase and each half of the warm window (stall alignment, head-of-line blocking: the
// sets of ViewSets, under the same names), and the warm phase's short prompts against every
// long one (head-of-line impact). They must be those reproduce and coldSignals draw: phases
// and start are the run's.
func JoinSets(phases []evidence.Phase, start time.Time) []stats.JoinSet {
	var sets []stats.JoinSet
	for i, p := range ViewSets(phases, start) {
		sets = append(sets, stats.JoinSet{Name: p.Name, In: p.In})
		if i == 0 {
			sets = append(sets, stats.JoinSet{Name: joinImpact, In: func(r *record.Record) bool { return r.Phase == record.PhaseWarm },
				Waiting: func(*record.Record) bool { return true }})
		}
	}
	return sets
}

// ViewSets are the parts of a run whose stage 1 the diagnosis reads on their own (Views):
// the cold phase, for rules that compare it with the warm one, and each half of the warm
// window, for reproduction. phases and start are the run's.
func ViewSets(phases []evidence.Phase, start time.Time) []stats.ViewSet {
	return viewSets(&evidence.Evidence{Run: evidence.Run{Phases: phases, StartedAt: start}}, nil)
}

// viewSets are ViewSets for ev's run, the warm window found as reproduce finds it (recs:
// the run's records, for evidence whose phases lack it).
func viewSets(ev *evidence.Evidence, recs []record.Record) []stats.ViewSet {
	sets := []stats.ViewSet{{Name: joinCold, Phase: record.PhaseCold, In: func(r *record.Record) bool { return r.Phase == record.PhaseCold }, MinHOLSamples: minHOLSamples}}
	start := ev.Run.StartedAt
	if w, arrivalsEnd, ok := warmWindow(ev, recs); ok {
		for _, h := range halves(w, arrivalsEnd) {
			h := h
			sets = append(sets, stats.ViewSet{Name: h.join, MinHOLSamples: minHOLSamples, In: func(r *record.Record) bool {
				t := relTime(start, r.ScheduledAt)
				return r.Phase == record.PhaseWarm && t >= h.w.a && t < h.w.b
			}})
		}
	}
	return sets
}

// withViews is t with its Views: as given, or, for a caller that holds only records, stage 1
// over each part of All (joined against every task through Joins when sampled).
func (t Tasks) withViews(ev *evidence.Evidence, o *Options) Tasks {
	if t.Views == nil && t.present() {
		var joins map[string]*stats.Join
		if t.Sampled {
			joins = t.Joins
		}
		st := o.Stage1
		if st.AllObjectives == nil && len(o.Objectives) > 0 {
			st.Objectives, st.AllObjectives = o.forTask, o.Objectives
		}
		t.Views = stats.ViewsOf(t.All, st, viewSets(ev, t.All), joins)
	}
	return t
}

// half is one half of the warm window.
type half struct {
	name, join string
	w          interval
}

// halves splits the warm window in two at the middle of its arrivals (w.a to arrivalsEnd),
// so each half holds half of the warm tasks' schedule; the second half runs on to the
// window's end (closed there), through the drain, which belongs to its tasks.
func halves(w interval, arrivalsEnd float64) []half {
	mid := (w.a + arrivalsEnd) / 2
	return []half{{"first half", joinFirst, interval{w.a, mid}}, {"second half", joinSecond, interval{mid, w.b + 1e-9}}}
}

// impactAcc counts one finding's acceptance impact task by task: the rejected tasks of the
// spec's phase and those coinciding with the symptom.
type impactAcc struct {
	sp    impactSpec
	phase string
	start time.Time
	ws    []interval
	timed bool
	hol   *stats.HOLIndex
	im    *evidence.Impact
}

// sampleNote says, in a rollback basis, that the bootstrap resampled a sample.
func (t Tasks) sampleNote() string {
	warm := 0
	for i := range t.All {
		if t.All[i].Phase == record.PhaseWarm && t.All[i].Status != record.StatusCancelled {
			warm++
		}
	}
	return fmt.Sprintf("; the run's %d warm tasks are more than held in memory: the bootstrap resamples a seeded uniform sample of %d of them, so the interval is that of the sample (wider, not narrower, than the run's)",
		t.NonCancelled[record.PhaseWarm], warm)
}

// withSampleNote appends the sample note to every trigger's basis and to why.
func (t Tasks) withSampleNote(ts []evidence.Trigger, why string) ([]evidence.Trigger, string) {
	if !t.Sampled {
		return ts, why
	}
	n := t.sampleNote()
	for i := range ts {
		ts[i].Basis += n
	}
	if why != "" && !strings.Contains(why, "too few") {
		why += n
	}
	return ts, why
}

// relTime converts an absolute time to seconds since the run start.
func relTime(start, t time.Time) float64 { return t.Sub(start).Seconds() }
