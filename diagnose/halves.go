package diagnose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// minHalfTasks: a half with fewer warm tasks than this cannot reproduce anything.
// Five tasks still carry hundreds of per-token ITLs; the series-derived values do not
// depend on the task count at all.
const minHalfTasks = 5

// minHOLSamples: each side of the head-of-line ratio needs this many short prompts.
const minHOLSamples = 5

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

// rec is a latency as stage 1 records it, for quantiles (quantile.RecordedMs).
func rec(d time.Duration) float64 { return quantile.RecordedMs(d) }

// clientSignals re-derives the stage-1 values a rule may read from a set of records of one
// phase.
func clientSignals(recs []*record.Record, j *stats.Join) map[string]float64 {
	var ttft, ttftSent, itl, e2e, hdr []float64
	var chunks, tokens, missed, completed, accepted int
	for _, r := range recs {
		if r.Status == record.StatusCancelled {
			continue
		}
		if r.Accepted {
			accepted++
		}
		if d, ok := r.TTFT(); ok {
			ttft = append(ttft, rec(d))
		}
		if d, ok := r.TTFTFromSent(); ok {
			ttftSent = append(ttftSent, rec(d))
		}
		if d, ok := r.E2E(); ok && r.OK() {
			e2e = append(e2e, rec(d))
		}
		if d, ok := r.TimeToHeaders(); ok {
			hdr = append(hdr, rec(d))
		}
		r.ITLs(func(d time.Duration) { itl = append(itl, rec(d)) })
		chunks += len(r.ChunkUS)
		for _, k := range r.ChunkTokens {
			tokens += k
		}
		if r.OK() {
			completed++
			if !r.Accepted && sloRejected(r) {
				missed++
			}
		}
	}
	out := map[string]float64{}
	put := func(name string, xs []float64, q float64) {
		if len(xs) > 0 {
			out[name] = quantile.Of(xs, q)
		}
	}
	put(evidence.SigTTFTP50, ttft, 0.5)
	put(evidence.SigTTFTP95, ttft, 0.95)
	put(evidence.SigTTFTP99, ttft, 0.99)
	put(evidence.SigTTFTFromSentP50, ttftSent, 0.5)
	put(evidence.SigITLP50, itl, 0.5)
	put(evidence.SigITLP99, itl, 0.99)
	put(evidence.SigE2EP50, e2e, 0.5)
	put(evidence.SigE2EP99, e2e, 0.99)
	put(evidence.SigHeadersP50, hdr, 0.5)
	if chunks > 0 {
		out[evidence.SigTokensPerChunk] = float64(tokens) / float64(chunks)
	}
	if completed > 0 {
		out[evidence.SigSLOMissRate] = float64(missed) / float64(completed)
	}
	if n := len(recs); n > 0 {
		out[evidence.SigAcceptanceRate] = float64(accepted) / float64(n)
	}
	sh := stats.ShapeWith(recs, j)
	for n, x := range sh.Values {
		out[n] = x
	}
	for n, x := range stats.StepSignals(recs).Values {
		out[n] = x // multi-step tasks: re-prefill, wait and later-turn figures
	}
	// Long prompts in the other half are in recs' phase too; stats.HOL sees only this half's,
	// so a long prefill straddling the boundary counts on one side only.
	if h, ok := stats.HOLWith(recs, minHOLSamples, j); ok {
		out[evidence.SigHOLTTFTRatio] = h.Ratio
	}
	return out
}

// clientNames are the stage-1 signals clientSignals can re-derive; in a half view they are
// either re-derived or absent, never carried over from the whole run.
var clientNames = []string{
	evidence.SigTTFTP50, evidence.SigTTFTP95, evidence.SigTTFTP99, evidence.SigTTFTFromSentP50,
	evidence.SigITLP50, evidence.SigITLP99, evidence.SigE2EP50, evidence.SigE2EP99,
	evidence.SigHeadersP50, evidence.SigTokensPerChunk, evidence.SigSLOMissRate,
	evidence.SigAcceptanceRate, evidence.SigHOLTTFTRatio,
}

// isShape reports whether a stage-1 signal comes from stats.ShapeOf or stats.StepSignals
// (re-derived per half).
func isShape(n string) bool {
	switch n {
	case evidence.SigQueueShare, evidence.SigServiceTTFT, evidence.SigCoalescedShare, evidence.SigTTFTShareE2E,
		evidence.SigStallShare, evidence.SigStallAligned, evidence.SigStallAlignedBase,
		evidence.SigPrefillMsPerToken, evidence.SigPrefillFitR2, evidence.SigTPOTLoadRatio, evidence.SigContextExhaustedRate:
		return true
	}
	return strings.HasPrefix(n, "client.error_rate.") || strings.HasPrefix(n, "client.flag_rate.") || strings.HasPrefix(n, "client.steps.")
}

// sloRejected reports whether a completed task was rejected for an SLO.
func sloRejected(r *record.Record) bool {
	for _, why := range r.Reasons {
		if strings.Contains(strings.ToLower(why), "slo") {
			return true
		}
	}
	return false
}

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

// halfView re-derives a view for the warm records scheduled in w and the series samples in
// w. Signals that cannot be re-derived (profiler traces, histogram quantiles) are carried
// over and not marked derived, so they never count as reproduction on their own.
func halfView(ev *evidence.Evidence, t Tasks, full *view, w interval, name, join string) (*view, int) {
	recs := t.All
	h := &view{sig: map[string]evidence.Signal{}, stages: full.stages, derived: map[string]bool{}, half: name, engine: full.engine}
	for k, s := range full.sig {
		h.sig[k] = s
	}
	var sub []*record.Record
	for i := range recs {
		r := &recs[i]
		t := relTime(ev.Run.StartedAt, r.ScheduledAt)
		if r.Phase == record.PhaseWarm && t >= w.a && t < w.b {
			sub = append(sub, r)
		}
	}
	for _, n := range clientNames {
		delete(h.sig, n)
	}
	for n, s := range h.sig {
		if s.Stage == evidence.StageRequestTrace && isShape(n) {
			delete(h.sig, n)
		}
	}
	for n, x := range clientSignals(sub, t.join(join)) {
		s, ok := full.sig[n]
		if !ok {
			s = evidence.Signal{Name: n, Stage: evidence.StageRequestTrace, Source: "client", Phase: evidence.PhaseWarm}
		}
		s.Value, s.Window = x, &evidence.Window{StartS: w.a, EndS: w.b}
		h.sig[n] = s
		h.derived[n] = true
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
	return h, len(sub)
}

// reproduce re-runs a rule on each half of the warm window. It is met when the rule fires
// in both halves on at least one re-derived signal that holds.
func reproduce(ev *evidence.Evidence, t Tasks, full *view, r rule, o *Options) evidence.StopCondition {
	w, arrivalsEnd, ok := warmWindow(ev, t.All)
	if !ok {
		return evidence.StopCondition{Reason: "no warm window to split"}
	}
	if r.id == "cold-start" {
		return evidence.StopCondition{Reason: "a cold start happens once per server start: reproduce it with a second run against a fresh server"}
	}
	var notes []string
	for _, part := range halves(w, arrivalsEnd) {
		hv, n := halfView(ev, t, full, part.w, part.name, part.join)
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
