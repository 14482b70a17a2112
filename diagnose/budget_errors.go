package diagnose

import (
	"fmt"
	"sort"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// Tasks lost to errors are in the budget as their own component: the time from send to
// the error, per error class, charged to the layer that owns the class (errorClassLayer,
// the error rules' own attribution). A shed (HTTP 429/503) is the engine's admission
// control only when the engine was full: with engine /metrics showing no request waiting
// and a free sequence slot for the whole run, the engine never refused anything, so the
// requests were shed before it (a gateway, a proxy, a rate limiter in front): the
// application's serving path. Without engine /metrics the two cannot be told apart, and the
// component says which source would.
//
// A lost task counts in the excess as one task over its bounds, weighted as the mean
// excess of the tasks that completed over their bounds (a lost task is at least as bad for
// the user as a late one; the weight keeps lost and late tasks on one scale, task for
// task), or 1 ms each when no completed task is over (then only errors are in the excess,
// and its shares do not depend on the weight). A timeout is a late task whose end the
// client did not wait for: it is split as the completed late tasks are (their shares stand),
// and stays unattributed when none completed late.

// lostContext is the budget's error class for a task that exceeded its sequence's context
// (stats.ContextExhausted), which the context-exhausted rule charges to memory.
const lostContext = "context_exhausted"

// layerOf is the layer that owns one error class, and why.
func (c engineRoom) layerOf(class string) (evidence.Layer, string) {
	if class == lostContext {
		return contextExhausted.layer, "the sequence's context is smaller than the prompt and output (" + contextExhausted.id + ")"
	}
	if class == record.ErrTimeout {
		return "", "a late task the client stopped waiting for: its excess is split as the completed late tasks' is"
	}
	spec, ok := errorClassLayer[class]
	if !ok {
		return "", "no rule attributes error class " + class
	}
	if class != record.ErrOverloaded {
		return spec.layer, spec.what
	}
	switch {
	case !c.known:
		return spec.layer, spec.what + "; engine /metrics (requests waiting and running) would tell the engine's admission from a gateway's"
	case c.shedOutside():
		return evidence.LayerApplication, "shed before the engine (a gateway or proxy): " + c.why
	}
	return spec.layer, spec.what + ": " + c.why
}

// lostTask is one task lost to an error: its class and the layer that owns it.
type lostTask struct {
	class string
	layer evidence.Layer
}

// chargeLost adds the lost tasks to the excess buckets (see above).
func chargeLost(lost []lostTask, excess map[string]float64, layerOf map[string]evidence.Layer, total *float64, nOver int) {
	w := 1.0
	if nOver > 0 && *total > 0 {
		w = *total / float64(nOver)
	}
	late := map[string]float64{}
	lateTotal := *total
	for k, m := range excess {
		late[k] = m
	}
	for _, l := range lost {
		if l.layer == "" && l.class == record.ErrTimeout && lateTotal > 0 {
			for k, m := range late {
				excess[k] += w * m / lateTotal
			}
			*total += w
			continue
		}
		key := string(l.layer)
		if key == "" {
			key = "lost to " + l.class + " (no layer owns it)"
		}
		layerOf[key] = l.layer
		excess[key] += w
		*total += w
	}
}

// errAcc gathers one task type's lost tasks per error class.
type errAcc struct {
	n     int
	ms    map[string]float64 // class → summed time to the error
	count map[string]int
}

// addError records one lost task: its time from send to the error.
func (a *errAcc) addError(r *record.Record) string {
	class := stats.ErrorClassOf(r)
	if stats.ContextExhausted(r) {
		class = lostContext
	}
	if a.ms == nil {
		a.ms, a.count = map[string]float64{}, map[string]int{}
	}
	a.n++
	end := r.DoneAt
	if !r.HeadersAt.IsZero() && (end.IsZero() || r.HTTPStatus >= 400) {
		end = r.HeadersAt
	}
	if !r.SentAt.IsZero() && end.After(r.SentAt) {
		a.ms[class] += figure.Ms(end.Sub(r.SentAt))
	}
	a.count[class]++
	return class
}

// items are the type's error components, one per class, in class order.
func (a *errAcc) items(c engineRoom) []evidence.BudgetItem {
	classes := make([]string, 0, len(a.count))
	for k := range a.count {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	var out []evidence.BudgetItem
	for _, k := range classes {
		l, why := c.layerOf(k)
		out = append(out, evidence.BudgetItem{Name: fmt.Sprintf("lost to %s (%d tasks)", k, a.count[k]), Part: evidence.PartErrors, Layer: l,
			Ms: figure.Sig3(a.ms[k] / float64(a.count[k])), Source: "client: send → error response; " + why})
	}
	return out
}

// refusalsInQueue counts the warm tasks refused as overloaded and, of them, those whose
// last attempt fell in a scrape interval where the engine's queue held a request (its
// waiting series above 0 at either end). ok is false without that series.
func refusalsInQueue(ev *evidence.Evidence, recs []record.Record) (refused, inQueue int, ok bool) {
	ws, ok := activeWindows(ev, []seriesCond{{evidence.SigWaitingMax, ">", 0}})
	if !ok {
		return 0, 0, false
	}
	for i := range recs {
		r := &recs[i]
		if r.Phase != record.PhaseWarm || !r.Failed() || stats.ErrorClassOf(r) != record.ErrOverloaded || r.SentAt.IsZero() {
			continue
		}
		refused++
		end := r.DoneAt
		if end.Before(r.SentAt) {
			end = r.SentAt
		}
		if overlaps(interval{relTime(ev.Run.StartedAt, r.SentAt), relTime(ev.Run.StartedAt, end)}, ws) {
			inQueue++
		}
	}
	return refused, inQueue, true
}
