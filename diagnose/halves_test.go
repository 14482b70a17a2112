package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// TestHalvesSplitTheArrivals: the default pel demo schedules its 79 warm tasks from 5.7 s
// to 19.2 s and they drain until 33.4 s; every one is rejected under a steady KV thrash. The
// warm window's halves split the arrivals, so each half holds half of the tasks (39 and 40)
// and a symptom present throughout reproduces in both; halving the window up to its drained
// end puts the midpoint (19.5 s) after the last arrival and leaves the second half with no
// task.
func TestHalvesSplitTheArrivals(t *testing.T) {
	const n = 79
	first, last, end := 5.7, 19.2, 33.4
	rs := make([]record.Record, 0, n+5)
	for i := range 5 { // a cold phase before, as the demo runs one
		rs = append(rs, doneTask(i, record.PhaseCold, float64(i), 0.5, true))
	}
	for i := range n {
		at := first + (last-first)*float64(i)/float64(n-1)
		// The queue grows: the last task scheduled is the last to finish, at 33.4 s.
		took := 2 + (end-last-2)*float64(i)/float64(n-1)
		rs = append(rs, doneTask(5+i, record.PhaseWarm, at, took, false))
	}
	res := stats.Compute(rs, stats.Options{Start: t0})
	var warm evidence.Phase
	for _, p := range res.Phases {
		if p.Name == record.PhaseWarm {
			warm = p
		}
	}
	if warm.EndS < end-0.01 || warm.ArrivalsEndS < last-0.01 || warm.ArrivalsEndS > last+0.01 {
		t.Fatalf("warm phase %+v: want it to end at %.1f s with its last arrival at %.1f s", warm, end, last)
	}

	w, arrivalsEnd, ok := warmWindow(&evidence.Evidence{Run: evidence.Run{StartedAt: t0, Phases: res.Phases}}, nil)
	if !ok {
		t.Fatal("no warm window")
	}
	var counts []int
	for _, h := range halves(w, arrivalsEnd) {
		k := 0
		for i := range rs {
			at := relTime(t0, rs[i].ScheduledAt)
			if rs[i].Phase == record.PhaseWarm && at >= h.w.a && at < h.w.b {
				k++
			}
		}
		counts = append(counts, k)
	}
	if len(counts) != 2 || counts[0]+counts[1] != n || counts[0] < n/2-1 || counts[1] < n/2-1 {
		t.Fatalf("halves hold %v of %d warm tasks, want about half each", counts, n)
	}

	ev := build(sig{evidence.SigKVUsageMax, 1}, sig{evidence.SigKVUsageMean, 0.97}, sig{evidence.SigPreemptionRate, 2},
		sig{evidence.SigWaitingMean, 12}, sig{evidence.SigRunningMean, 40}, sig{evidence.SigAcceptanceRate, 0})
	ev.Run.Phases = res.Phases
	Diagnose(ev, rs, Options{})
	c := ev.StopConditions[evidence.StopReproduced]
	if !c.Met {
		t.Errorf("a steady KV thrash over every warm task not reproduced: %s", c.Reason)
	}
	if strings.Contains(c.Reason, "0 tasks") {
		t.Errorf("a half holds no task: %s", c.Reason)
	}
}

// doneTask is one completed task scheduled at s seconds after t0 that took took seconds
// (TTFT a tenth of it), with 16 one-token chunks; rejected for a TTFT bound unless accepted.
func doneTask(seq int, phase string, s, took float64, accepted bool) record.Record {
	at := t0.Add(time.Duration(s * float64(time.Second)))
	d := time.Duration(took * float64(time.Second))
	r := record.Record{Seq: seq, Task: "chat", Phase: phase, PromptTokens: 200, OutputTokens: 16, Attempts: 1,
		Status: record.StatusOK, Accepted: accepted, ScheduledAt: at, SentAt: at, FirstSentAt: at,
		HeadersAt: at.Add(d / 20), FirstTokenAt: at.Add(d / 10)}
	for k := range 16 {
		r.ChunkUS = append(r.ChunkUS, (d/10 + time.Duration(k)*(d*9/10)/15).Microseconds())
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.LastTokenAt = at.Add(d)
	r.DoneAt = r.LastTokenAt
	if !accepted {
		r.Reasons = []string{"slo ttft max"}
	}
	return r
}

// TestHalfViewIsStageOne: a half of the warm window reads its client figures from stage 1's
// accumulator over the half's tasks, figure for figure, and keeps none of the whole run's.
func TestHalfViewIsStageOne(t *testing.T) {
	rs := recs(120, func(i int, at float64, r *record.Record) {
		if at > 30 { // the second half is slower and half of it rejected
			r.FirstTokenAt = r.SentAt.Add(time.Duration(300+i) * time.Millisecond)
			if i%2 == 0 {
				r.Accepted, r.Reasons = false, []string{"slo ttft max"}
			}
		}
	})
	ev := build(sig{evidence.SigKVUsageMax, 1})
	stats.Compute(rs, stats.Options{Start: t0}).Apply(ev)
	full := newView(ev)
	o := &Options{Stage1: stats.Options{Start: t0, Objectives: func(string) []contract.Objective {
		return []contract.Objective{{Metric: contract.MetricTTFT, Limit: 250 * time.Millisecond}}
	}}}
	o.defaults()
	w, arrivalsEnd, _ := warmWindow(ev, rs)
	for _, h := range halves(w, arrivalsEnd) {
		hv, n := halfView(ev, Tasks{All: rs}.withViews(ev, o), full, h.w, h.name, h.join, o)
		var sub []record.Record
		for i := range rs {
			if at := relTime(t0, rs[i].ScheduledAt); at >= h.w.a && at < h.w.b {
				sub = append(sub, rs[i])
			}
		}
		if n != len(sub) || n < 50 {
			t.Fatalf("%s: %d tasks, want %d (about 60)", h.name, n, len(sub))
		}
		opt := o.Stage1
		opt.MinHOLSamples = minHOLSamples
		want := map[string]float64{}
		for _, s := range stats.Compute(sub, opt).Signals {
			if len(s.Labels) == 0 {
				want[s.Name] = s.Value
			}
		}
		for _, name := range []string{evidence.SigTTFTP99, evidence.SigAcceptanceRate, evidence.SigSLOMissRate, evidence.SigE2EP99} {
			if _, ok := want[name]; !ok {
				t.Fatalf("%s: stage 1 over the half gives no %s", h.name, name)
			}
		}
		for name, s := range hv.sig {
			if s.Stage != evidence.StageRequestTrace {
				continue
			}
			v, ok := want[name]
			if !ok || v != s.Value || !hv.derived[name] {
				t.Errorf("%s: %s = %v (derived %v), stage 1 over the half gives %v (%v)", h.name, name, s.Value, hv.derived[name], v, ok)
			}
			delete(want, name)
		}
		if len(want) > 0 {
			t.Errorf("%s: stage-1 signals missing from the half view: %v", h.name, want)
		}
	}
}
