package scrape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// store holds every endpoint's samples turned into normalized per-replica aggregates, with
// times in seconds since base. It is built by two streaming passes over the samples (scan,
// then ingest, each sample seen once per pass and then dropped), so its size is bounded by
// the series and windows, never by the run's length:
//   - per window (a phase, known before the second pass), a gauge's sum, count and max, a
//     failed sample's count and the first error, and the late intervals;
//   - per raw series, only the points next to a window's edge or middle (interpolation there
//     is exact with them: see thin) and the last one;
//   - per chart, at most maxChartPoints buckets (see chart).
type store struct {
	base      time.Time
	endpoints []*epData
	byID      map[string]*epData
	notes     map[string][]string // by kind
	wins      []window            // the windows signals are computed over; window.i indexes them
	lo, hi    time.Time           // first and last attempt of any endpoint
	skippedEP int                 // samples of endpoints past maxEndpoints
}

type failure struct {
	t   float64
	err string
}

type epData struct {
	id       string
	host     string // host:port, for labels
	kind     string
	origin   string
	ad       *Adapter
	start    float64 // first ok sample
	end      float64 // last ok sample
	interval float64 // median spacing of attempts
	chosen   map[string][]string
	chosenT  map[string]*target
	replicas map[string]*replica
	order    []string
	resets   []string        // the first maxResetNotes counter resets, described
	nResets  int             // every counter reset
	series   int             // raw series stored (counters, histograms)
	dropped  int             // raw series not stored: past maxStoreSeries
	percent  map[string]bool // ratio quantities this endpoint reports as 0..100

	// First pass (scan).
	nAttempts, nFailures, nOK int
	firstFail                 failure
	firstFailT                time.Time
	startT, endT              time.Time
	spacings                  []float64 // between attempts, the first maxSpacings
	names                     map[string]bool
	namesDropped              int
	recorded                  string // the engine the sampler was told (--engine)
	order1                    clock
	outOfOrder                int

	// Second pass (ingest).
	order2      clock
	edges       []float64 // sorted: every window's clipped edges and middle
	prevT       float64   // the previous ok sample (NaN before the first)
	prevAttempt float64
	winFailed   []int
	winFirst    []string
	winLate     []int
	lastOK      *Sample
	fold        map[string]*chart // gauges of the replicas past maxChartReplicas: max at each sample
	foldRate    map[string]*chart // their counter rates: sum
}

// clock refuses a sample older than the endpoint's previous one: one endpoint is sampled
// in order, so an older sample is a file that was not written by one sampler.
type clock struct {
	last time.Time
	seen bool
}

func (c *clock) accept(t time.Time) bool {
	if c.seen && t.Before(c.last) {
		return false
	}
	c.last, c.seen = t, true
	return true
}

type replica struct {
	key      string
	ep       *epData
	label    string // set once all endpoints are known
	idx      int    // order of creation on its endpoint
	gauges   map[string]*gseries
	counters map[string]map[string]*cseries
	hists    map[string]map[string]*hseries
	rates    map[string]*chart  // counter rates between samples (preemptions, tokens)
	pend     map[string]float64 // increase of a rate quantity since the previous sample
}

// gseries is one replica's gauge: per-window aggregates, the points interpolation needs,
// the largest value (a percent is told by it) and the chart.
type gseries struct {
	win   []gacc
	pts   thin
	top   float64
	n     int
	chart *chart
}

type gacc struct {
	sum, max float64
	n        int
}

// cseries is one raw counter series made monotonic: on a decrease (an engine restart)
// the value before the reset is carried as an offset and the new value counts from 0,
// which is what Prometheus rate()/increase() assume.
type cseries struct {
	pts       thin
	last, off float64
}

// hseries is one raw histogram series, made monotonic the same way as cseries. Its
// points hold the cumulative bucket counts, then count and sum.
type hseries struct {
	le   []float64
	pts  thin
	last hvec
	off  hvec
}

type hvec struct {
	b        []float64
	cnt, sum float64
}

// Bounds of the store, so a page whose labels change at every scrape (or a counter that
// falls at every scrape) cannot grow it without end.
const (
	// maxStoreSeries: raw counter and histogram series kept per endpoint over a run. A real
	// engine keeps its series; twice a full page (MaxPageSamples) of distinct ones is churn.
	maxStoreSeries = 2 * MaxPageSamples
	// maxResetNotes: counter resets described in notes (all are counted).
	maxResetNotes = 16
	// maxEndpoints: endpoints read from one samples file. A run samples a handful (one per
	// engine replica and exporter); more is a file pel did not write.
	maxEndpoints = 1024
	// maxNames: family names per endpoint kept for engine detection (vLLM has ~100).
	maxNames = 4 * 1024
	// maxSpacings: attempt spacings the median sampling interval is taken from (18 h at 1 s).
	maxSpacings = 1 << 16
)

func (ep *epData) addReset(desc string) {
	ep.nResets++
	if len(ep.resets) < maxResetNotes {
		ep.resets = append(ep.resets, desc)
	}
}

// newSeries reports whether one more raw series (or replica) may be stored, counting the
// refusals.
func (ep *epData) newSeries() bool {
	if ep.series >= maxStoreSeries {
		ep.dropped++
		return false
	}
	ep.series++
	return true
}

// blankDCGM is where dcgm-exporter's "blank" sentinels start (DCGM_FT_INT64_BLANK =
// 0x7ffffff0 << 32 region, e.g. 9223372036854775794): not a measurement.
const blankDCGM = 9.2e18

func hostOf(ep string) string {
	if strings.HasPrefix(ep, "prom:") {
		return strings.TrimPrefix(ep, "prom:")
	}
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}

// newStore starts a store; base zero means the first sample's time (set by the scan).
func newStore(base time.Time) *store {
	return &store{base: base, byID: map[string]*epData{}, notes: map[string][]string{}}
}

// head is what the first pass reads of a sample: no values.
type head struct {
	T        time.Time `json:"t"`
	Endpoint string    `json:"ep"`
	Kind     string    `json:"kind"`
	Origin   string    `json:"origin"`
	Engine   string    `json:"engine"`
	OK       bool      `json:"ok"`
	Err      string    `json:"err"`
	Families []struct {
		Name string `json:"n"`
		Type string `json:"y"`
	} `json:"fam"`
}

func headOf(s *Sample) *head {
	h := &head{T: s.T, Endpoint: s.Endpoint, Kind: s.Kind, Origin: s.Origin, Engine: s.Engine, OK: s.OK, Err: s.Err}
	for i := range s.Families {
		h.Families = append(h.Families, struct {
			Name string `json:"n"`
			Type string `json:"y"`
		}{s.Families[i].Name, s.Families[i].Type})
	}
	return h
}

// eachHead is EachSample for the first pass: the same lines, the same errors for a line
// that is not JSON or names no time or endpoint.
func eachHead(r io.Reader, f func(*head)) error {
	return eachSample(r, func(line int, b []byte, last bool) error {
		var h head
		if jerr := json.Unmarshal(b, &h); jerr != nil {
			if last {
				return errTorn
			}
			return &lineError{line, jerr}
		}
		if h.Endpoint == "" || h.T.IsZero() {
			return &lineError{line, errors.New(`sample without "t" or "ep"`)}
		}
		f(&h)
		return nil
	})
}

// scan is the first pass over one sample: which endpoints, when each was sampled and
// failed, and the family names the engine is detected from.
func (st *store) scan(s *head) {
	ep := st.byID[s.Endpoint]
	if ep == nil {
		if len(st.endpoints) >= maxEndpoints {
			st.skippedEP++
			return
		}
		ep = &epData{id: s.Endpoint, host: hostOf(s.Endpoint), kind: s.Kind, origin: s.Origin, replicas: map[string]*replica{}, names: map[string]bool{}}
		if ep.kind != KindDCGM {
			ep.kind = KindEngine
		}
		st.byID[s.Endpoint] = ep
		st.endpoints = append(st.endpoints, ep)
	}
	prev, had := ep.order1.last, ep.order1.seen
	if !ep.order1.accept(s.T) {
		ep.outOfOrder++
		return
	}
	if had && len(ep.spacings) < maxSpacings {
		ep.spacings = append(ep.spacings, s.T.Sub(prev).Seconds())
	}
	ep.nAttempts++
	if st.lo.IsZero() || s.T.Before(st.lo) {
		st.lo = s.T
	}
	if s.T.After(st.hi) {
		st.hi = s.T
	}
	if ep.recorded == "" {
		ep.recorded = s.Engine
	}
	if !s.OK {
		if ep.nFailures == 0 {
			ep.firstFail.err, ep.firstFailT = s.Err, s.T
		}
		ep.nFailures++
		return
	}
	if ep.nOK == 0 {
		ep.startT = s.T
	}
	ep.endT = s.T
	ep.nOK++
	for _, f := range s.Families {
		names := []string{f.Name}
		if f.Type == "histogram" || f.Type == "gaugehistogram" || f.Type == "summary" {
			// Histogram parts can be targets of their own (TGI token counts).
			names = append(names, f.Name+"_sum", f.Name+"_count")
		}
		for _, n := range names {
			switch {
			case ep.names[n]:
			case len(ep.names) >= maxNames:
				ep.namesDropped++
			default:
				ep.names[n] = true
			}
		}
	}
}

// prepare ends the first pass: the time base, the windows (one per phase, or one over
// every attempt), each endpoint's engine, chosen families and the edges it keeps points
// next to. override forces the engine adapter of every engine endpoint.
func (st *store) prepare(phases []evidence.Phase, override string) error {
	var forced *Adapter
	if override != "" {
		a, err := AdapterFor(override)
		if err != nil {
			return err
		}
		forced = a
	}
	if st.base.IsZero() {
		st.base = st.lo
	}
	rel := func(t time.Time) float64 { return t.Sub(st.base).Seconds() }
	for _, p := range phases {
		st.wins = append(st.wins, window{p.StartS, p.EndS, len(st.wins), p.Name, p.ArrivalsEndS})
	}
	if len(phases) == 0 && st.hi.After(st.lo) {
		st.wins = append(st.wins, window{rel(st.lo), rel(st.hi), 0, "", 0})
	}
	if st.skippedEP > 0 {
		st.notes[KindEngine] = append(st.notes[KindEngine], fmt.Sprintf("%d samples of endpoints past pel's bound of %d endpoints per file left out", st.skippedEP, maxEndpoints))
	}
	for _, ep := range st.endpoints {
		id := ep.id
		ep.prevT, ep.prevAttempt = math.NaN(), math.NaN()
		ep.winFailed, ep.winFirst, ep.winLate = make([]int, len(st.wins)), make([]string, len(st.wins)), make([]int, len(st.wins))
		ep.interval = medianSpacing(ep.spacings)
		ep.spacings = nil
		if ep.nFailures > 0 {
			ep.firstFail.t = rel(ep.firstFailT)
		}
		if ep.outOfOrder > 0 {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: %d samples older than the one before them left out (one sampler writes an endpoint in time order)", id, ep.outOfOrder))
		}
		if ep.nOK == 0 {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: no successful sample (%d attempts failed; first error: %s)", id, ep.nFailures, firstErr(ep)))
			continue
		}
		ep.start, ep.end = rel(ep.startT), rel(ep.endT)
		names := ep.names
		var fromFile *Adapter
		if ep.recorded != "" && forced == nil {
			a, err := AdapterFor(ep.recorded)
			if err != nil {
				st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: recorded engine: %v; auto-detecting", id, err))
			}
			fromFile = a
		}
		switch {
		case ep.kind == KindDCGM:
			ep.ad, _ = AdapterFor("dcgm")
		case forced != nil:
			ep.ad = forced
		case fromFile != nil:
			ep.ad = fromFile
		default:
			ep.ad = Detect(names)
			if ep.ad != nil && ep.ad.Kind == KindDCGM {
				// DCGM names on an endpoint given as an engine: read it as DCGM.
				ep.kind = KindDCGM
			}
		}
		if ep.ad == nil {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: no known engine metrics among %d families; pass the engine explicitly (--engine) if it is one of %s", id, len(names), strings.Join(Engines(), ", ")))
			continue
		}
		if ep.namesDropped > 0 {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: %d family names past pel's bound of %d left out of engine detection", id, ep.namesDropped, maxNames))
		}
		// Per quantity, the first target with a family on the page wins, and within it the
		// first family present (or all present, for targets that add families up).
		ep.chosen = map[string][]string{}
		ep.chosenT = map[string]*target{}
		for i := range ep.ad.targets {
			t := &ep.ad.targets[i]
			if ep.chosenT[t.q] != nil {
				continue
			}
			var fams []string
			for _, f := range t.fams {
				if names[f] {
					fams = append(fams, f)
					if !t.all {
						break
					}
				}
			}
			if len(fams) > 0 {
				ep.chosen[t.q], ep.chosenT[t.q] = fams, t
			}
		}
		for _, w := range st.wins {
			ep.edges = append(ep.edges, (w.a+w.b)/2)
			if cw, ok := ep.clip(w); ok {
				ep.edges = append(ep.edges, cw.a, cw.b)
			}
		}
		sort.Float64s(ep.edges)
		ep.fold, ep.foldRate = map[string]*chart{}, map[string]*chart{}
	}
	return nil
}

// ingest is the second pass over one sample: its values go into the aggregates of every
// window, the kept points and the charts; the sample itself is not kept (but the last good
// one of each endpoint, which the engine configuration is read from).
func (st *store) ingest(s *Sample) {
	ep := st.byID[s.Endpoint]
	if ep == nil || !ep.order2.accept(s.T) {
		return
	}
	t := s.T.Sub(st.base).Seconds()
	if a := ep.prevAttempt; !math.IsNaN(a) && ep.interval > 0 && t-a > 1.5*ep.interval {
		for i, w := range st.wins {
			if t >= w.a && a <= w.b {
				ep.winLate[i]++
			}
		}
	}
	ep.prevAttempt = t
	if !s.OK {
		for i, w := range st.wins {
			if t >= w.a && t <= w.b {
				if ep.winFailed[i] == 0 {
					ep.winFirst[i] = fmt.Sprintf("%s at %+.1f s", s.Err, t)
				}
				ep.winFailed[i]++
			}
		}
		return
	}
	if ep.ad == nil {
		return
	}
	ep.lastOK = s
	ep.ingestSample(s, t, st.wins)
}

func firstErr(ep *epData) string {
	if ep.nFailures == 0 {
		return "none"
	}
	return ep.firstFail.err
}

func medianSpacing(d []float64) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Float64s(d)
	return d[len(d)/2]
}

// famIndex gives scalar and histogram access to one sample's families.
type famIndex map[string]*Family

func indexFamilies(s *Sample) famIndex {
	m := make(famIndex, len(s.Families))
	for i := range s.Families {
		m[s.Families[i].Name] = &s.Families[i]
	}
	return m
}

// scalars returns the labelled scalar values of family name; X_sum / X_count read the
// parts of a histogram or summary X.
func (fi famIndex) scalars(name string) []labelled {
	var out []labelled
	if f, ok := fi[name]; ok {
		for _, m := range f.Metrics {
			switch {
			case m.V != nil:
				out = append(out, labelled{m.Labels, float64(*m.V)})
			case m.C != nil && (f.Type == "histogram" || f.Type == "summary" || f.Type == "gaugehistogram"):
				// A histogram named as a scalar target: its count.
				out = append(out, labelled{m.Labels, float64(*m.C)})
			}
		}
		return out
	}
	for _, part := range []string{"_sum", "_count"} {
		if !strings.HasSuffix(name, part) {
			continue
		}
		if f, ok := fi[strings.TrimSuffix(name, part)]; ok {
			for _, m := range f.Metrics {
				p := m.S
				if part == "_count" {
					p = m.C
				}
				if p != nil {
					out = append(out, labelled{m.Labels, float64(*p)})
				}
			}
		}
	}
	return out
}

type labelled struct {
	labels map[string]string
	v      float64
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (ep *epData) replicaKey(labels map[string]string) string {
	var parts []string
	for i, l := range ep.ad.Replica {
		v, ok := labels[l]
		if !ok || v == "" {
			continue
		}
		if i == 0 {
			parts = append(parts, v)
		} else {
			parts = append(parts, l+"="+v)
		}
	}
	return strings.Join(parts, "/")
}

// replica returns the replica of key, created on first use; nil past maxStoreSeries.
func (ep *epData) replica(key string) *replica {
	r, ok := ep.replicas[key]
	if !ok && !ep.newSeries() {
		return nil
	}
	if !ok {
		r = &replica{key: key, ep: ep, idx: len(ep.order), gauges: map[string]*gseries{}, counters: map[string]map[string]*cseries{},
			hists: map[string]map[string]*hseries{}, rates: map[string]*chart{}, pend: map[string]float64{}}
		ep.replicas[key] = r
		ep.order = append(ep.order, key)
	}
	return r
}

// maxChartReplicas: replicas of one endpoint drawn one by one; the others are folded into
// one line per quantity (their max for a gauge, their sum for a rate), labelled so.
const maxChartReplicas = 16

// folded reports whether r is drawn inside its endpoint's fold.
func (r *replica) folded() bool { return r.idx >= maxChartReplicas }

// rateQuantities are the counters charted as a rate between samples.
var rateQuantities = []string{qPreemptions, qGenTokens}

func isRateQuantity(q string) bool { return q == qPreemptions || q == qGenTokens }

// ingestSample stores the chosen targets of one good sample (samples come in time order).
func (ep *epData) ingestSample(s *Sample, t float64, wins []window) {
	fi := indexFamilies(s)
	for i := range ep.ad.targets {
		tg := &ep.ad.targets[i]
		if ep.chosenT[tg.q] != tg {
			continue
		}
		switch tg.kind {
		case kGauge:
			ep.ingestGauge(tg, fi, t, wins)
		case kCounter:
			ep.ingestCounter(tg, fi, t, ep.prevT)
		case kHist:
			ep.ingestHist(tg, fi, t, ep.prevT)
		}
	}
	// Counter rates over the interval since the previous sample, for the charts.
	if !math.IsNaN(ep.prevT) && t > ep.prevT {
		for _, q := range rateQuantities {
			fold, nfold := 0.0, 0
			for _, k := range ep.order {
				r := ep.replicas[k]
				if len(r.counters[q]) == 0 {
					continue
				}
				v := r.pend[q] / (t - ep.prevT)
				if r.folded() {
					fold += v
					nfold++
				} else {
					r.rateChart(q).add(t, v)
				}
			}
			if nfold > 0 {
				foldChart(ep.foldRate, q).add(t, fold)
			}
		}
	}
	for _, k := range ep.order {
		clear(ep.replicas[k].pend)
	}
	ep.prevT = t
}

func (r *replica) rateChart(q string) *chart {
	c := r.rates[q]
	if c == nil {
		c = &chart{}
		r.rates[q] = c
	}
	return c
}

func foldChart(m map[string]*chart, q string) *chart {
	c := m[q]
	if c == nil {
		c = &chart{}
		m[q] = c
	}
	return c
}

// targetScale is tg's unit factor (0 means none).
func targetScale(tg *target) float64 {
	if tg.scale == 0 {
		return 1
	}
	return tg.scale
}

// ingestGauge adds one point per replica at t: the sum of the matching series (their mean
// for a ratio that is not summed over all).
func (ep *epData) ingestGauge(tg *target, fi famIndex, t float64, wins []window) {
	type acc struct {
		sum float64
		n   int
	}
	scale := targetScale(tg)
	per := map[string]*acc{}
	var keys []string
	for _, fam := range ep.chosen[tg.q] {
		for _, lv := range fi.scalars(fam) {
			if !matches(lv.labels, tg.match) || math.IsNaN(lv.v) || math.IsInf(lv.v, 0) || lv.v >= blankDCGM {
				continue
			}
			if tg.ratio && lv.v < 0 {
				continue // vLLM V0 reports -1 for "no data yet"
			}
			k := ep.replicaKey(lv.labels)
			a, ok := per[k]
			if !ok {
				a = &acc{}
				per[k] = a
				keys = append(keys, k)
			}
			a.sum += lv.v * scale
			a.n++
		}
	}
	fold, nfold := math.Inf(-1), 0
	for _, k := range keys {
		a := per[k]
		v := a.sum
		if tg.ratio && !tg.all {
			v /= float64(a.n)
		}
		r := ep.replica(k)
		if r == nil {
			continue
		}
		g := r.gauge(tg.q, ep.edges, len(wins))
		g.add(t, v, wins, !r.folded())
		if r.folded() {
			fold, nfold = math.Max(fold, v), nfold+1
		}
	}
	if nfold > 0 {
		foldChart(ep.fold, tg.q).add(t, fold)
	}
}

// ingestCounter adds each matching raw series' value at t, carried over counter resets.
func (ep *epData) ingestCounter(tg *target, fi famIndex, t, prevT float64) {
	scale := targetScale(tg)
	for _, fam := range ep.chosen[tg.q] {
		for _, lv := range fi.scalars(fam) {
			if !matches(lv.labels, tg.match) || math.IsNaN(lv.v) || math.IsInf(lv.v, 0) {
				continue
			}
			r, c := ep.counterSeries(tg.q, fam, lv.labels, prevT)
			if c == nil {
				continue
			}
			v := lv.v * scale
			if c.pts.len() > 0 && v < c.last {
				c.off += c.last
				ep.addReset(fmt.Sprintf("%s fell from %g to %g at %+.1f s", fam, c.last, v, t))
			}
			c.last = v
			nv := v + c.off
			if isRateQuantity(tg.q) && !math.IsNaN(prevT) && c.pts.len() > 0 {
				// The increase since the previous sample: the part of the line from this
				// series' previous point that falls after prevT.
				pt, pv := c.pts.lastPoint()
				inc := nv - pv
				if pt < prevT && t > pt {
					inc *= (t - prevT) / (t - pt)
				}
				r.pend[tg.q] += inc
			}
			c.pts.add1(t, nv)
		}
	}
}

// counterSeries returns the raw series of quantity q for family fam and labels, created on
// first use; nil past maxStoreSeries.
func (ep *epData) counterSeries(q, fam string, labels map[string]string, prevT float64) (*replica, *cseries) {
	r := ep.replica(ep.replicaKey(labels))
	if r == nil {
		return nil, nil
	}
	raw := fam + "|" + signature(labels, "")
	m := r.counters[q]
	if m == nil {
		m = map[string]*cseries{}
		r.counters[q] = m
	}
	c, ok := m[raw]
	if ok {
		return r, c
	}
	if !ep.newSeries() {
		return r, nil
	}
	c = &cseries{pts: thin{w: 1, edges: ep.edges}}
	m[raw] = c
	if !math.IsNaN(prevT) {
		// A series that appears mid-run was 0 before (client libraries expose a labelled
		// child on first use).
		c.pts.add1(prevT, 0)
	}
	return r, c
}

// ingestHist adds each matching histogram series at t.
func (ep *epData) ingestHist(tg *target, fi famIndex, t, prevT float64) {
	scale := targetScale(tg)
	for _, fam := range ep.chosen[tg.q] {
		f, ok := fi[fam]
		if !ok || (f.Type != "histogram" && f.Type != "gaugehistogram") {
			continue
		}
		for _, m := range f.Metrics {
			if !matches(m.Labels, tg.match) || m.C == nil {
				continue
			}
			ep.addHist(tg.q, fam, m, t, prevT, scale)
		}
	}
}

// rescalePercents divides by 100 every ratio quantity this endpoint reports as a percent.
// Some engines do (SGLang's early cache_hit_rate: 10.61); a value above 1 on the endpoint
// means percent for the whole series.
func (ep *epData) rescalePercents() {
	ep.percent = map[string]bool{}
	for _, q := range []string{qKVUsage, qPrefixHitGauge, qSpecRateGauge} {
		if !ep.anyGaugeAbove(q, 1.0+1e-9) {
			continue
		}
		ep.percent[q] = true
		for _, r := range ep.replicas {
			if g := r.gauges[q]; g != nil {
				g.scale(0.01)
			}
		}
		if c := ep.fold[q]; c != nil {
			c.scale(0.01)
		}
	}
}

// anyGaugeAbove reports whether any replica's gauge q holds a value over limit.
func (ep *epData) anyGaugeAbove(q string, limit float64) bool {
	for _, r := range ep.replicas {
		if g := r.gauges[q]; g != nil && g.n > 0 && g.top > limit {
			return true
		}
	}
	return false
}

func (r *replica) gauge(q string, edges []float64, nwin int) *gseries {
	g, ok := r.gauges[q]
	if !ok {
		g = &gseries{win: make([]gacc, nwin), pts: thin{w: 1, edges: edges}, top: math.Inf(-1)}
		for i := range g.win {
			g.win[i].max = math.Inf(-1)
		}
		r.gauges[q] = g
	}
	return g
}

// add is one point of the gauge: into each window whose load holds t (gaugeEnd), the kept
// points and (drawn true) the chart.
func (g *gseries) add(t, v float64, wins []window, drawn bool) {
	for i, w := range wins {
		if t >= w.a && t <= w.gaugeEnd() {
			a := &g.win[i]
			a.sum += v
			if v > a.max {
				a.max = v
			}
			a.n++
		}
	}
	g.pts.add1(t, v)
	g.top = math.Max(g.top, v)
	g.n++
	if drawn {
		if g.chart == nil {
			g.chart = &chart{}
		}
		g.chart.add(t, v)
	}
}

// scale multiplies every value the gauge holds by f (a percent made a ratio).
func (g *gseries) scale(f float64) {
	for i := range g.win {
		g.win[i].sum *= f
		g.win[i].max *= f
	}
	for i := range g.pts.v {
		g.pts.v[i] *= f
	}
	g.top *= f
	if g.chart != nil {
		g.chart.scale(f)
	}
}

func (ep *epData) addHist(q, fam string, m Metric, t, prevT, scale float64) {
	le := make([]float64, len(m.LE))
	b := make([]float64, len(m.B))
	for i := range m.LE {
		le[i] = float64(m.LE[i]) * scale
	}
	for i := range m.B {
		b[i] = float64(m.B[i])
	}
	if len(b) != len(le) {
		return
	}
	cnt := float64(*m.C)
	if len(b) > 0 && b[len(b)-1] > cnt {
		cnt = b[len(b)-1] // truncated page without +Inf/_count
	}
	sum := 0.0
	if m.S != nil {
		sum = float64(*m.S) * scale
	}
	if math.IsNaN(cnt) || math.IsNaN(sum) {
		return
	}
	r := ep.replica(ep.replicaKey(m.Labels))
	if r == nil {
		return
	}
	raw := fam + "|" + signature(m.Labels, "")
	hm := r.hists[q]
	if hm == nil {
		hm = map[string]*hseries{}
		r.hists[q] = hm
	}
	h, ok := hm[raw]
	if ok && !sameBounds(h.le, le) {
		// Bucket layout changed (a restart with other buckets): a new series.
		raw += fmt.Sprintf("#%d", len(hm))
		h, ok = nil, false
	}
	if !ok && !ep.newSeries() {
		return
	}
	if !ok {
		h = &hseries{le: le, off: hvec{b: make([]float64, len(le))}, pts: thin{w: len(le) + 2, edges: ep.edges}}
		hm[raw] = h
		if !math.IsNaN(prevT) {
			h.pts.add(prevT, make([]float64, len(le)+2))
		}
	} else {
		reset := cnt < h.last.cnt
		for i := range b {
			if b[i] < h.last.b[i] {
				reset = true
			}
		}
		if reset {
			for i := range b {
				h.off.b[i] += h.last.b[i]
			}
			h.off.cnt += h.last.cnt
			h.off.sum += h.last.sum
			ep.addReset(fmt.Sprintf("%s count fell from %g to %g at %+.1f s", fam, h.last.cnt, cnt, t))
		}
	}
	h.last = hvec{b: b, cnt: cnt, sum: sum}
	pt := make([]float64, len(b)+2)
	for i := range b {
		pt[i] = b[i] + h.off.b[i]
	}
	pt[len(b)], pt[len(b)+1] = cnt+h.off.cnt, sum+h.off.sum
	h.pts.add(t, pt)
}

func sameBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// labelReplicas names each replica for signal labels: the replica label value alone
// when there is one endpoint of that kind, else host:port plus that value.
func (st *store) labelReplicas() {
	n := map[string]int{}
	for _, ep := range st.endpoints {
		if ep.ad != nil {
			n[ep.kind]++
		}
	}
	for _, ep := range st.endpoints {
		for _, k := range ep.order {
			r := ep.replicas[k]
			switch {
			case n[ep.kind] <= 1 && k != "":
				r.label = k
			case n[ep.kind] <= 1:
				r.label = "0"
			case k == "":
				r.label = ep.host
			default:
				r.label = ep.host + "/" + k
			}
		}
	}
}

// replicasOf lists the replicas of one kind, in endpoint then first-seen order.
func (st *store) replicasOf(kind string) []*replica {
	var out []*replica
	for _, ep := range st.endpoints {
		if ep.kind != kind || ep.ad == nil {
			continue
		}
		for _, k := range ep.order {
			out = append(out, ep.replicas[k])
		}
	}
	return out
}

// window is a time range in seconds since the store's base; i is its index among the
// store's windows (a clipped copy keeps it), name its phase. load, when set, is when the
// phase's last task arrived: the phase runs on to b while its tasks drain.
type window struct {
	a, b float64
	i    int
	name string
	load float64
}

// gaugeEnd is where a gauge's mean and maximum stop: at the end of the phase's arrivals.
// A gauge (requests waiting or running, KV usage, GPU utilisation) describes the state the
// offered load keeps the engine in; while the last tasks drain nothing arrives, the queue
// and the pool empty, and averaging those samples in would describe a lighter load than
// the contract's (how much lighter depends only on where the last scrapes fall). Counters
// still cover the whole phase: the drain's tokens belong to the phase's tasks.
func (w window) gaugeEnd() float64 {
	if w.load > w.a && w.load < w.b {
		return w.load
	}
	return w.b
}

// clip narrows w to the endpoint's successful samples; ok false when they do not overlap.
func (ep *epData) clip(w window) (window, bool) {
	a, b := math.Max(w.a, ep.start), math.Min(w.b, ep.end)
	return window{a, b, w.i, w.name, w.load}, b > a
}

// gaugeStats: mean and max of the replica's samples inside w; with none inside, the
// value interpolated at the middle of w (a window shorter than the interval).
func (r *replica) gaugeStats(q string, w window) (mean, max float64, ok bool) {
	g := r.gauges[q]
	if g == nil || g.n == 0 {
		return 0, 0, false
	}
	if a := g.win[w.i]; a.n > 0 {
		return a.sum / float64(a.n), a.max, true
	}
	mid := (w.a + w.gaugeEnd()) / 2
	if mid < g.pts.t[0] || mid > g.pts.t[len(g.pts.t)-1] {
		return 0, 0, false
	}
	v := g.pts.at1(mid)
	return v, v, true
}

// increase of the replica's counter q over w (sum of its raw series), and the length of
// the window it covers.
func (r *replica) increase(q string, w window) (inc, dur float64, ok bool) {
	m := r.counters[q]
	if len(m) == 0 {
		return 0, 0, false
	}
	cw, ok := r.ep.clip(w)
	if !ok {
		return 0, 0, false
	}
	for _, c := range m {
		inc += c.pts.at1(cw.b) - c.pts.at1(cw.a)
	}
	return inc, cw.b - cw.a, true
}

func (h *hseries) at(x float64) hvec {
	n := len(h.le)
	p := h.pts.at(x, make([]float64, n+2))
	return hvec{b: p[:n], cnt: p[n], sum: p[n+1]}
}

// hdelta is a histogram's change over a window: finite bounds, cumulative counts, total
// count and sum.
type hdelta struct {
	le       []float64
	b        []float64
	cnt, sum float64
}

// delta of the replica's histogram q over w, all raw series with the same bounds added;
// skipped counts series whose bounds differ from the first.
func (r *replica) delta(q string, w window) (d *hdelta, skipped int) {
	m := r.hists[q]
	if len(m) == 0 {
		return nil, 0
	}
	cw, ok := r.ep.clip(w)
	if !ok {
		return nil, 0
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := m[k]
		hb, ha := h.at(cw.b), h.at(cw.a)
		x := &hdelta{le: h.le, b: make([]float64, len(h.le)), cnt: hb.cnt - ha.cnt, sum: hb.sum - ha.sum}
		for i := range h.le {
			x.b[i] = hb.b[i] - ha.b[i]
		}
		if d == nil {
			d = x
			continue
		}
		if !d.merge(x) {
			skipped++
		}
	}
	return d, skipped
}

func (d *hdelta) merge(x *hdelta) bool {
	if x == nil {
		return true
	}
	if !sameBounds(d.le, x.le) {
		return false
	}
	for i := range d.b {
		d.b[i] += x.b[i]
	}
	d.cnt += x.cnt
	d.sum += x.sum
	return true
}

func (d *hdelta) clone() *hdelta {
	return &hdelta{le: append([]float64(nil), d.le...), b: append([]float64(nil), d.b...), cnt: d.cnt, sum: d.sum}
}

// quantile estimates the q-quantile like Prometheus histogram_quantile: find the bucket
// holding rank q×count and interpolate linearly inside it (the first bucket starts at 0;
// a rank in the +Inf bucket returns the highest finite bound). lo and hi are the bounds
// of the bucket used: the true quantile of the observations lies within them.
func (d *hdelta) quantile(q float64) (v, lo, hi float64, ok bool) {
	return d.atRank(func(total float64) float64 { return q * total })
}

// atRank is quantile with the rank given as a function of the total count (an order
// statistic's rank r is exact there, where q = r/total could round past a bucket's count).
func (d *hdelta) atRank(rankOf func(total float64) float64) (v, lo, hi float64, ok bool) {
	if d == nil || len(d.le) == 0 {
		return 0, 0, 0, false
	}
	// Counts are made monotonic (interpolation and float noise can break it slightly).
	cum := make([]float64, len(d.b)+1)
	prev := 0.0
	for i, c := range d.b {
		if c < prev {
			c = prev
		}
		cum[i] = c
		prev = c
	}
	total := math.Max(d.cnt, prev)
	cum[len(d.b)] = total
	if total <= 1e-9 {
		return 0, 0, 0, false
	}
	rank := rankOf(total)
	i := sort.Search(len(cum), func(k int) bool { return cum[k] >= rank })
	if i >= len(d.le) {
		top := d.le[len(d.le)-1]
		return top, top, math.Inf(1), true
	}
	start, end := 0.0, d.le[i]
	below := 0.0
	if i > 0 {
		start = d.le[i-1]
		below = cum[i-1]
	} else if end <= 0 {
		return end, end, end, true
	}
	in := cum[i] - below
	if in <= 0 {
		return end, start, end, true
	}
	return start + (end-start)*(rank-below)/in, start, end, true
}
