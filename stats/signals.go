package stats

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// signals fills res.Signals: the headline (phase warm, unlabelled) values, per-task-type
// variants (Labels{"task": name}), and the derived ratios.
func (res *Result) signals(all []*record.Record, byPhase map[string][]*record.Record, head []*record.Record, headPhase string, hw window, byTask map[string][]*record.Record, opt Options) {
	win := &evidence.Window{StartS: secs(hw.start.Sub(res.Start)), EndS: secs(hw.end.Sub(res.Start))}
	add := func(name string, v float64, unit string, labels map[string]string, note string) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		res.Signals = append(res.Signals, evidence.Signal{
			Name: name, Value: round6(v), Unit: unit, Stage: evidence.StageRequestTrace,
			Source: Source, Phase: headPhase, Window: win, Labels: labels, Note: note,
		})
	}
	few := func(n int) string {
		if n < opt.MinSamples {
			return fmt.Sprintf("few samples (%d)", n)
		}
		return ""
	}
	perSet := func(rs []*record.Record, labels map[string]string) {
		summarySignals(add, few, Summarize(rs, hw.dur(), 0), labels)
		if opt.SLOFor != nil {
			done, missed := 0, 0
			for _, r := range rs {
				if !r.OK() {
					continue
				}
				done++
				if len(MissedSLO(r, opt.SLOFor(r.Task))) > 0 {
					missed++
				}
			}
			if done > 0 {
				add(evidence.SigSLOMissRate, float64(missed)/float64(done), "ratio", labels, few(done))
			}
		}
	}
	perSet(head, nil)
	for _, name := range sortedKeys(byTask) {
		perSet(byTask[name], map[string]string{"task": name})
	}

	// Wire-level figures of the headline phase, per request (a multi-step task's calls).
	headers, gaps := NewDist(), NewDist()
	var chunks, chunkTokens int
	var queue = NewDist()
	queued := false
	for _, r := range head {
		if r.ClientQueueUS > 0 {
			queued = true
		}
		if r.Attempts > 0 {
			queue.AddUS(r.ClientQueueUS)
		}
	}
	reqs := Requests(head)
	for _, r := range reqs {
		if !r.OK() {
			continue
		}
		if v, ok := r.TimeToHeaders(); ok {
			headers.Add(v)
		}
		r.ChunkGaps(gaps.Add)
		chunks += len(r.ChunkTokens)
		for _, k := range r.ChunkTokens {
			chunkTokens += k
		}
	}
	if headers.N() > 0 {
		add(evidence.SigHeadersP50, headers.QuantileMs(50), "ms", nil, few(headers.N()))
	}
	if gaps.N() > 0 {
		add(evidence.SigChunkGapP50, gaps.QuantileMs(50), "ms", nil, few(gaps.N()))
	}
	if chunks > 0 {
		add(evidence.SigTokensPerChunk, float64(chunkTokens)/float64(chunks), "tokens", nil, few(chunks))
	}
	lag := NewDist()
	for _, r := range head {
		if v, ok := r.ScheduleLag(); ok {
			lag.Add(v)
		}
	}
	if lag.N() > 0 {
		add(evidence.SigScheduleLagP99, lag.QuantileMs(99), "ms", nil, few(lag.N()))
	}
	if queued {
		add(evidence.SigClientQueueP99, queue.QuantileMs(99), "ms", nil, few(queue.N()))
	}
	if d := hw.dur(); d > 0 {
		add(evidence.SigInFlightMean, busyTime(reqs, hw.start, hw.end).Seconds()/d.Seconds(), "count", nil, "")
	}

	// Cold vs warm TTFT.
	cold, warm := ttftDist(byPhase[record.PhaseCold]), ttftDist(byPhase[record.PhaseWarm])
	if cold.N() > 0 && warm.N() > 0 && warm.QuantileMs(50) > 0 {
		add(evidence.SigColdWarmTTFTRatio, cold.QuantileMs(50)/warm.QuantileMs(50), "ratio", nil,
			joinNote(few(min(cold.N(), warm.N())), fmt.Sprintf("cold p50 %.1f ms over %d tasks, warm p50 %.1f ms over %d", cold.QuantileMs(50), cold.N(), warm.QuantileMs(50), warm.N())))
	}

	// Goodput scaling across concurrency bands.
	if sc, ok := BandScaling(head, opt.MinSamples); ok {
		add(evidence.SigBandScaling, sc.Ratio, "ratio", nil, sc.Note)
		if sc.Knee > 0 {
			add(evidence.SigKneeBand, sc.Knee, "count", nil, sc.KneeNote)
		}
	} else if sc.Note != "" {
		res.Notes = append(res.Notes, Note{NoteBandScaling, "band scaling not computed: " + sc.Note})
	}

	// Where the client's own records say the time went (every server gives these).
	sh := ShapeWith(head, opt.Join)
	for _, name := range sortedKeys(sh.Values) {
		add(name, sh.Values[name], ShapeUnit(name), nil, sh.Notes[name])
	}

	// Multi-step tasks: what later calls cost because of earlier ones, waits between calls.
	sv := StepSignals(head)
	for _, name := range sortedKeys(sv.Values) {
		add(name, sv.Values[name], StepUnit(name), nil, sv.Notes[name])
	}

	// Head-of-line blocking of short prompts by long ones.
	if h, ok := HOLWith(reqs, opt.MinHOLSamples, opt.Join); ok {
		add(evidence.SigHOLTTFTRatio, h.Ratio, "ratio", nil, h.Note)
	} else if h.Note != "" {
		res.Notes = append(res.Notes, Note{NoteHOLNotComputed, "hol_ttft_ratio not computed: " + h.Note})
	}
}

func ttftDist(rs []*record.Record) *Dist {
	d := NewDist()
	for _, r := range rs {
		if v, ok := r.TTFT(); ok && r.OK() {
			d.Add(v)
		}
	}
	return d
}

// busyTime is the sum over tasks of the time each was in flight (first send to done)
// within [from, to]: divided by to−from it is the time-weighted mean in-flight count.
func busyTime(rs []*record.Record, from, to time.Time) time.Duration {
	var sum time.Duration
	for _, r := range rs {
		s := r.FirstSentAt
		if s.IsZero() {
			s = r.SentAt
		}
		if s.IsZero() || r.DoneAt.IsZero() {
			continue
		}
		a, b := maxTime(s, from), minTime(r.DoneAt, to)
		if b.After(a) {
			sum += b.Sub(a)
		}
	}
	return sum
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Scaling is the throughput-vs-concurrency reading of one run.
type Scaling struct {
	Ratio    float64 // (goodput gain) / (concurrency gain), lowest to highest eligible band
	Knee     float64 // mean concurrency of the last band before scaling breaks (0: no knee)
	Note     string
	KneeNote string
}

// BandScaling compares goodput across concurrency bands. A band's goodput is estimated by
// Little's law from its own tasks: X = c̄ · a / Ē, where c̄ is the mean concurrency at send
// (in-flight + 1), a the band's acceptance rate and Ē its mean E2E in seconds (every task
// that ended, failed ones too, since they held a slot). This holds for open and closed loop
// alike and needs no time windows. Ratio = (X_hi / X_lo) / (c̄_hi / c̄_lo) between the lowest
// and highest band with at least minN tasks: 1 is linear scaling, ~0 is flat. The knee is
// the first band b whose step to the next gains less than half of linear
// ((X_{b+1}/X_b) / (c̄_{b+1}/c̄_b) < 0.5); knee_in_flight is c̄_b. ok is false (with Note
// saying why) with fewer than two eligible bands.
func BandScaling(rs []*record.Record, minN int) (Scaling, bool) {
	m := bandAccs{}
	for _, r := range rs {
		m.add(r)
	}
	return m.scaling(minN)
}

// HOLReading is the head-of-line blocking comparison.
type HOLReading struct {
	Ratio float64
	Note  string
}

// HOL compares the TTFT (from scheduled_at) p50 of short-prompt tasks sent while a
// long-prompt task was waiting for its first token with those sent when none was. Short
// tasks are the task type with the smallest median prompt; a long task is any task whose
// prompt is at least 4× that median; "waiting" is from its first send to its first token
// (or its end if it never got one). ok is false when either set has fewer than minN tasks.
func HOL(rs []*record.Record, minN int) (HOLReading, bool) { return HOLWith(rs, minN, nil) }

// HOLWith is HOL with the long prompts' waits taken from j (a Join built over every task
// of the set rs samples); nil: from rs.
func HOLWith(rs []*record.Record, minN int, j *Join) (HOLReading, bool) {
	var h *HOLIndex
	if j != nil {
		h = j.HOL()
	} else {
		h = NewHOLIndex(rs, rs)
	}
	if h.ShortTask == "" {
		return HOLReading{Note: "no completed tasks"}, false
	}
	if len(h.waits) == 0 {
		return HOLReading{Note: fmt.Sprintf("no task with a prompt ≥ %d× the %q median (%d tokens)", HOLLongOverMedian, h.ShortTask, h.ShortMedian)}, false
	}
	over, apart := NewDist(), NewDist()
	for _, r := range rs {
		if !h.Short(r) || !r.OK() {
			continue
		}
		ttft, ok := r.TTFT()
		if !ok {
			continue
		}
		if h.Blocked(r) {
			over.Add(ttft)
		} else {
			apart.Add(ttft)
		}
	}
	if over.N() < minN || apart.N() < minN || apart.QuantileMs(50) == 0 {
		return HOLReading{Note: fmt.Sprintf("%d short tasks overlapped a long prefill and %d did not; need %d of each", over.N(), apart.N(), minN)}, false
	}
	return HOLReading{
		Ratio: over.QuantileMs(50) / apart.QuantileMs(50),
		Note:  fmt.Sprintf("%q TTFT p50 %.1f ms over %d tasks sent while a prompt ≥ %d tokens waited, %.1f ms over %d others", h.ShortTask, over.QuantileMs(50), over.N(), h.LongMin, apart.QuantileMs(50), apart.N()),
	}, true
}

// HOLLongOverMedian: a prompt at least this many times the short task type's median prompt
// is "long" for head-of-line blocking.
const HOLLongOverMedian = 4

// HOLIndex answers, for head-of-line blocking, whether a short-prompt task was sent while a
// long prompt waited for its first token. Short tasks are those of the task type with the
// smallest median prompt among completed tasks; a long task has a prompt of at least LongMin
// tokens and waits from its first send to its first token (or its end). stats.HOL (the
// client.hol_ttft_ratio signal) and the diagnosis's acceptance impact both use it, so they
// count the same tasks as blocked.
type HOLIndex struct {
	ShortTask   string
	ShortMedian int
	LongMin     int
	waits       []holSpan // merged, sorted by start
}

type holSpan struct{ a, b time.Time }

// NewHOLIndex picks the short task type from typed and the long prompts' waits from waiting
// (the diagnosis looks at one phase's tasks but lets a long prompt of any phase block them).
func NewHOLIndex(typed, waiting []*record.Record) *HOLIndex {
	h := holShort(typed)
	if h.ShortTask == "" {
		return h
	}
	var long []holSpan
	for _, r := range waiting {
		if r.PromptTokens < h.LongMin {
			continue
		}
		if sp, ok := holSpanOf(r); ok {
			long = append(long, sp)
		}
	}
	h.waits = mergeSpans(long)
	return h
}

// holShort picks the short task type (smallest median prompt among completed tasks) and
// LongMin; the index has no waits yet.
func holShort(typed []*record.Record) *HOLIndex {
	h := &HOLIndex{}
	byTask := map[string][]int{}
	for _, r := range typed {
		if r.OK() {
			byTask[r.Task] = append(byTask[r.Task], r.PromptTokens)
		}
	}
	h.ShortMedian = math.MaxInt
	for _, name := range sortedKeys(byTask) {
		ps := byTask[name]
		sort.Ints(ps)
		if med := ps[(len(ps)-1)/2]; med < h.ShortMedian {
			h.ShortTask, h.ShortMedian = name, med
		}
	}
	if h.ShortTask == "" {
		h.ShortMedian = 0
		return h
	}
	h.LongMin = HOLLongOverMedian * max(h.ShortMedian, 1)
	return h
}

// holSpanOf is a long prompt's wait: first send to first token (or its end).
func holSpanOf(r *record.Record) (holSpan, bool) {
	s := r.FirstSentAt
	if s.IsZero() {
		s = r.SentAt
	}
	e := r.FirstTokenAt
	if e.IsZero() {
		e = r.DoneAt
	}
	return holSpan{s, e}, !s.IsZero() && e.After(s)
}

// mergeSpans merges waiting intervals (sorted by start, overlapping ones joined) so each
// lookup is one binary search; nil for none.
func mergeSpans(long []holSpan) []holSpan {
	if len(long) == 0 {
		return nil
	}
	sort.Slice(long, func(i, j int) bool { return long[i].a.Before(long[j].a) })
	out := []holSpan{long[0]}
	for _, x := range long[1:] {
		last := &out[len(out)-1]
		if !x.a.After(last.b) {
			if x.b.After(last.b) {
				last.b = x.b
			}
		} else {
			out = append(out, x)
		}
	}
	return out
}

// Short reports whether r is a short-prompt task (the short type, prompt under LongMin).
func (h *HOLIndex) Short(r *record.Record) bool {
	return h.ShortTask != "" && r.Task == h.ShortTask && r.PromptTokens < h.LongMin
}

// Blocked reports whether r is a short-prompt task sent while a long prompt waited.
func (h *HOLIndex) Blocked(r *record.Record) bool {
	if !h.Short(r) || r.SentAt.IsZero() {
		return false
	}
	s := r.SentAt
	i := sort.Search(len(h.waits), func(i int) bool { return h.waits[i].b.After(s) })
	return i < len(h.waits) && !h.waits[i].a.After(s)
}

// summarySignals adds a summary's headline figures as signals, each noted when it rests on
// fewer samples than the options ask (few); Result.signals and Stream.exactSignals share it.
func summarySignals(add func(name string, v float64, unit string, labels map[string]string, note string), few func(int) string, s evidence.Summary, labels map[string]string) {
	l := s.Latency
	add(evidence.SigTTFTP50, l.TTFTms.P50, "ms", labels, few(l.TTFTms.N))
	add(evidence.SigTTFTP95, l.TTFTms.P95, "ms", labels, few(l.TTFTms.N))
	add(evidence.SigTTFTP99, l.TTFTms.P99, "ms", labels, few(l.TTFTms.N))
	add(evidence.SigTTFTFromSentP50, l.TTFTFromSentMs.P50, "ms", labels, few(l.TTFTFromSentMs.N))
	add(evidence.SigITLP50, l.ITLms.P50, "ms", labels, few(l.ITLms.N))
	add(evidence.SigITLP99, l.ITLms.P99, "ms", labels, few(l.ITLms.N))
	add(evidence.SigTPOTP50, l.TPOTms.P50, "ms", labels, few(l.TPOTms.N))
	add(evidence.SigE2EP50, l.E2Ems.P50, "ms", labels, few(l.E2Ems.N))
	add(evidence.SigE2EP99, l.E2Ems.P99, "ms", labels, few(l.E2Ems.N))
	add(evidence.SigAcceptanceRate, s.AcceptanceRate, "ratio", labels, few(s.Requests))
	add(evidence.SigErrorRate, s.ErrorRate, "ratio", labels, few(s.Requests))
	add(evidence.SigRetryRate, s.RetryRate, "ratio", labels, few(s.Requests))
	add(evidence.SigGoodput, s.GoodputRPS, "1/s", labels, few(s.Requests))
	add(evidence.SigThroughput, s.ThroughputRPS, "1/s", labels, few(s.Requests))
	add(evidence.SigOutputTokensRate, s.OutputTokensPerS, "tokens/s", labels, few(s.Requests))
}
