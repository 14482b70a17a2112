package stats

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// What each bound means (shape signals are judged by the diagnosis; these only decide what
// is counted).
const (
	// CoalescedGap: no engine emits two steps of one sequence within 100 µs (a decode step
	// reads every weight once: milliseconds on a GPU, more on a CPU), so content events of one
	// stream closer than this were produced earlier and released together on the way.
	CoalescedGap = 100 * time.Microsecond
	// StallFactor: a gap three times the stream's own median gap is a step that did much
	// more work than a decode step (a prefill ran inside it).
	StallFactor = 3.0
	// MinStreamTokens: streams shorter than this say little about their rhythm.
	MinStreamTokens = 8
	// minShapeTasks: fewer tasks than this give no shape signal.
	minShapeTasks = 5
	// minIdleTasks: an idle baseline needs this many tasks sent with nothing else in flight.
	minIdleTasks = 3
)

// Shape is what the client's own records say about where time went.
type Shape struct {
	Values map[string]float64
	Notes  map[string]string
}

func (s *Shape) put(name string, v float64, note string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	s.Values[name] = v
	if note != "" {
		s.Notes[name] = note
	}
}

// ShapeOf derives the shape signals from one phase's records. Error and flag rates are per
// task; the rest are per request (Requests: a multi-step task's calls, each its own HTTP
// exchange), the same thing when every task is one request.
func ShapeOf(rs []*record.Record) Shape { return ShapeWith(rs, nil) }

// ShapeWith is ShapeOf with the stall alignment read from j (a Join built over every task
// of the set rs samples) instead of from the first tokens of rs alone; nil: from rs.
func ShapeWith(rs []*record.Record, j *Join) Shape {
	s := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	var ok []*record.Record
	var c shapeCounts
	for _, r := range rs {
		c.add(r)
		if r.Status != record.StatusCancelled && r.OK() {
			ok = append(ok, r)
		}
	}
	c.put(&s)
	reqs := Requests(rs)
	okReqs := ok
	if len(reqs) != len(rs) {
		okReqs = nil
		for _, r := range reqs {
			if r.OK() {
				okReqs = append(okReqs, r)
			}
		}
	}
	idle := j.idleRequests() // nil without a join: queue and prefill take them from okReqs
	s.queue(okReqs, idle)
	s.rhythm(okReqs, reqs, j)
	s.prefill(okReqs, idle)
	s.tpotLoad(okReqs)
	return s
}

// ShapeUnit is the unit of a shape signal.
func ShapeUnit(name string) string {
	switch {
	case name == evidence.SigPrefillMsPerToken:
		return "ms/token"
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	}
	return "ratio"
}

// ErrorClassOf returns a failed task's error class: the recorded one, else one inferred
// from its status (records written before error classes existed). "" for an ok or
// cancelled task.
func ErrorClassOf(r *record.Record) string {
	if r.OK() || r.Status == record.StatusCancelled {
		return ""
	}
	if r.ErrorClass != "" {
		return r.ErrorClass
	}
	switch r.Status {
	case record.StatusTimeout:
		return record.ErrTimeout
	case record.StatusConnError:
		return record.ErrConn
	case record.StatusHTTPError:
		switch {
		case r.HTTPStatus == 429 || r.HTTPStatus == 503:
			return record.ErrOverloaded
		case r.HTTPStatus >= 300 && r.HTTPStatus < 400:
			return record.ErrRedirect
		case r.HTTPStatus >= 400 && r.HTTPStatus < 500 && r.HTTPStatus != 408:
			return record.ErrRefused
		}
		return record.ErrServer
	case record.StatusInvalid:
		return record.ErrInvalid
	case record.StatusStreamError:
		if strings.Contains(r.Error, "error event") || strings.Contains(r.Error, "error in") {
			return record.ErrStreamEvent
		}
		return record.ErrIncomplete
	}
	return record.ErrServer
}

// contextWords are what engines say when a prompt does not fit the context: llama.cpp
// "the request exceeds the available context size", vLLM "maximum context length is N
// tokens" / "longer than the maximum model length", SGLang "is longer than the model's
// context length", TGI "inputs tokens + max_new_tokens must be <= max_total_tokens".
var contextWords = []string{"context size", "context length", "context window", "maximum model length", "max_model_len",
	"exceeds the available context", "too many tokens", "prompt is too long", "n_ctx", "input too long", "max_total_tokens"}

// ContextExhausted reports whether a task lost (part of) its context: refused because the
// prompt did not fit, its prompt truncated, or its context shifted during generation.
func ContextExhausted(r *record.Record) bool {
	if r.HasFlag(record.FlagPromptTruncated) || r.HasFlag(record.FlagContextShift) {
		return true
	}
	switch ErrorClassOf(r) {
	case record.ErrRefused, record.ErrStreamEvent, record.ErrInvalid, record.ErrServer:
		low := strings.ToLower(r.Error)
		for _, w := range contextWords {
			if strings.Contains(low, w) {
				return true
			}
		}
		return strings.Contains(low, "truncat")
	}
	return false
}

// shapeCounts accumulates, one task at a time, the share of tasks per error class (with
// the most frequent message of each as the note) and per flag: counts, and at most
// maxMessages distinct messages per class, so a stream of any length holds little.
type shapeCounts struct {
	n, ok   int // tasks not cancelled; of them completed
	count   map[string]int
	msgs    map[string]map[string]int
	ctx     int
	ctxMsgs map[string]int
	flags   map[string]int
}

// maxMessages bounds the distinct messages kept per error class: the most frequent one is
// exact while a class has no more distinct messages than this (servers repeat theirs).
const maxMessages = 1024

func countMessage(m map[string]int, msg string) {
	if _, ok := m[msg]; ok || len(m) < maxMessages {
		m[msg]++
	}
}

func (c *shapeCounts) add(r *record.Record) {
	if r.Status == record.StatusCancelled {
		return
	}
	if c.count == nil {
		c.count, c.msgs, c.ctxMsgs, c.flags = map[string]int{}, map[string]map[string]int{}, map[string]int{}, map[string]int{}
	}
	c.n++
	if r.OK() {
		c.ok++
		for _, f := range r.Flags {
			c.flags[f]++
		}
	}
	if ContextExhausted(r) {
		c.ctx++
		m := OneLine(r.Error, 160)
		if m == "" && len(r.Reasons) > 0 {
			m = OneLine(r.Reasons[len(r.Reasons)-1], 160)
		}
		if m == "" {
			m = strings.Join(r.Flags, ", ")
		}
		countMessage(c.ctxMsgs, m)
		return // counted once, as context, not again as its error class
	}
	cl := ErrorClassOf(r)
	if cl == "" {
		return
	}
	c.count[cl]++
	if c.msgs[cl] == nil {
		c.msgs[cl] = map[string]int{}
	}
	countMessage(c.msgs[cl], OneLine(r.Error, 160))
}

// merge adds o's counts (another part of the same set).
func (c *shapeCounts) merge(o *shapeCounts) {
	if o.count == nil {
		return
	}
	if c.count == nil {
		c.count, c.msgs, c.ctxMsgs, c.flags = map[string]int{}, map[string]map[string]int{}, map[string]int{}, map[string]int{}
	}
	c.n, c.ok, c.ctx = c.n+o.n, c.ok+o.ok, c.ctx+o.ctx
	for k, v := range o.count {
		c.count[k] += v
	}
	for cl, m := range o.msgs {
		if c.msgs[cl] == nil {
			c.msgs[cl] = map[string]int{}
		}
		for k, v := range m {
			if _, ok := c.msgs[cl][k]; ok || len(c.msgs[cl]) < maxMessages {
				c.msgs[cl][k] += v
			}
		}
	}
	for k, v := range o.ctxMsgs {
		if _, ok := c.ctxMsgs[k]; ok || len(c.ctxMsgs) < maxMessages {
			c.ctxMsgs[k] += v
		}
	}
	for k, v := range o.flags {
		c.flags[k] += v
	}
}

// put writes the error-class, lost-context and flag rates into s.
func (c *shapeCounts) put(s *Shape) {
	if c.n == 0 {
		return
	}
	for cl, k := range c.count {
		top, topN := MostFrequent(c.msgs[cl])
		s.put(evidence.SigErrorClassRate(cl), float64(k)/float64(c.n),
			fmt.Sprintf("%d of %d tasks; most frequent (%d×): %s", k, c.n, topN, top))
	}
	if c.ctx > 0 {
		top, topN := MostFrequent(c.ctxMsgs)
		s.put(evidence.SigContextExhaustedRate, float64(c.ctx)/float64(c.n),
			fmt.Sprintf("%d of %d tasks; most frequent (%d×): %s", c.ctx, c.n, topN, top))
	}
	for f, k := range c.flags {
		s.put(evidence.SigFlagRate(f), float64(k)/float64(c.ok), fmt.Sprintf("%d of %d completed tasks", k, c.ok))
	}
}

// MostFrequent returns the most frequent key of a count map (ties: the smallest key) and its
// count.
func MostFrequent(m map[string]int) (string, int) {
	top, topN := "", 0
	for k, j := range m {
		if j > topN || (j == topN && k < top) {
			top, topN = k, j
		}
	}
	return top, topN
}

// OneLine shortens a message to one line of at most max runes.
func OneLine(m string, max int) string {
	m = strings.Join(strings.Fields(m), " ")
	if r := []rune(m); len(r) > max {
		m = string(r[:max]) + "…"
	}
	return m
}

// IdleBaselineNote opens the note of a queue share inferred from the client alone (TTFT
// against tasks sent to an idle server), not from the engine's per-request timings: such a
// share cannot tell a wait for admission from one in front of the engine.
const IdleBaselineNote = "idle baseline"

// queue estimates the share of TTFT (from send) spent before service.
func (s *Shape) queue(ok, idleReqs []*record.Record) {
	// Best: the engine's own prefill time per request.
	var shares, service []float64
	withTTFT := 0
	for _, r := range ok {
		t, has := r.TTFTFromSent()
		if !has || t <= 0 {
			continue
		}
		withTTFT++
		if r.Server == nil || r.Server.PrefillUS <= 0 {
			continue
		}
		p := time.Duration(r.Server.PrefillUS) * time.Microsecond
		wait := t - p
		if d := time.Duration(r.Server.DecodeUS) * time.Microsecond; d > 0 && r.LastTokenAt.After(r.SentAt) {
			// The engine's clock says how long it served the task (prefill + generation);
			// the rest of send → last token is time it did not. Unlike TTFT − prefill, this
			// holds when a buffer on the way holds the first token until generation ends.
			wait = r.LastTokenAt.Sub(r.SentAt) - p - d
		}
		shares = append(shares, clamp01(float64(wait)/float64(t)))
		service = append(service, p.Seconds()*1000)
	}
	if len(shares) >= minShapeTasks && 2*len(shares) >= withTTFT {
		s.put(evidence.SigQueueShare, med(shares),
			fmt.Sprintf("server timings: (send → last token − engine prefill − engine generation time) ÷ TTFT from send, median over %d tasks", len(shares)))
		s.put(evidence.SigServiceTTFT, med(service), fmt.Sprintf("engine prefill time p50 over %d tasks", len(service)))
		return
	}
	// Else: TTFT of tasks sent with nothing else of ours in flight is the service time.
	byTask := map[string][]*record.Record{}
	for _, r := range ok {
		byTask[r.Task] = append(byTask[r.Task], r)
	}
	var wsum, wshare, wserv float64
	var parts []string
	for _, name := range sortedKeys(byTask) {
		var idle, all []float64
		for _, r := range byTask[name] {
			t, has := r.TTFTFromSent()
			if !has || t <= 0 {
				continue
			}
			all = append(all, t.Seconds()*1000)
			if r.InFlight == 0 && idleReqs == nil {
				idle = append(idle, t.Seconds()*1000)
			}
		}
		for _, r := range idleReqs { // a join's: every idle-sent task, not the sample's few
			if t, has := r.TTFTFromSent(); has && t > 0 && r.Task == name {
				idle = append(idle, t.Seconds()*1000)
			}
		}
		if len(idle) < minIdleTasks || len(all) < minShapeTasks {
			continue
		}
		s0, p50 := med(idle), med(all)
		w := float64(len(all))
		wsum += w
		wshare += w * clamp01(1-s0/p50)
		wserv += w * s0
		parts = append(parts, fmt.Sprintf("%q %.1f ms idle (%d tasks) vs %.1f ms p50", name, s0, len(idle), p50))
	}
	if wsum == 0 {
		return
	}
	s.put(evidence.SigQueueShare, wshare/wsum, IdleBaselineNote+": 1 − TTFT of tasks sent with nothing else in flight ÷ TTFT p50, by task type: "+strings.Join(parts, "; "))
	s.put(evidence.SigServiceTTFT, wserv/wsum, "TTFT p50 of tasks sent to an idle server")
}

// rhythm: coalesced events, first-token share of E2E, and decode stalls aligned with other
// tasks' first tokens.
func (s *Shape) rhythm(ok, all []*record.Record, j *Join) {
	var firsts []time.Time
	for _, r := range all {
		if !r.FirstTokenAt.IsZero() && j == nil {
			firsts = append(firsts, r.FirstTokenAt)
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i].Before(firsts[j]) })
	// firstIn reports whether a first token other than own falls in (a, b].
	firstIn := func(a, b, own time.Time) bool {
		i := sort.Search(len(firsts), func(i int) bool { return firsts[i].After(a) })
		for ; i < len(firsts) && !firsts[i].After(b); i++ {
			if !firsts[i].Equal(own) {
				return true
			}
		}
		return false
	}
	var gaps, coalesced, stalls, aligned, normal, normalAligned int
	var e2eShare []float64
	streams := 0
	for _, r := range ok {
		if len(r.ChunkUS) < 2 || r.SentAt.IsZero() {
			continue
		}
		if r.OutputTokens >= MinStreamTokens {
			if t, has := r.TTFTFromSent(); has && !r.DoneAt.IsZero() {
				if e := r.DoneAt.Sub(r.SentAt); e > 0 {
					e2eShare = append(e2eShare, float64(t)/float64(e))
				}
			}
		}
		if r.HasFlag(record.FlagEventsSummarized) {
			// A tool's summary of the stream, not its events: no gaps to judge. Its first
			// token is real, so it still ends other streams' stalls.
			continue
		}
		streams++
		g := make([]float64, 0, len(r.ChunkUS)-1)
		for i := 1; i < len(r.ChunkUS); i++ {
			d := r.ChunkUS[i] - r.ChunkUS[i-1]
			g = append(g, float64(d))
			gaps++
			if time.Duration(d)*time.Microsecond < CoalescedGap {
				coalesced++
			}
		}
		if len(g) < MinStreamTokens-1 {
			continue
		}
		mg := med(g)
		if time.Duration(mg)*time.Microsecond < CoalescedGap {
			continue // a coalesced stream has no step rhythm to stall
		}
		// The task whose prefill stalled this step gets its first token at the step's end;
		// allow half a step for the two writes to reach the client in either order.
		tol := time.Duration(mg/2) * time.Microsecond
		for i := 1; i < len(r.ChunkUS); i++ {
			a := r.SentAt.Add(time.Duration(r.ChunkUS[i-1]) * time.Microsecond)
			b := r.SentAt.Add(time.Duration(r.ChunkUS[i])*time.Microsecond + tol)
			var hit bool
			if j != nil {
				hit = j.aligned(r, i)
			} else {
				hit = firstIn(a, b, r.FirstTokenAt)
			}
			if g[i-1] > StallFactor*mg {
				stalls++
				if hit {
					aligned++
				}
			} else {
				normal++
				if hit {
					normalAligned++
				}
			}
		}
	}
	if gaps > 0 && streams >= minShapeTasks {
		s.put(evidence.SigCoalescedShare, float64(coalesced)/float64(gaps),
			fmt.Sprintf("%d of %d content-event gaps under %v, over %d streams", coalesced, gaps, CoalescedGap, streams))
	}
	if len(e2eShare) >= minShapeTasks {
		s.put(evidence.SigTTFTShareE2E, med(e2eShare), fmt.Sprintf("median over %d tasks with ≥ %d output tokens", len(e2eShare), MinStreamTokens))
	}
	if tot := stalls + normal; tot > 0 && streams >= minShapeTasks {
		s.put(evidence.SigStallShare, float64(stalls)/float64(tot),
			fmt.Sprintf("%d of %d gaps longer than %.0f× their stream's median gap", stalls, tot, StallFactor))
		if stalls > 0 {
			s.put(evidence.SigStallAligned, float64(aligned)/float64(stalls),
				fmt.Sprintf("%d of %d stalls end with another task's first token", aligned, stalls))
		}
		if normal > 0 {
			s.put(evidence.SigStallAlignedBase, float64(normalAligned)/float64(normal),
				fmt.Sprintf("%d of %d ordinary gaps end with another task's first token", normalAligned, normal))
		}
	}
}

// prefill fits the service part of TTFT against prompt tokens: with the engine's own
// prefill time when the response carried it, else over tasks sent to an idle server (no
// queue inside their TTFT).
func (s *Shape) prefill(ok, idleReqs []*record.Record) {
	var xs, ys []float64
	basis := "engine prefill time"
	for _, r := range ok {
		if r.Server != nil && r.Server.PrefillUS > 0 && r.PromptTokens > 0 {
			n := r.PromptTokens
			if r.Server.PromptN > 0 {
				n = r.Server.PromptN // cached prefix tokens were not computed
			}
			xs = append(xs, float64(n))
			ys = append(ys, float64(r.Server.PrefillUS)/1000)
		}
	}
	if len(xs) < minShapeTasks {
		xs, ys, basis = nil, nil, "TTFT from send of tasks sent to an idle server"
		from := ok
		if idleReqs != nil {
			from = idleReqs
		}
		for _, r := range from {
			if t, has := r.TTFTFromSent(); has && r.InFlight == 0 && r.PromptTokens > 0 {
				xs = append(xs, float64(r.PromptTokens))
				ys = append(ys, t.Seconds()*1000)
			}
		}
	}
	if len(xs) < minShapeTasks {
		return
	}
	slope, r2, ok2 := fitLine(xs, ys)
	if !ok2 {
		return
	}
	note := fmt.Sprintf("least squares over %d tasks (%s); prompts %.0f–%.0f tokens", len(xs), basis, minOf(xs), maxOf(xs))
	s.put(evidence.SigPrefillMsPerToken, slope, note)
	s.put(evidence.SigPrefillFitR2, r2, note)
}

// tpotLoad compares decode speed at high and low in-flight counts.
func (s *Shape) tpotLoad(ok []*record.Record) {
	var inf []float64
	for _, r := range ok {
		inf = append(inf, float64(r.InFlight))
	}
	if len(inf) < 2*minShapeTasks {
		return
	}
	m := med(inf)
	var lo, hi []float64
	for _, r := range ok {
		t, has := r.TPOT()
		if !has {
			continue
		}
		if float64(r.InFlight) >= m {
			hi = append(hi, t.Seconds()*1000)
		} else {
			lo = append(lo, t.Seconds()*1000)
		}
	}
	if len(lo) < minShapeTasks || len(hi) < minShapeTasks || med(lo) <= 0 {
		return
	}
	s.put(evidence.SigTPOTLoadRatio, med(hi)/med(lo),
		fmt.Sprintf("TPOT p50 %.2f ms over %d tasks sent with ≥ %.0f in flight vs %.2f ms over %d with fewer", med(hi), len(hi), m, med(lo), len(lo)))
}

// fitLine is ordinary least squares y = a + b·x; ok is false when x does not vary.
func fitLine(xs, ys []float64) (slope, r2 float64, ok bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	// Prompts that barely vary (under 10% spread around their mean) cannot separate a
	// per-token cost from a fixed one.
	if sxx == 0 || math.Sqrt(sxx/n) < 0.1*mx || syy == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	r2 = sxy * sxy / (sxx * syy)
	return slope, r2, true
}

func med(xs []float64) float64 { return quantile.Of(xs, 0.5) }

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
