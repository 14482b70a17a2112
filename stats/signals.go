package stats

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

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
// fewer samples than the options ask (few), for the headline and each task type.
func summarySignals(add func(name string, v float64, unit string, labels map[string]string, note string), few func(int) string, s evidence.Summary, labels map[string]string) {
	l := s.Latency
	// A quantile of no samples is not measured: it is left out, never added as 0, so no
	// bound reads it as met and no headroom is stated against it.
	q := func(name string, v float64, n int) {
		if n > 0 {
			add(name, v, "ms", labels, few(n))
		}
	}
	q(evidence.SigTTFTP50, l.TTFTms.P50, l.TTFTms.N)
	q(evidence.SigTTFTP95, l.TTFTms.P95, l.TTFTms.N)
	q(evidence.SigTTFTP99, l.TTFTms.P99, l.TTFTms.N)
	q(evidence.SigTTFTFromSentP50, l.TTFTFromSentMs.P50, l.TTFTFromSentMs.N)
	q(evidence.SigITLP50, l.ITLms.P50, l.ITLms.N)
	q(evidence.SigITLP99, l.ITLms.P99, l.ITLms.N)
	q(evidence.SigTPOTP50, l.TPOTms.P50, l.TPOTms.N)
	q(evidence.SigE2EP50, l.E2Ems.P50, l.E2Ems.N)
	q(evidence.SigE2EP99, l.E2Ems.P99, l.E2Ems.N)
	add(evidence.SigAcceptanceRate, s.AcceptanceRate, "ratio", labels, few(s.Requests))
	add(evidence.SigErrorRate, s.ErrorRate, "ratio", labels, few(s.Requests))
	add(evidence.SigRetryRate, s.RetryRate, "ratio", labels, few(s.Requests))
	add(evidence.SigGoodput, s.GoodputRPS, "1/s", labels, few(s.Requests))
	add(evidence.SigThroughput, s.ThroughputRPS, "1/s", labels, few(s.Requests))
	add(evidence.SigOutputTokensRate, s.OutputTokensPerS, "tokens/s", labels, few(s.Requests))
}
