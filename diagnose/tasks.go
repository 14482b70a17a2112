package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// Tasks is what the diagnosis reads of a run's task records. A run that fits in memory
// gives them all (All; Diagnose's recs). A longer one (stats.Stream past its bound) gives a
// seeded uniform sample per phase (Sampled), with what the sample cannot say exactly:
// per-phase counts, joins against every task for the cross-task signals of the halves and
// the cold phase (JoinSets), and passes over every task for the acceptance impact and the
// rejection counts of the verdict.
type Tasks struct {
	All     []record.Record
	Sampled bool
	// Total and NonCancelled (per phase) count every task (Sampled only).
	Total        int
	NonCancelled map[string]int
	// Joins are stats.BuildJoins over JoinSets (Sampled only).
	Joins map[string]*stats.Join
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
// cold phase and each half of the warm window (stall alignment, head-of-line blocking),
// and the warm phase's short prompts against every long one (head-of-line impact). They
// must be those reproduce and coldSignals draw: phases and start are the run's.
func JoinSets(phases []evidence.Phase, start time.Time) []stats.JoinSet {
	sets := []stats.JoinSet{
		{Name: joinCold, In: func(r *record.Record) bool { return r.Phase == record.PhaseCold }},
		{Name: joinImpact, In: func(r *record.Record) bool { return r.Phase == record.PhaseWarm },
			Waiting: func(*record.Record) bool { return true }},
	}
	ev := &evidence.Evidence{Run: evidence.Run{Phases: phases, StartedAt: start}}
	if w, arrivalsEnd, ok := warmWindow(ev, nil); ok {
		for _, h := range halves(w, arrivalsEnd) {
			h := h
			sets = append(sets, stats.JoinSet{Name: h.join, In: func(r *record.Record) bool {
				t := relTime(start, r.ScheduledAt)
				return r.Phase == record.PhaseWarm && t >= h.w.a && t < h.w.b
			}})
		}
	}
	return sets
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

// impacts computes every spec's acceptance impact and the verdict's rejection counts in
// one pass over the rejected tasks (Sampled), or from All.
func (t Tasks) impacts(ev *evidence.Evidence, specs map[string]impactSpec) (map[string]*evidence.Impact, *leadCounts) {
	accs := map[string]*impactAcc{}
	for id, sp := range specs {
		accs[id] = newImpactAcc(ev, t, sp)
	}
	lc := &leadCounts{}
	if !t.Sampled {
		for i := range t.All {
			for _, a := range accs {
				a.add(&t.All[i])
			}
			lc.add(&t.All[i])
		}
	} else {
		for p, n := range t.NonCancelled {
			if p != record.PhaseCold {
				lc.n += n // the pass below sees only rejected tasks
			}
		}
		if t.EachRejected != nil {
			err := t.EachRejected(func(r *record.Record) error {
				if r.Accepted {
					return nil
				}
				for _, a := range accs {
					a.add(r)
				}
				lc.addRejected(r)
				return nil
			})
			if err != nil {
				for _, a := range accs {
					a.im.Basis += fmt.Sprintf("; counted over part of the run only (%v)", err)
				}
			}
		}
	}
	out := map[string]*evidence.Impact{}
	for id, a := range accs {
		out[id] = a.result()
	}
	return out, lc
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
