package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// leadCounts accumulates, one task at a time, what the verdict says first when rejections
// were not a performance bound: errors (by class, with the most frequent message) or failed
// output checks (a sampled run's counts come from a pass over its rejected tasks, with n
// counted apart).
type leadCounts struct {
	n, rejectedN, errs, failed, checks int
	classes, checkNames                map[string]int
	msgs                               map[string]map[string]int
	// retried tasks (and their extra attempts), tasks denied a retry by the run's budget,
	// attempts and the attempts that succeeded
	retried, retries, denied, attempts, okAttempts int
}

func (lc *leadCounts) add(r *record.Record) {
	if r.Status == record.StatusCancelled || r.Phase == record.PhaseCold {
		return
	}
	lc.n++
	a := max(r.Attempts, 1)
	lc.attempts += a
	if r.Attempts > 1 {
		lc.retried++
		lc.retries += r.Attempts - 1
	}
	if !r.Failed() {
		lc.okAttempts++ // a task ends at its first successful attempt
	}
	lc.addRejected(r)
}

// addRejected counts a task of the verdict's phases (not cancelled, not cold) unless it
// was accepted, without counting it in n.
func (lc *leadCounts) addRejected(r *record.Record) {
	if r.Status == record.StatusCancelled || r.Phase == record.PhaseCold || r.Accepted {
		return
	}
	if lc.classes == nil {
		lc.classes, lc.checkNames, lc.msgs = map[string]int{}, map[string]int{}, map[string]map[string]int{}
	}
	lc.rejectedN++
	if r.HasFlag(record.FlagRetryDenied) {
		lc.denied++ // a task denied a retry failed: it is among the rejected, sampled or not
	}
	switch {
	case r.Failed() || stats.ContextExhausted(r):
		lc.errs++
		if r.Failed() {
			lc.failed++
		}
		c := stats.ErrorClassOf(r)
		if stats.ContextExhausted(r) {
			c = "context exhausted"
		}
		lc.classes[c]++
		if lc.msgs[c] == nil {
			lc.msgs[c] = map[string]int{}
		}
		msg := r.Error
		if msg == "" && len(r.Reasons) > 0 {
			msg = r.Reasons[len(r.Reasons)-1]
		}
		// At most maxLeadMessages distinct messages per class: servers repeat theirs, and a
		// run of any length holds this much.
		if _, ok := lc.msgs[c][msg]; ok || len(lc.msgs[c]) < maxLeadMessages {
			lc.msgs[c][msg]++
		}
	default:
		isCheck := false
		for _, why := range r.Reasons {
			if strings.HasPrefix(why, "check ") {
				lc.checkNames[why]++
				isCheck = true
			}
		}
		if isCheck && !sloRejected(r) {
			lc.checks++
		}
	}
}

const maxLeadMessages = 1024

// sloRejected reports whether a completed task was rejected for an SLO.
func sloRejected(r *record.Record) bool {
	for _, why := range r.Reasons {
		if strings.Contains(strings.ToLower(why), "slo") {
			return true
		}
	}
	return false
}

// Dimensions a rejection can be about, matched in the record's reasons.
const (
	dimTTFT  = "ttft"
	dimITL   = "itl"
	dimTPOT  = "tpot"
	dimE2E   = "e2e"
	dimError = "error"
)

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

// dimTimeout marks a task that timed out: latency findings that explain waiting explain it.
const dimTimeout = "timeout"

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
