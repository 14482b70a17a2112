package diagnose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/stats"
)

// minHalfTasks: a half with fewer warm tasks than this cannot reproduce anything.
// Five tasks still carry hundreds of per-token ITLs; the series-derived values do not
// depend on the task count at all.
const minHalfTasks = 5

// rec is a latency as stage 1 records it, for quantiles (quantile.RecordedMs).
func rec(d time.Duration) float64 { return quantile.RecordedMs(d) }

// halfView is the view of the warm tasks scheduled in w (stage 1 over them, Tasks.Views
// under join) and of the series samples in w. Signals that cannot be re-read over a window
// (profiler traces, histogram quantiles) are carried over and not marked derived, so they
// never count as reproduction on their own.
func halfView(ev *evidence.Evidence, t Tasks, full *view, w interval, name, join string, o *Options) (*view, int) {
	h := &view{sig: map[string]evidence.Signal{}, stages: full.stages, derived: map[string]bool{}, half: name, engine: full.engine,
		config: full.config, context: full.context}
	for k, s := range full.sig {
		h.sig[k] = s
	}
	// Stage 1 of the half is the half's own: re-read or absent, never the whole run's.
	for n, s := range h.sig {
		if s.Stage == evidence.StageRequestTrace {
			delete(h.sig, n)
		}
	}
	client, tasks := clientSignals(t, join)
	for n, s := range client {
		s.Phase, s.Window = evidence.PhaseWarm, &evidence.Window{StartS: w.a, EndS: w.b}
		h.sig[n] = s
		h.derived[n] = true
	}
	// The objectives, judged again on the half's own tasks.
	var res *stats.Result
	if v, ok := t.Views[join]; ok {
		res = v.Result
	}
	h.objectives = halfObjectives(res, client, o)
	for _, r := range h.objectives {
		if r.ValueMs != nil {
			h.derived[objectiveItem(r).Signal] = true
		}
	}
	for n, s := range full.sig {
		if s.Stage == evidence.StageRequestTrace {
			continue
		}
		ser := findSeries(ev, n)
		if ser == nil {
			continue
		}
		var sum, mx float64
		cnt := 0
		mx = math.Inf(-1)
		for i, t := range ser.T {
			if t <= w.a || t > w.b || i >= len(ser.V) || math.IsNaN(ser.V[i]) {
				continue
			}
			sum += ser.V[i]
			mx = math.Max(mx, ser.V[i])
			cnt++
		}
		if cnt == 0 {
			delete(h.sig, n)
			continue
		}
		if strings.HasSuffix(n, "_max") {
			s.Value = mx
		} else {
			s.Value = sum / float64(cnt)
		}
		s.Window = &evidence.Window{StartS: w.a, EndS: w.b}
		h.sig[n] = s
		h.derived[n] = true
	}
	return h, tasks
}

// reproduce re-runs a rule on each half of the warm window. It is met when the rule fires
// in both halves on at least one signal read over the half (view.rederived) that holds.
func reproduce(ev *evidence.Evidence, t Tasks, full *view, r *rule, o *Options) evidence.StopCondition {
	w, arrivalsEnd, ok := warmWindow(ev, t.All)
	if !ok {
		return evidence.StopCondition{Reason: "no warm window to split"}
	}
	if r.once {
		return evidence.StopCondition{Reason: "a cold start happens once per server start: reproduce it with a second run against a fresh server"}
	}
	var notes []string
	for _, part := range halves(w, arrivalsEnd) {
		hv, n := halfView(ev, t, full, part.w, part.name, part.join, o)
		if n < minHalfTasks {
			return evidence.StopCondition{Reason: fmt.Sprintf("%s of the warm window has %d tasks (< %d)", part.name, n, minHalfTasks)}
		}
		hit := r.eval(hv, o)
		if hit == nil {
			return evidence.StopCondition{Reason: fmt.Sprintf("symptom absent in the %s (%.0f–%.0f s)", part.name, part.w.a, math.Min(part.w.b, w.b))}
		}
		var used []string
		for _, m := range hit.items {
			if m.holds && !m.ctx && hv.rederived(m) {
				used = append(used, fmt.Sprintf("%s %.3g", m.item.Signal, m.item.Value))
			}
		}
		if len(used) == 0 {
			return evidence.StopCondition{Reason: "the deciding evidence covers one window only (e.g. a single trace): capture a second window or run"}
		}
		notes = append(notes, fmt.Sprintf("%s (%.0f–%.0f s): %s", part.name, part.w.a, math.Min(part.w.b, w.b), strings.Join(used, ", ")))
	}
	return evidence.StopCondition{Met: true, Reason: "holds in both halves of the warm window; " + strings.Join(notes, "; ")}
}
