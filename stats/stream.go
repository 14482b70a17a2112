package stats

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Stream computes stage 1 from a run's task records given one at a time, in memory that
// does not grow with the number of tasks: mergeable state per phase × task type ×
// concurrency band (HDR histograms, counters), per-second series, and a bounded Sample of
// the records themselves for the figures that need them (medians of per-task shares,
// fits, the multi-step tables).
//
// The state is the one stage-1 accumulator: Compute is the same state over records in
// memory. Every figure it holds is exact over every task — counts, rates, latency
// percentiles and histograms, wire-level figures, band scaling, error and flag rates,
// per-second counts — and the figures that need the records themselves (shape medians and
// fits, the multi-step tables, head-of-line blocking) are read from the sample: every task
// while it holds them all (every run a test or a demo makes), so Result is then Compute
// over them, figure for figure; past the bound they are estimates, said so in a note, with
// stall alignment and head-of-line waits joined against every task (BuildJoins).
type Stream struct {
	opt    Options
	n      int
	end    time.Time
	phases map[string]*phaseAcc
	ser    *seriesAcc
	sample *Sample
	recs   []record.Record
	took   bool
}

// NewStream starts a stream. opt.Start must be the run's start (per-second series count
// from it); sampleBytes bounds the sample per phase (<= 0: DefaultSampleBytes).
func NewStream(opt Options, sampleBytes int64) *Stream {
	if opt.MinSamples <= 0 {
		opt.MinSamples = 20
	}
	return &Stream{opt: opt, phases: map[string]*phaseAcc{}, ser: newSeriesAcc(opt.Start), sample: NewSample(sampleBytes)}
}

// Add takes one task record (a multi-step task with its steps attached).
func (s *Stream) Add(r *record.Record) {
	s.addState(r)
	s.sample.Add(r)
}

// addState adds a record to the state (not the sample).
func (s *Stream) addState(r *record.Record) {
	s.n++
	if r.DoneAt.After(s.end) {
		s.end = r.DoneAt
	}
	p := s.phases[r.Phase]
	if p == nil {
		p = newPhaseAcc()
		s.phases[r.Phase] = p
	}
	var slo func(string) []contract.Objective
	if s.opt.Objectives != nil {
		slo = s.opt.Objectives
	}
	p.add(r, slo)
	s.ser.add(r)
}

// AddOutside offers a record to the sample only: the diagnosis sees it, stage 1 does not
// (an interleaved canary's candidate tasks, whose evidence is their own).
func (s *Stream) AddOutside(r *record.Record) { s.sample.add(r, true) }

// stageOne is the sampled records stage 1 covers.
func (s *Stream) stageOne() []record.Record {
	recs := s.Records()
	if !slices.Contains(s.sample.outside, true) {
		return recs
	}
	out := make([]record.Record, 0, len(recs))
	for i := range recs {
		if !s.sample.outside[i] {
			out = append(out, recs[i])
		}
	}
	return out
}

// Sample is the stream's sample.
func (s *Stream) Sample() *Sample { return s.sample }

// Records returns the sampled records, in the order they came: every task while Complete.
func (s *Stream) Records() []record.Record {
	if !s.took {
		s.recs, s.took = s.sample.Records(), true
	}
	return s.recs
}

// Complete reports whether every task is in the sample.
func (s *Stream) Complete() bool { return s.sample.Complete() }

// HeadSet is the join set of the headline phase: warm, or every task when no task is warm.
func (s *Stream) HeadSet() JoinSet {
	if p := s.phases[record.PhaseWarm]; p != nil && p.n > 0 {
		return JoinSet{Name: "stats.head", In: func(r *record.Record) bool { return r.Phase == record.PhaseWarm }, Requests: true}
	}
	return JoinSet{Name: "stats.head", In: func(*record.Record) bool { return true }, Requests: true}
}

// Phases returns the run phases as Result will (so join sets can be drawn before it).
func (s *Stream) Phases() []evidence.Phase { return s.exact(false).phases }

// Result is stage 1 (see Stream). join is the head set's Join (BuildJoins over HeadSet and
// Records); it is needed only when the sample is not Complete, and nil reads the joined
// signals from the sample alone.
func (s *Stream) Result(join *Join) *Result {
	recs := s.stageOne()
	ptrs := make([]*record.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	if s.Complete() {
		return s.result(ptrs, s.opt.Join, true)
	}
	return s.result(ptrs, join, false)
}

// Compute summarises records: the stream's state over every one of them, and the figures
// that need the records themselves over all of them. It never fails: an empty input gives an
// empty summary and a note.
func Compute(recs []record.Record, opt Options) *Result {
	if opt.MinSamples <= 0 {
		opt.MinSamples = 20
	}
	if len(recs) == 0 {
		return &Result{Start: opt.Start, Notes: []Note{{NoteNoRecords, "no task records: nothing was measured"}}}
	}
	if opt.Start.IsZero() {
		opt.Start = recs[0].ScheduledAt
		for i := range recs {
			if recs[i].ScheduledAt.Before(opt.Start) {
				opt.Start = recs[i].ScheduledAt
			}
		}
	}
	s := &Stream{opt: opt, phases: map[string]*phaseAcc{}, ser: newSeriesAcc(opt.Start)}
	ptrs := make([]*record.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
		s.addState(ptrs[i])
	}
	return s.result(ptrs, opt.Join, true)
}

// result is stage 1: every figure the state holds, exact, and over recs (every task when
// complete, else the sample) the figures that need the records themselves — the shape
// signals the state does not count, the multi-step tables and signals, head-of-line
// blocking (joined against every task through join when given) — and, when complete, the
// per-second series.
func (s *Stream) result(recs []*record.Record, join *Join, complete bool) *Result {
	if s.n == 0 {
		return &Result{Start: s.opt.Start, Notes: []Note{{NoteNoRecords, "no task records: nothing was measured"}}}
	}
	opt := s.opt
	if opt.MinHOLSamples <= 0 {
		opt.MinHOLSamples = 10
	}
	ex := s.exact(true)
	res := &Result{Start: ex.start, End: ex.end, Phases: ex.phases, Workload: ex.workload, Signals: ex.signals, Notes: ex.notes}
	head := recs
	if ex.headPhase != "" {
		head = nil
		for _, r := range recs {
			if r.Phase == ex.headPhase {
				head = append(head, r)
			}
		}
	}
	hw := ex.headWin
	res.Workload.Steps = stepTables(head, hw.dur())

	// The shape signals: the state's counts exact, the rest from the records.
	sh := ShapeWith(head, join)
	exact := Shape{Values: map[string]float64{}, Notes: map[string]string{}}
	ex.head.shape.put(&exact)
	for name := range sh.Values {
		if exactSignal(name) {
			delete(sh.Values, name) // the records have it, every task does not
		}
	}
	for name, v := range exact.Values {
		sh.Values[name], sh.Notes[name] = v, exact.Notes[name]
	}
	for _, name := range sortedKeys(sh.Values) {
		ex.add(name, sh.Values[name], ShapeUnit(name), nil, sh.Notes[name])
	}
	// Multi-step tasks: what later calls cost because of earlier ones, waits between calls.
	sv := StepSignals(head)
	for _, name := range sortedKeys(sv.Values) {
		ex.add(name, sv.Values[name], StepUnit(name), nil, sv.Notes[name])
	}
	// Head-of-line blocking of short prompts by long ones.
	if h, ok := HOLWith(Requests(head), opt.MinHOLSamples, join); ok {
		ex.add(evidence.SigHOLTTFTRatio, h.Ratio, "ratio", nil, h.Note)
	} else if h.Note != "" {
		ex.notes = append(ex.notes, Note{NoteHOLNotComputed, "hol_ttft_ratio not computed: " + h.Note})
	}
	res.Signals, res.Notes = ex.signals, ex.notes
	if complete {
		res.Series = series(recs, res.Start, res.End)
		return res
	}
	res.Notes = append(res.Notes, s.sampleNote(join != nil))
	res.Series = append(ex.series, ex.buckets...)
	return res
}

func (s *Stream) sampleNote(joined bool) Note {
	var parts []string
	for _, p := range s.phaseNames() {
		parts = append(parts, fmt.Sprintf("%s %d of %d", orAll(p), s.sample.Kept(p), s.sample.Seen(p)))
	}
	j := ""
	if joined {
		j = "; stall alignment and head-of-line waits are joined against every task"
	}
	return Note{NoteSampled, fmt.Sprintf("%d tasks are more than the analysis holds in memory: counts, rates, latency percentiles, histograms, error and flag rates and per-second counts cover every task; "+
		"the other shape signals, the multi-step tables and per-second medians are estimates from a seeded uniform sample of tasks (%s)%s", s.n, strings.Join(parts, ", "), j)}
}

func orAll(p string) string {
	if p == "" {
		return "(no phase)"
	}
	return p
}

func sigKey(s evidence.Signal) string { return s.Name + "\x00" + s.Labels["task"] }

// exactSignal reports whether a stage-1 signal is one the stream's state holds exactly.
func exactSignal(name string) bool {
	switch name {
	case evidence.SigTTFTP50, evidence.SigTTFTP95, evidence.SigTTFTP99, evidence.SigTTFTFromSentP50,
		evidence.SigITLP50, evidence.SigITLP99, evidence.SigTPOTP50, evidence.SigE2EP50, evidence.SigE2EP99,
		evidence.SigAcceptanceRate, evidence.SigErrorRate, evidence.SigRetryRate, evidence.SigGoodput,
		evidence.SigThroughput, evidence.SigOutputTokensRate, evidence.SigSLOMissRate,
		evidence.SigHeadersP50, evidence.SigChunkGapP50, evidence.SigTokensPerChunk, evidence.SigScheduleLagP99,
		evidence.SigClientQueueP99, evidence.SigInFlightMean, evidence.SigColdWarmTTFTRatio,
		evidence.SigBandScaling, evidence.SigKneeBand, evidence.SigContextExhaustedRate:
		return true
	}
	return strings.HasPrefix(name, evidence.SigErrorClassRate("")) || strings.HasPrefix(name, evidence.SigFlagRate(""))
}

func (s *Stream) phaseNames() []string {
	return orderPhases(sortedKeys(s.phases))
}

// orderPhases sorts phase names in run order (cold, warm, canary, then any other), in place.
func orderPhases(names []string) []string {
	sort.SliceStable(names, func(i, j int) bool { return phaseRank(names[i]) < phaseRank(names[j]) })
	return names
}

// headlineCountNotes are the notes on how few tasks the headline holds (n tasks, sum their
// summary): no rate over one task, percentiles over few completed ones.
func headlineCountNotes(n int, sum evidence.Summary, minSamples int) []Note {
	var notes []Note
	if n == 1 {
		notes = append(notes, Note{NoteOneTask, "one task: no rate (goodput, throughput, tokens/s) is computed over its own duration"})
	}
	completed := sum.Requests - sum.Failed - sum.Cancelled
	if completed < minSamples {
		notes = append(notes, Note{NoteFewCompleted, fmt.Sprintf("only %d completed tasks in the headline phase (fewer than %d): percentiles are indicative only, not grounds for a verdict", completed, minSamples)})
	} else if completed < 100 {
		notes = append(notes, Note{NoteFewCompleted, fmt.Sprintf("%d completed tasks: p99 rests on the top one or two samples", completed)})
	}
	return notes
}

// fewNote is a signal's note when it rests on fewer than minSamples samples.
func fewNote(minSamples int) func(n int) string {
	return func(n int) string {
		if n < minSamples {
			return fmt.Sprintf("few samples (%d)", n)
		}
		return ""
	}
}

// setSignals adds the signals of one set of the headline phase (window hw): its summary's
// and its SLO miss rate.
func (ex *exactResult) setSignals(a *setAcc, hw window, opt Options, labels map[string]string) {
	few := fewNote(opt.MinSamples)
	summarySignals(ex.add, few, a.summary(hw.dur(), 0), labels)
	if opt.Objectives != nil && a.sloDone > 0 {
		ex.add(evidence.SigSLOMissRate, float64(a.sloMissed)/float64(a.sloDone), "ratio", labels, few(a.sloDone))
	}
}

// exactResult is what the stream's state gives exactly (Compute's figures over every task).
type exactResult struct {
	start, end time.Time
	phases     []evidence.Phase
	headPhase  string
	win        *evidence.Window
	workload   evidence.Workload
	signals    []evidence.Signal
	notes      []Note
	series     []evidence.Series
	buckets    []evidence.Series
	// head is the headline phase's state, headWin its window.
	head    *phaseAcc
	headWin window
}

// add appends a headline signal (none for a value that is not a number).
func (ex *exactResult) add(name string, v float64, unit string, labels map[string]string, note string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	ex.signals = append(ex.signals, evidence.Signal{
		Name: name, Value: round6(v), Unit: unit, Stage: evidence.StageRequestTrace,
		Source: Source, Phase: ex.headPhase, Window: ex.win, Labels: labels, Note: note,
	})
}

// exact is what the accumulated state gives: phases, workload, the notes that count tasks,
// the signals it holds and the per-second series; full false stops after the phases.
func (s *Stream) exact(full bool) *exactResult {
	opt := s.opt
	ex := &exactResult{start: opt.Start, end: s.end}
	if s.n == 0 {
		ex.notes = append(ex.notes, Note{NoteNoRecords, "no task records: nothing was measured"})
		return ex
	}
	names := s.phaseNames()
	for _, p := range names {
		ex.phases = append(ex.phases, s.phases[p].win.phase(p, ex.start))
	}
	clipPhases(ex.phases)
	if !full {
		return ex
	}
	head, headPhase := s.phases[record.PhaseWarm], record.PhaseWarm
	if head == nil || head.n == 0 {
		head, headPhase = newPhaseAcc(), ""
		for _, p := range names {
			head.merge(s.phases[p])
		}
		ex.notes = append(ex.notes, Note{NoteNoWarm, "no warm-phase tasks: the headline summary covers all tasks"})
	}
	hw := head.win
	ex.headPhase, ex.head, ex.headWin = headPhase, head, hw
	w := &ex.workload
	w.Summary = head.set.summary(hw.dur(), opt.CostPerHourUSD)
	w.TokenSource = head.tokens.source()
	w.Objectives = objectiveResults(head, opt)
	ex.notes = append(ex.notes, head.tokens.notes()...)
	w.ByPhase = map[string]evidence.Summary{}
	for _, p := range names {
		w.ByPhase[p] = s.phases[p].set.summary(s.phases[p].win.dur(), opt.CostPerHourUSD)
	}
	w.ByTaskType = map[string]evidence.Summary{}
	for name, a := range head.byTask {
		w.ByTaskType[name] = a.summary(hw.dur(), opt.CostPerHourUSD)
	}
	for _, lo := range sortedInts(head.byBand) {
		name, lo, hi := Band(lo - 1)
		w.ByBand = append(w.ByBand, evidence.BandSummary{Band: name, Lo: lo, Hi: hi, Summary: head.byBand[lo].summary(hw.dur(), opt.CostPerHourUSD)})
	}
	w.Histograms = map[string]evidence.Histogram{}
	for name, d := range map[string]*Dist{"ttft_ms": head.set.ttft, "itl_ms": head.set.itl, "e2e_ms": head.set.e2e} {
		if d.N() > 0 {
			w.Histograms[name] = d.Histogram()
		}
	}
	if head.sent < head.n {
		ex.notes = append(ex.notes, Note{NoteNeverSent, fmt.Sprintf("%d tasks were never sent (cancelled while queued); they count in every rate but in no concurrency band", head.n-head.sent)})
	}
	ex.notes = append(ex.notes, headlineCountNotes(head.n, w.Summary, opt.MinSamples)...)
	if n := head.summarized; n > 0 {
		ex.notes = append(ex.notes, summarizedNote(n, head.chunks > 0))
	}
	s.exactSignals(ex, head, hw)
	ex.series, ex.buckets = s.ser.result(ex.start, ex.end)
	return ex
}

// exactSignals adds the headline signals the state holds (result adds the rest).
func (s *Stream) exactSignals(ex *exactResult, head *phaseAcc, hw window) {
	opt := s.opt
	ex.win = &evidence.Window{StartS: secs(hw.start.Sub(ex.start)), EndS: secs(hw.end.Sub(ex.start))}
	add, few := ex.add, fewNote(opt.MinSamples)
	ex.setSignals(head.set, hw, opt, nil)
	for _, name := range sortedKeys(head.byTask) {
		ex.setSignals(head.byTask[name], hw, opt, map[string]string{"task": name})
	}
	if head.headers.N() > 0 {
		add(evidence.SigHeadersP50, head.headers.QuantileMs(50), "ms", nil, few(head.headers.N()))
	}
	if head.gaps.N() > 0 {
		add(evidence.SigChunkGapP50, head.gaps.QuantileMs(50), "ms", nil, few(head.gaps.N()))
	}
	if head.chunks > 0 {
		add(evidence.SigTokensPerChunk, float64(head.chunkTokens)/float64(head.chunks), "tokens", nil, few(head.chunks))
	}
	if lag := head.set.lag; lag.N() > 0 {
		add(evidence.SigScheduleLagP99, lag.QuantileMs(99), "ms", nil, few(lag.N()))
	}
	if head.queued {
		add(evidence.SigClientQueueP99, head.queue.QuantileMs(99), "ms", nil, few(head.queue.N()))
	}
	if d := hw.dur(); d > 0 {
		add(evidence.SigInFlightMean, head.busyIn(hw).Seconds()/d.Seconds(), "count", nil, "")
	}
	if c, w := s.phases[record.PhaseCold], s.phases[record.PhaseWarm]; c != nil && w != nil {
		cold, warm := c.set.ttft, w.set.ttft
		if cold.N() > 0 && warm.N() > 0 && warm.QuantileMs(50) > 0 {
			add(evidence.SigColdWarmTTFTRatio, cold.QuantileMs(50)/warm.QuantileMs(50), "ratio", nil,
				joinNote(few(min(cold.N(), warm.N())), fmt.Sprintf("cold p50 %.1f ms over %d tasks, warm p50 %.1f ms over %d", cold.QuantileMs(50), cold.N(), warm.QuantileMs(50), warm.N())))
		}
	}
	if sc, ok := head.bands.scaling(opt.MinSamples); ok {
		add(evidence.SigBandScaling, sc.Ratio, "ratio", nil, sc.Note)
		if sc.Knee > 0 {
			add(evidence.SigKneeBand, sc.Knee, "count", nil, sc.KneeNote)
		}
	} else if sc.Note != "" {
		ex.notes = append(ex.notes, Note{NoteBandScaling, "band scaling not computed: " + sc.Note})
	}
}

// summarizedNote says why the event-shape signals leave out n completed requests (all of
// them when others is false): the tool they were imported from kept only their first and
// last token's times.
func summarizedNote(n int, others bool) Note {
	what := "tokens per event, event gaps, coalesced events and decode stalls"
	why := fmt.Sprintf("%d completed requests were imported from a tool that kept only their first and last token's times (flag %s): their content events are not the stream's", n, record.FlagEventsSummarized)
	if !others {
		return Note{NoteEventsSummarized, why + ", so " + what + " are not measured; their TTFT, TPOT and E2E are the tool's, their ITLs each token's mean gap between the two"}
	}
	return Note{NoteEventsSummarized, why + ", so " + what + " are of the other requests only; their TTFT, ITL, TPOT and E2E count"}
}

func sortedInts[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

// phaseAcc is the state of one phase (the headline when it is warm).
type phaseAcc struct {
	n             int
	win           window
	set           *setAcc
	byTask        map[string]*setAcc
	byBand        map[int]*setAcc
	tokens        tokenSources
	sent          int
	headers, gaps *Dist
	queue         *Dist
	queued        bool
	chunks        int
	chunkTokens   int
	// summarized counts the completed requests whose content events an importing tool
	// summarized (record.FlagEventsSummarized), left out of chunks, chunkTokens and gaps.
	summarized int
	// busy is the in-flight time of requests inside the phase's window as it stood when
	// they came (it only grows, so they stay inside); the others are clipped at the end.
	busy      time.Duration
	irregular []holSpan
	bands     bandAccs
	shape     shapeCounts
}

func newPhaseAcc() *phaseAcc {
	return &phaseAcc{set: newSetAcc(), byTask: map[string]*setAcc{}, byBand: map[int]*setAcc{},
		headers: NewDist(), gaps: NewDist(), queue: NewDist(), bands: bandAccs{}}
}

func (p *phaseAcc) add(r *record.Record, slo func(string) []contract.Objective) {
	p.win.add(r, p.n == 0)
	p.n++
	p.set.add(r, slo)
	t := p.byTask[r.Task]
	if t == nil {
		t = newSetAcc()
		p.byTask[r.Task] = t
	}
	t.add(r, slo)
	if r.Attempts > 0 {
		p.sent++
		_, lo, _ := Band(r.InFlight)
		b := p.byBand[lo]
		if b == nil {
			b = newSetAcc()
			p.byBand[lo] = b
		}
		b.add(r, nil)
		p.queue.AddUS(r.ClientQueueUS)
	}
	if r.ClientQueueUS > 0 {
		p.queued = true
	}
	p.tokens.add(r)
	for _, q := range r.Requests() {
		if q.OK() {
			if v, ok := q.TimeToHeaders(); ok {
				p.headers.Add(v)
			}
			if q.HasFlag(record.FlagEventsSummarized) {
				// Its events are a tool's summary, not the stream's: no event shape.
				p.summarized++
			} else {
				q.ChunkGaps(p.gaps.Add)
				p.chunks += len(q.ChunkTokens)
				for _, k := range q.ChunkTokens {
					p.chunkTokens += k
				}
			}
		}
		s := q.FirstSentAt
		if s.IsZero() {
			s = q.SentAt
		}
		if s.IsZero() || q.DoneAt.IsZero() {
			continue
		}
		if !s.Before(p.win.start) && !q.DoneAt.After(p.win.end) {
			if q.DoneAt.After(s) {
				p.busy += q.DoneAt.Sub(s)
			}
		} else {
			p.irregular = append(p.irregular, holSpan{s, q.DoneAt})
		}
	}
	p.bands.add(r)
	p.shape.add(r)
}

// merge adds another phase's state (the headline of a run without a warm phase is every
// phase merged).
func (p *phaseAcc) merge(o *phaseAcc) {
	if o.n > 0 {
		p.win.merge(o.win, p.n == 0)
	}
	p.n += o.n
	p.set.merge(o.set)
	for k, a := range o.byTask {
		if p.byTask[k] == nil {
			p.byTask[k] = newSetAcc()
		}
		p.byTask[k].merge(a)
	}
	for k, a := range o.byBand {
		if p.byBand[k] == nil {
			p.byBand[k] = newSetAcc()
		}
		p.byBand[k].merge(a)
	}
	p.tokens.merge(o.tokens)
	p.sent += o.sent
	p.headers.Merge(o.headers)
	p.gaps.Merge(o.gaps)
	p.queue.Merge(o.queue)
	p.queued = p.queued || o.queued
	p.chunks += o.chunks
	p.chunkTokens += o.chunkTokens
	p.summarized += o.summarized
	p.busy += o.busy
	p.irregular = append(p.irregular, o.irregular...)
	p.bands.merge(o.bands)
	p.shape.merge(&o.shape)
}

// tokenSources are where a set's completed tasks took their output token counts from.
type tokenSources struct {
	srcs      map[string]bool
	estimated int // counted from content events (no usage block)
}

func (t *tokenSources) add(r *record.Record) {
	if !r.OK() || r.TokenSource == "" {
		return
	}
	if t.srcs == nil {
		t.srcs = map[string]bool{}
	}
	t.srcs[r.TokenSource] = true
	if r.TokenSource == record.TokensEstimate {
		t.estimated++
	}
}

func (t *tokenSources) merge(o tokenSources) {
	for k := range o.srcs {
		if t.srcs == nil {
			t.srcs = map[string]bool{}
		}
		t.srcs[k] = true
	}
	t.estimated += o.estimated
}

// source is the workload's token_source: the one source, "mixed", or "" for none.
func (t *tokenSources) source() string {
	switch len(t.srcs) {
	case 0:
		return ""
	case 1:
		for k := range t.srcs {
			return k
		}
	}
	return "mixed"
}

// notes says how many completed tasks had their output tokens estimated.
func (t *tokenSources) notes() []Note {
	if t.estimated == 0 {
		return nil
	}
	return []Note{{NoteTokenEstimate, fmt.Sprintf("%d completed tasks came without a usage block: their output tokens are counted as one per content event (token_source estimate), which undercounts multi-token chunks", t.estimated)}}
}

// busyIn is busyTime over the phase's requests within w.
func (p *phaseAcc) busyIn(w window) time.Duration {
	sum := p.busy
	for _, x := range p.irregular {
		a, b := maxTime(x.a, w.start), minTime(x.b, w.end)
		if b.After(a) {
			sum += b.Sub(a)
		}
	}
	return sum
}

// seriesAcc holds the per-second series state: counts and in-flight time per second, and
// the TTFT and ITL values of each second in bounded stores.
type seriesAcc struct {
	start     time.Time
	secs      map[int]*secAcc
	busy      *busyAcc
	ttft, itl *valueStore
}

type secAcc struct {
	comp, good float64 // stats: completed (ok) and accepted tasks ending in the second
	done, acc  float64 // diagnose's buckets: non-cancelled tasks ending in it, accepted ones
}

func newSeriesAcc(start time.Time) *seriesAcc {
	return &seriesAcc{start: start, secs: map[int]*secAcc{}, busy: newBusyAcc(start), ttft: newValueStore(valueBudget), itl: newValueStore(valueBudget)}
}

func (a *seriesAcc) sec(k int) *secAcc {
	x := a.secs[k]
	if x == nil {
		x = &secAcc{}
		a.secs[k] = x
	}
	return x
}

// index is the second a time falls in, truncated toward zero as series() does.
func (a *seriesAcc) index(t time.Time) int { return int(t.Sub(a.start) / time.Second) }

func (a *seriesAcc) add(r *record.Record) {
	if r.DoneAt.IsZero() {
		return
	}
	k := a.index(r.DoneAt)
	x := a.sec(k)
	if r.OK() {
		x.comp++
	}
	if r.Accepted {
		x.good++
	}
	cancelled := r.Status == record.StatusCancelled
	if !cancelled {
		x.done++
		if r.Accepted {
			x.acc++
		}
		prio := Priority(r)
		if v, ok := r.TTFT(); ok {
			a.ttft.add(k, v, r.OK(), valuePrio(prio, 0), 1)
		}
		j := 0
		r.ITLRuns(func(d time.Duration, c int) {
			j++
			a.itl.add(k, d, r.OK(), valuePrio(prio, j), c)
		})
	}
	a.busy.add(r)
}

// result builds series()'s five series over [start, end] and, beside them, the diagnosis's
// bucketed client series (what diagnose.addClientSeries would compute from every record).
func (a *seriesAcc) result(start, end time.Time) (ser, buckets []evidence.Series) {
	w, n := seriesLayout(start, end)
	if n > 0 {
		comp := make([]float64, n)
		good := make([]float64, n)
		done, acc := make([]float64, n), make([]float64, n)
		ttfts := make([][]float64, n)
		itls := make([]itlValues, n)
		clamp := func(k int) int { return min(max(k, 0)/w, n-1) }
		for _, k := range sortedInts(a.secs) {
			x := a.secs[k]
			c := clamp(k)
			comp[c] += x.comp
			good[c] += x.good
			done[c] += x.done
			acc[c] += x.acc
		}
		a.ttft.each(func(k int, v time.Duration, ok bool, _ int) {
			if ok {
				ttfts[clamp(k)] = append(ttfts[clamp(k)], float64(v.Microseconds())/1000)
			}
		})
		a.itl.each(func(k int, v time.Duration, ok bool, c int) {
			if ok {
				itls[clamp(k)].add(float64(v.Microseconds())/1000, c)
			}
		})
		ser = perSecondSeries(start, end, w, comp, good, done, acc, a.busy.windows(w, n), ttfts, itls)
	}
	return ser, a.buckets(start, end)
}

// buckets is what diagnose's addClientSeries computes from every record (BucketSeries),
// from the per-second state.
func (a *seriesAcc) buckets(start, end time.Time) []evidence.Series {
	e := 0.0
	if end.After(start) {
		e = end.Sub(start).Seconds()
	}
	if e <= 0 {
		return nil
	}
	width, n := BucketLayout(e)
	wi := int(width)
	ttft := make([][]float64, n)
	itl := make([]itlValues, n)
	done := make([]float64, n)
	good := make([]float64, n)
	bucket := func(k int) (int, bool) {
		b := k / wi
		return b, b >= 0 && b < n
	}
	for k, x := range a.secs {
		if b, ok := bucket(k); ok {
			done[b] += x.done
			good[b] += x.acc
		}
	}
	a.ttft.each(func(k int, v time.Duration, _ bool, _ int) {
		if b, ok := bucket(k); ok {
			ttft[b] = append(ttft[b], v.Seconds()*1000)
		}
	})
	a.itl.each(func(k int, v time.Duration, _ bool, c int) {
		if b, ok := bucket(k); ok {
			itl[b].add(v.Seconds()*1000, c)
		}
	})
	return BucketSeries(e, width, done, good, ttft, itl)
}

// valueBudget bounds each value store: 1 M runs, 8 MiB while every run is one value (an
// hour at 1,000 tasks/s of 16 one-token events is 58 M ITLs; each second keeps a uniform
// sample of its own), 12 MiB when runs carry counts.
const valueBudget = 1 << 20

// valueStore keeps per-second latency values in bounded memory by the same threshold rule
// as Sample: a run of equal values (one content event's tokens) is kept when its priority
// (from its task's and its position) is at most the threshold, which halves when the store
// is full, so what is kept depends on the values alone, not their order. Each run is kept
// or dropped whole, with its count: every token has the same chance to be kept, so the
// kept counts weigh a uniform sample of the tokens, at a cost per event.
type valueStore struct {
	budget int
	tau    uint64
	n      int
	bySec  map[int]*secValues
}

// secValues are one second's kept runs: packed values (below) and, once a run of more than
// one value is kept, each run's count (nil while every count is 1, as with one token per
// event, so the common case costs 8 bytes a run).
type secValues struct {
	e []uint64
	n []uint32
}

// A stored value packs the latency (ns, offset by valueOffset, 42 bits: ±36 min), the
// completed flag (1 bit) and a 21-bit priority.
const (
	valueBits   = 42
	valueOffset = int64(1) << (valueBits - 1)
	prioBits    = 21
)

func newValueStore(budget int) *valueStore {
	return &valueStore{budget: budget, tau: 1<<prioBits - 1, bySec: map[int]*secValues{}}
}

func valuePrio(taskPrio uint64, j int) uint64 {
	return mix64(taskPrio+uint64(j)*0x9e3779b97f4a7c15) >> (64 - prioBits)
}

// add offers a run of n values v (n is at most record.MaxTokens, so it fits 32 bits).
func (s *valueStore) add(k int, v time.Duration, ok bool, prio uint64, n int) {
	if prio > s.tau || n <= 0 {
		return
	}
	x := min(max(int64(v)+valueOffset, 0), 1<<valueBits-1)
	e := uint64(x)<<(64-valueBits) | prio
	if ok {
		e |= 1 << prioBits
	}
	sv := s.bySec[k]
	if sv == nil {
		sv = &secValues{}
		s.bySec[k] = sv
	}
	if n != 1 && sv.n == nil {
		sv.n = make([]uint32, len(sv.e), cap(sv.e))
		for i := range sv.n {
			sv.n[i] = 1
		}
	}
	sv.e = append(sv.e, e)
	if sv.n != nil {
		sv.n = append(sv.n, uint32(min(n, record.MaxTokens)))
	}
	s.n++
	for s.n > s.budget && s.tau > 0 {
		s.tau >>= 1
		s.n = 0
		for _, sv := range s.bySec {
			j := 0
			for i, e := range sv.e {
				if e&(1<<prioBits-1) <= s.tau {
					sv.e[j] = e
					if sv.n != nil {
						sv.n[j] = sv.n[i]
					}
					j++
				}
			}
			sv.e = sv.e[:j]
			if sv.n != nil {
				sv.n = sv.n[:j]
			}
			s.n += j
		}
	}
}

func (s *valueStore) each(f func(k int, v time.Duration, ok bool, n int)) {
	for _, k := range sortedInts(s.bySec) {
		sv := s.bySec[k]
		for i, e := range sv.e {
			n := 1
			if sv.n != nil {
				n = int(sv.n[i])
			}
			f(k, time.Duration(int64(e>>(64-valueBits))-valueOffset), e&(1<<prioBits) != 0, n)
		}
	}
}
