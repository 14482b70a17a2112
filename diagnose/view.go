package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// clientSignals are the unlabelled stage-1 signals of one part of the run (a half of the
// warm window, the cold phase), as stage 1's accumulator gave them over the part's tasks
// (Tasks.Views), and how many tasks the part holds. The diagnosis defines none of them
// itself.
func clientSignals(t Tasks, name string) (map[string]evidence.Signal, int) {
	v, ok := t.Views[name]
	if !ok || v.Result == nil {
		return nil, 0
	}
	out := map[string]evidence.Signal{}
	for _, s := range v.Result.Signals {
		if len(s.Labels) == 0 {
			out[s.Name] = s
		}
	}
	return out, v.Tasks
}

// view is what a rule sees: headline signal values by name, and which stages held any
// evidence. The whole run is one view; each half of the warm window is another, whose
// values were read again over that half alone: stage 1 over its tasks (Tasks.Views) and
// the series samples in it (derived marks which).
type view struct {
	sig     map[string]evidence.Signal
	stages  map[int]bool // stage number -> has at least one signal
	derived map[string]bool
	half    string // "", "first half", "second half"
	// cold holds the cold phase's unlabelled signals (engine and devices from the evidence,
	// client figures from stage 1 over the cold tasks), for rules that compare the phases.
	// Only the whole-run view has it.
	cold map[string]evidence.Signal
	// objectives are the contract's objectives judged on the view's warm tasks
	// (objectives.go): what the rules' symptoms and the budget's excess read as missed.
	objectives []evidence.Objective
	// engine is the detected engine (evidence run.engine): predictions and probes name its
	// own knobs.
	engine string
	// context is the mean context a warm task's sequence holds (prompt plus half its
	// output), from the records: the KV bytes a decode step reads per sequence. 0: unknown.
	context float64
	// config is what the engine reported of its configuration (evidence run.engine_config):
	// a prediction never advises turning on what is on, and says when it could not know.
	config map[string]string
	// imported names the tool whose result file the run was imported from ("": pel ran
	// it): such a run has only that client's account of each request.
	imported string
	// refused counts the warm tasks refused as overloaded, refusedInQueue those of them
	// refused while the engine's own queue held a request (refusalsInQueue; both 0 when
	// the engine's waiting series is absent, and in the halves' views).
	refused, refusedInQueue int
}

// newView indexes the headline signals of an evidence package (unlabelled; warm phase
// preferred, as evidence.Signal does).
func newView(ev *evidence.Evidence) *view {
	v := &view{sig: map[string]evidence.Signal{}, stages: map[int]bool{}, engine: ev.Run.Engine, config: ev.Run.EngineConfig, imported: ev.Run.ImportedFrom}
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			v.stages[st.Stage] = true
			if len(s.Labels) > 0 || (s.Phase != "" && s.Phase != evidence.PhaseWarm) {
				continue
			}
			if old, ok := v.sig[s.Name]; ok && old.Phase == evidence.PhaseWarm && s.Phase != evidence.PhaseWarm {
				continue
			}
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				continue
			}
			v.sig[s.Name] = s
		}
	}
	return v
}

// coldSignals collects the cold phase's figures: the engine's and devices' signals of that
// phase as the producers wrote them, and the client's from stage 1's accumulator over the
// cold tasks (Tasks.Views; evidence.json carries client figures for the headline phase
// only), including the load generator's own lateness in that phase.
func coldSignals(ev *evidence.Evidence, t Tasks) map[string]evidence.Signal {
	recs := t.All
	out := map[string]evidence.Signal{}
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			if len(s.Labels) == 0 && s.Phase == evidence.PhaseCold && !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
				out[s.Name] = s
			}
		}
	}
	var first *record.Record
	for i := range recs {
		r := &recs[i]
		if r.Phase != record.PhaseCold {
			continue
		}
		if _, ok := r.TTFTFromSent(); ok && r.OK() && r.InFlight == 0 && (first == nil || r.SentAt.Before(first.SentAt)) {
			first = r
		}
	}
	client, _ := clientSignals(t, joinCold)
	for n, s := range client {
		s.Phase, s.Window = evidence.PhaseCold, nil
		out[n] = s
	}
	if first != nil {
		d, _ := first.TTFTFromSent()
		out[sigColdFirstTTFT] = evidence.Signal{Name: sigColdFirstTTFT, Value: figure.Ms(d), Unit: "ms", Stage: evidence.StageRequestTrace, Source: "client", Phase: evidence.PhaseCold}
	}
	return out
}

// sigColdFirstTTFT is the TTFT (from send) of the first cold-phase task sent with nothing
// else in flight. Warm-up work on the request path (startup, compilation, graph capture)
// makes even that task wait, with no queue to explain it; a burst of simultaneous arrivals
// (a closed loop starting N tasks at once) queues the later ones but serves the first in
// the first step, at warm speed.
const sigColdFirstTTFT = "client.cold_first_idle_ttft_from_sent_ms"

// coldWarmRatio compares a signal's cold-phase value with its headline (warm) one.
func (v *view) coldWarmRatio(name, ratioName, op string, thr float64) (meas, bool) {
	c, ok := v.cold[name]
	w, ok2 := v.sig[name]
	if !ok || !ok2 || w.Value <= 0 {
		return meas{}, false
	}
	m := derivedItem(ratioName, c.Value/w.Value, op, thr, "ratio", w.Source, w.Stage, name)
	return m, true
}

// judgeCold compares a cold-phase signal to a threshold.
func (v *view) judgeCold(name, op string, thr float64) meas {
	s, ok := v.cold[name]
	if !ok {
		return meas{item: evidence.EvidenceItem{Signal: name, Op: op, Threshold: thr, Phase: evidence.PhaseCold}}
	}
	return meas{
		item: evidence.EvidenceItem{Signal: name, Value: s.Value, Op: op, Threshold: thr, Unit: s.Unit,
			Source: s.Source, Stage: s.Stage, Phase: evidence.PhaseCold},
		present: true,
		holds:   compare(s.Value, op, thr),
	}
}

// rederived reports whether m's value was read again over this (half) view's window.
func (v *view) rederived(m meas) bool {
	if len(m.inputs) == 0 {
		return v.derived[m.item.Signal]
	}
	for _, in := range m.inputs {
		if !v.derived[in] {
			return false
		}
	}
	return true
}

// has reports whether the signal is present.
func (v *view) has(name string) bool { _, ok := v.sig[name]; return ok }

// val returns a signal's value.
func (v *view) val(name string) (float64, bool) {
	s, ok := v.sig[name]
	return s.Value, ok
}

// hasSource reports whether any present signal's source starts with prefix (e.g. "dcgm").
func (v *view) hasSource(prefix string) bool {
	for _, s := range v.sig {
		if len(s.Source) >= len(prefix) && s.Source[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// meas is one signal judged against one threshold.
type meas struct {
	item    evidence.EvidenceItem
	present bool
	holds   bool
	// ctx marks context that rules a competing layer out (e.g. "the KV cache had room")
	// rather than the symptom itself; it never counts as reproducing the symptom.
	ctx bool
	// inputs are the signals a derived value was computed from.
	inputs []string
}

// asContext marks m as context.
func asContext(m meas) meas { m.ctx = true; return m }

// judge compares a signal to a threshold with op (">", ">=", "<", "<=").
func (v *view) judge(name, op string, thr float64) meas {
	s, ok := v.sig[name]
	if !ok {
		return meas{item: evidence.EvidenceItem{Signal: name, Op: op, Threshold: thr}}
	}
	return meas{
		item: evidence.EvidenceItem{
			Signal: name, Value: s.Value, Op: op, Threshold: thr, Unit: s.Unit,
			Source: s.Source, Stage: s.Stage, Phase: s.Phase,
		},
		present: true,
		holds:   compare(s.Value, op, thr),
	}
}

// compare applies op.
func compare(x float64, op string, thr float64) bool {
	switch op {
	case ">":
		return x > thr
	case ">=":
		return x >= thr
	case "<":
		return x < thr
	case "<=":
		return x <= thr
	}
	panic(fmt.Sprintf("diagnose: unknown op %q", op)) // programming error in a rule table
}

// derivedItem makes an evidence item for a value computed here from two signals (a ratio
// or a difference), so the finding shows what it was judged on.
func derivedItem(name string, value float64, op string, thr float64, unit, source string, stage int, inputs ...string) meas {
	return meas{
		inputs: inputs,
		item: evidence.EvidenceItem{Signal: name, Value: value, Op: op, Threshold: thr, Unit: unit,
			Source: source, Stage: stage, Phase: evidence.PhaseWarm},
		present: true,
		holds:   compare(value, op, thr),
	}
}

// queueShareFromClient reports whether the queue share was inferred from the client alone
// (stats' idle baseline: TTFT against tasks sent to an idle server) rather than from the
// engine's per-request timings: such a share holds whatever every request passes through,
// and cannot tell a wait for admission from one in front of the engine.
func (v *view) queueShareFromClient() bool {
	return strings.HasPrefix(v.sig[evidence.SigQueueShare].Note, stats.IdleBaselineNote)
}
