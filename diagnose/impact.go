package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// Dimensions a rejection can be about, matched in the record's reasons.
const (
	dimTTFT  = "ttft"
	dimITL   = "itl"
	dimTPOT  = "tpot"
	dimE2E   = "e2e"
	dimError = "error"
)

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

// seriesAliases maps a headline signal to the names its time series may carry: the
// signal's own name, and the name without its aggregate suffix.
func seriesAliases(sig string) []string {
	out := []string{sig}
	for _, suf := range []string{"_mean", "_max", "_p50", "_p99"} {
		if strings.HasSuffix(sig, suf) {
			out = append(out, strings.TrimSuffix(sig, suf))
		}
	}
	return out
}

// findSeries returns the unlabelled series for a signal, or the first labelled one.
func findSeries(ev *evidence.Evidence, sig string) *evidence.Series {
	var labelled *evidence.Series
	for _, name := range seriesAliases(sig) {
		for si := range ev.Stages {
			for i := range ev.Stages[si].Series {
				s := &ev.Stages[si].Series[i]
				if s.Name != name || len(s.T) == 0 {
					continue
				}
				if len(s.Labels) == 0 {
					return s
				}
				if labelled == nil {
					labelled = s
				}
			}
		}
	}
	return labelled
}

// interval is [a, b] in seconds since the run start.
type interval struct{ a, b float64 }

// activeWindows returns the intervals during which any condition held (KV full or
// preempting both mark the symptom), or ok=false when no condition's series is present.
func activeWindows(ev *evidence.Evidence, conds []seriesCond) (ws []interval, ok bool) {
	found := false
	for _, c := range conds {
		s := findSeries(ev, c.sig)
		if s == nil {
			continue
		}
		found = true
		for i := range s.T {
			if i >= len(s.V) || !compare(bucketExtreme(s, i, c.op), c.op, c.thr) {
				continue
			}
			a := s.T[i]
			if i > 0 {
				a = s.T[i-1]
			}
			ws = append(ws, interval{a, s.T[i]})
		}
	}
	return ws, found
}

// bucketExtreme is the value of point i a condition is judged on: for a downsampled series
// (a bucket of samples with Min and Max), the extreme that meets the condition if any sample
// did, so a brief spike still marks its interval.
func bucketExtreme(s *evidence.Series, i int, op string) float64 {
	switch {
	case (op == ">" || op == ">=") && i < len(s.Max):
		return s.Max[i]
	case (op == "<" || op == "<=") && i < len(s.Min):
		return s.Min[i]
	}
	return s.V[i]
}

// recSpan is the record's life in seconds since start: scheduled → done (or last event).
func recSpan(r *record.Record, start time.Time) interval {
	end := r.DoneAt
	if end.IsZero() {
		end = r.LastTokenAt
	}
	if end.IsZero() {
		end = r.ScheduledAt
	}
	return interval{relTime(start, r.ScheduledAt), relTime(start, end)}
}

func overlaps(x interval, ws []interval) bool {
	for _, w := range ws {
		if x.a <= w.b && w.a <= x.b {
			return true
		}
	}
	return false
}

// rejectDims classifies why a task was not accepted.
func rejectDims(r *record.Record) map[string]bool {
	d := map[string]bool{}
	if r.Failed() {
		d[dimError] = true
	}
	for _, why := range r.Reasons {
		w := strings.ToLower(why)
		// The reasons acceptance writes: "slo ttft max 2s", "slo itl p99" (a percentile's,
		// from other tools' records); a check's own name ("check title") is no dimension.
		if m, ok := strings.CutPrefix(w, "slo "); ok {
			for _, k := range []string{dimTTFT, dimITL, dimTPOT, dimE2E} {
				if strings.HasPrefix(m, k+" ") || m == k {
					d[k] = true
				}
			}
		}
		if strings.HasPrefix(w, "error") || strings.Contains(w, "timeout") {
			d[dimError] = true
		}
	}
	if r.Status == record.StatusTimeout {
		d[dimTimeout] = true // a wait too long for the contract: latency findings explain it
	}
	return d
}

// rejected reports whether a record counts as a rejected task (cancelled tasks are the
// run stopping, not the system refusing).
func rejected(r *record.Record) bool { return !r.Accepted && r.Status != record.StatusCancelled }

// newImpactAcc prepares the counting of one spec's impact over t's tasks: the symptom's
// windows, and for head-of-line blocking the index of long prompts' waits (from every task:
// t's join when t is sampled).
func newImpactAcc(ev *evidence.Evidence, t Tasks, sp impactSpec) *impactAcc {
	phase := sp.phase
	if phase == "" {
		phase = record.PhaseWarm
	}
	a := &impactAcc{sp: sp, phase: phase, start: ev.Run.StartedAt, im: &evidence.Impact{ByTaskType: map[string]evidence.TaskImpact{}}}
	basis := []string{fmt.Sprintf("%s-phase tasks rejected on %s", phase, strings.Join(sp.dims, "/"))}
	switch {
	case sp.match != nil:
		basis = []string{fmt.Sprintf("%s-phase %s", phase, sp.matchWhat)}
	case sp.hol:
		basis = append(basis, "short prompts whose wait for a first token overlapped a long prompt's prefill")
	case len(sp.when) > 0:
		var ok bool
		a.ws, ok = activeWindows(ev, sp.when)
		if ok {
			a.timed = true
			var names []string
			for _, c := range sp.when {
				names = append(names, fmt.Sprintf("%s %s %g", c.sig, c.op, c.thr))
			}
			basis = append(basis, "overlapping a window where "+strings.Join(names, " or "))
		} else {
			basis = append(basis, "over the whole window (no time series to localise the symptom)")
		}
	default:
		basis = append(basis, "over the whole window (the symptom is a property of the configuration)")
	}
	if sp.hol {
		if j := t.join(joinImpact); j != nil && phase == record.PhaseWarm {
			a.hol = j.HOL()
		} else {
			// Short tasks of this phase; a long prompt of any phase can block them.
			var typed, all []*record.Record
			for i := range t.All {
				all = append(all, &t.All[i])
				if t.All[i].Phase == phase {
					typed = append(typed, &t.All[i])
				}
			}
			a.hol = stats.NewHOLIndex(typed, all)
		}
	}
	a.im.Basis = strings.Join(basis, ", ")
	return a
}

// add counts one task.
func (a *impactAcc) add(r *record.Record) {
	sp := a.sp
	if r.Phase != a.phase || !rejected(r) {
		return
	}
	im := a.im
	im.Rejected++
	ti := im.ByTaskType[r.Task]
	ti.Rejected++
	d := rejectDims(r)
	match := false
	for _, k := range sp.dims {
		if d[k] {
			match = true
		}
	}
	if sp.match != nil {
		match = sp.match(r)
	} else if match {
		switch {
		case sp.hol:
			match = a.hol.Blocked(r)
		case a.timed:
			match = overlaps(recSpan(r, a.start), a.ws)
		}
	}
	if match {
		im.Explained++
		ti.Explained++
	}
	im.ByTaskType[r.Task] = ti
}

// result is the impact counted.
func (a *impactAcc) result() *evidence.Impact {
	im := a.im
	if im.Rejected > 0 {
		im.Share = float64(im.Explained) / float64(im.Rejected)
	}
	if len(im.ByTaskType) == 0 {
		im.ByTaskType = nil
	}
	return im
}
