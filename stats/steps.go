package stats

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Requests expands task records into the HTTP exchanges they stand for: a multi-step task's
// attached calls (record.ReadFile attaches them), a single-request task itself. Wire-level
// figures (time to headers, event gaps, the queue share of TTFT, in-flight against the
// engine) are properties of requests, not of tasks that think between their calls; with
// no multi-step task it returns rs itself.
func Requests(rs []*record.Record) []*record.Record {
	multi := false
	for _, r := range rs {
		if len(r.StepRecords()) > 0 {
			multi = true
			break
		}
	}
	if !multi {
		return rs
	}
	out := make([]*record.Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Requests()...)
	}
	return out
}

// stepKey is one call position of one task type.
type stepKey struct {
	task  string
	index int
}

// stepTables summarises every call position of every multi-step task type of rs (one
// phase), measured over a window of length win.
func stepTables(rs []*record.Record, win time.Duration) []evidence.StepSummary {
	calls := map[stepKey][]*record.Record{}
	prevOf := map[*record.Record]*record.Record{}
	for _, r := range rs {
		steps := r.StepRecords()
		for i := range steps {
			s := &steps[i]
			if s.Step == nil {
				continue
			}
			k := stepKey{r.Task, s.Step.Index}
			calls[k] = append(calls[k], s)
			if i > 0 {
				prevOf[s] = &steps[i-1]
			}
		}
	}
	keys := make([]stepKey, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].task < keys[j].task || keys[i].task == keys[j].task && keys[i].index < keys[j].index
	})
	var out []evidence.StepSummary
	for _, k := range keys {
		cs := calls[k]
		st := evidence.StepSummary{Task: k.task, Index: k.index, Kind: cs[0].Step.Kind, Summary: Summarize(cs, win, 0)}
		var prompt, carried, cached, cachedOf, tools, n float64
		known := false
		wait := NewDist()
		for _, c := range cs {
			if !c.OK() {
				continue
			}
			n++
			prompt += float64(c.PromptTokens)
			carried += float64(c.Step.CarriedTokens)
			tools += float64(c.Step.ToolCalls)
			if x, ok := c.CachedTokens(); ok {
				known = true
				cached += float64(x)
				cachedOf += float64(c.PromptTokens)
			}
			if w, ok := c.WaitBefore(prevOf[c]); ok {
				wait.Add(w)
			}
		}
		if n > 0 {
			st.PromptTokensMean = round6(prompt / n)
			st.CarriedTokensMean = round6(carried / n)
			if st.Kind == record.StepTools {
				st.ToolCallsMean = round6(tools / n)
			}
		}
		if known && cachedOf > 0 {
			v := round6(cached / cachedOf)
			st.CachedShare = &v
		}
		if wait.N() > 0 {
			st.WaitMs = wait.Quantiles()
		}
		out = append(out, st)
	}
	return out
}

// StepValues are the multi-step signals of one phase (evidence/signals_steps.go), with a
// note per signal saying what it rests on.
type StepValues struct {
	Values map[string]float64
	Notes  map[string]string
}

// StepSignals derives the multi-step signals of one phase's task records (attached calls
// needed); empty when no task had steps.
func StepSignals(rs []*record.Record) StepValues {
	sv := StepValues{Values: map[string]float64{}, Notes: map[string]string{}}
	put := func(name string, v float64, note string) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sv.Values[name] = v
			sv.Notes[name] = note
		}
	}
	var allPrompt, carried, reCarried, reCached float64
	knownCalls, laterCalls := 0, 0
	first, later, laterDue, lag := NewDist(), NewDist(), NewDist(), NewDist()
	waitShares := map[string][]float64{}
	multi := 0
	for _, r := range rs {
		for _, q := range r.Requests() {
			if q.OK() {
				allPrompt += float64(q.PromptTokens)
			}
		}
		steps := r.StepRecords()
		if len(steps) == 0 {
			continue
		}
		multi++
		var between, think time.Duration
		for i := range steps {
			s := &steps[i]
			if s.Step == nil {
				continue
			}
			if i > 0 {
				if v, ok := s.ScheduleLag(); ok {
					lag.Add(v)
				}
				if w, ok := s.WaitBefore(&steps[i-1]); ok {
					between += w
					think += time.Duration(s.Step.ThinkUS) * time.Microsecond
				}
			}
			if !s.OK() || s.Step.Turn < 0 {
				continue
			}
			d, ok := s.TTFTFromSent()
			if s.Step.Turn == 0 {
				if ok {
					first.Add(d)
				}
				continue
			}
			laterCalls++
			if ok {
				later.Add(d)
			}
			if v, ok := s.TTFT(); ok {
				laterDue.Add(v)
			}
			c := float64(s.Step.CarriedTokens)
			carried += c
			if x, ok := s.CachedTokens(); ok && c > 0 {
				knownCalls++
				reCarried += c
				reCached += math.Min(float64(x), c)
			}
		}
		if e2e, ok := r.E2E(); ok && r.OK() {
			if active := e2e - think; active > 0 {
				waitShares[r.Task] = append(waitShares[r.Task], clamp01((between-think).Seconds()/active.Seconds()))
			}
		}
	}
	if multi == 0 {
		return sv
	}
	if reCarried > 0 {
		put(evidence.SigStepsReprefillShare, (reCarried-reCached)/reCarried,
			fmt.Sprintf("%d of %d later calls reported cached tokens; %.0f of %.0f carried tokens computed again", knownCalls, laterCalls, reCarried-reCached, reCarried))
	}
	if allPrompt > 0 && laterCalls > 0 {
		put(evidence.SigStepsCacheableShare, carried/allPrompt,
			fmt.Sprintf("%.0f carried tokens over %d later calls of %.0f prompt tokens sent", carried, laterCalls, allPrompt))
	}
	if first.N() > 0 && later.N() > 0 {
		f, l := first.QuantileMs(50), later.QuantileMs(50)
		put(evidence.SigStepsFirstTTFTP50, f, fmt.Sprintf("%d first calls", first.N()))
		put(evidence.SigStepsLaterTTFTP50, l, fmt.Sprintf("%d later calls", later.N()))
		if f > 0 {
			put(evidence.SigStepsLaterTTFTRatio, l/f, fmt.Sprintf("later p50 %.1f ms over first p50 %.1f ms (TTFT from send)", l, f))
		}
	}
	if laterDue.N() > 0 {
		put(evidence.SigStepsLaterTTFTP99, laterDue.QuantileMs(99), fmt.Sprintf("%d later calls, from their due time", laterDue.N()))
	}
	// Task types wait differently (a chat mostly for its user, an agent for its tools): the
	// headline is the task type that waits most, so a chat's think time never hides an
	// agent's tools.
	best, bestTask := -1.0, ""
	for _, task := range sortedKeys(waitShares) {
		xs := waitShares[task]
		sort.Float64s(xs)
		if m := xs[(len(xs)-1)/2]; m > best {
			best, bestTask = m, task
		}
	}
	if bestTask != "" {
		put(evidence.SigStepsWaitShare, best, fmt.Sprintf("median over %d %q tasks (the task type that waits most)", len(waitShares[bestTask]), bestTask))
	}
	if lag.N() > 0 {
		put(evidence.SigStepsLagP99, lag.QuantileMs(99), fmt.Sprintf("%d later calls", lag.N()))
	}
	return sv
}

// StepUnit is the unit of a multi-step signal.
func StepUnit(name string) string {
	switch name {
	case evidence.SigStepsFirstTTFTP50, evidence.SigStepsLaterTTFTP50, evidence.SigStepsLaterTTFTP99, evidence.SigStepsLagP99:
		return "ms"
	}
	return "ratio"
}
