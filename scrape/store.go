package scrape

import (
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"time"
)

// store holds every endpoint's samples turned into normalized per-replica series, with
// times in seconds since base. It is built once and windowed many times (per phase).
type store struct {
	base      time.Time
	endpoints []*epData
	notes     map[string][]string // by kind
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
	attempts []float64
	failures []failure
	okT      []float64
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
}

type replica struct {
	key      string
	ep       *epData
	label    string // set once all endpoints are known
	gauges   map[string]*gseries
	counters map[string]map[string]*cseries
	hists    map[string]map[string]*hseries
}

type gseries struct{ t, v []float64 }

// cseries is one raw counter series made monotonic: on a decrease (an engine restart)
// the value before the reset is carried as an offset and the new value counts from 0,
// which is what Prometheus rate()/increase() assume.
type cseries struct {
	t, c      []float64
	last, off float64
}

// hseries is one raw histogram series, made monotonic the same way as cseries.
type hseries struct {
	t    []float64
	le   []float64
	b    [][]float64
	cnt  []float64
	sum  []float64
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

// build turns samples into a store. override forces the engine adapter of every engine
// endpoint. base zero means the first sample's time.
func build(samples []Sample, base time.Time, override string) (*store, error) {
	var forced *Adapter
	if override != "" {
		a, err := AdapterFor(override)
		if err != nil {
			return nil, err
		}
		forced = a
	}
	if base.IsZero() {
		for i := range samples {
			if base.IsZero() || samples[i].T.Before(base) {
				base = samples[i].T
			}
		}
	}
	st := &store{base: base, notes: map[string][]string{}}
	byEP := map[string][]*Sample{}
	var order []string
	for i := range samples {
		s := &samples[i]
		if _, ok := byEP[s.Endpoint]; !ok {
			order = append(order, s.Endpoint)
		}
		byEP[s.Endpoint] = append(byEP[s.Endpoint], s)
	}
	for _, id := range order {
		ss := byEP[id]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].T.Before(ss[j].T) })
		ep := &epData{id: id, host: hostOf(id), kind: ss[0].Kind, origin: ss[0].Origin, replicas: map[string]*replica{}}
		if ep.kind != KindDCGM {
			ep.kind = KindEngine
		}
		var ok []*Sample
		for _, s := range ss {
			t := s.T.Sub(base).Seconds()
			ep.attempts = append(ep.attempts, t)
			if s.OK {
				ok = append(ok, s)
				ep.okT = append(ep.okT, t)
			} else {
				ep.failures = append(ep.failures, failure{t, s.Err})
			}
		}
		ep.interval = medianSpacing(ep.attempts)
		if len(ok) == 0 {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: no successful sample (%d attempts failed; first error: %s)", id, len(ep.failures), firstErr(ep.failures)))
			st.endpoints = append(st.endpoints, ep)
			continue
		}
		ep.start, ep.end = ep.okT[0], ep.okT[len(ep.okT)-1]
		names := familyNames(ok)
		recorded := ""
		for _, s := range ss {
			if s.Engine != "" {
				recorded = s.Engine
				break
			}
		}
		var fromFile *Adapter
		if recorded != "" && forced == nil {
			a, err := AdapterFor(recorded)
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
			st.endpoints = append(st.endpoints, ep)
			continue
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
		ep.ingest(ok, base)
		if ep.dropped > 0 {
			st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: %d new series not stored past pel's bound of %d per endpoint (labels changing at every scrape?)", id, ep.dropped, maxStoreSeries))
		}
		st.endpoints = append(st.endpoints, ep)
	}
	st.labelReplicas()
	return st, nil
}

func firstErr(fs []failure) string {
	if len(fs) == 0 {
		return "none"
	}
	return fs[0].err
}

func medianSpacing(t []float64) float64 {
	if len(t) < 2 {
		return 0
	}
	d := make([]float64, 0, len(t)-1)
	for i := 1; i < len(t); i++ {
		d = append(d, t[i]-t[i-1])
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
		r = &replica{key: key, ep: ep, gauges: map[string]*gseries{}, counters: map[string]map[string]*cseries{}, hists: map[string]map[string]*hseries{}}
		ep.replicas[key] = r
		ep.order = append(ep.order, key)
	}
	return r
}

// ingest stores the chosen targets of every good sample, in time order, then rescales the
// ratios this endpoint reports as percents.
func (ep *epData) ingest(ok []*Sample, base time.Time) {
	prevT := math.NaN()
	for _, s := range ok {
		t := s.T.Sub(base).Seconds()
		fi := indexFamilies(s)
		for i := range ep.ad.targets {
			tg := &ep.ad.targets[i]
			if ep.chosenT[tg.q] != tg {
				continue
			}
			switch tg.kind {
			case kGauge:
				ep.ingestGauge(tg, fi, t)
			case kCounter:
				ep.ingestCounter(tg, fi, t, prevT)
			case kHist:
				ep.ingestHist(tg, fi, t, prevT)
			}
		}
		prevT = t
	}
	ep.rescalePercents()
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
func (ep *epData) ingestGauge(tg *target, fi famIndex, t float64) {
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
		g := r.gauge(tg.q)
		g.t = append(g.t, t)
		g.v = append(g.v, v)
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
			c := ep.counterSeries(tg.q, fam, lv.labels, prevT)
			if c == nil {
				continue
			}
			v := lv.v * scale
			if len(c.c) > 0 && v < c.last {
				c.off += c.last
				ep.addReset(fmt.Sprintf("%s fell from %g to %g at %+.1f s", fam, c.last, v, t))
			}
			c.last = v
			c.t = append(c.t, t)
			c.c = append(c.c, v+c.off)
		}
	}
}

// counterSeries returns the raw series of quantity q for family fam and labels, created on
// first use; nil past maxStoreSeries.
func (ep *epData) counterSeries(q, fam string, labels map[string]string, prevT float64) *cseries {
	r := ep.replica(ep.replicaKey(labels))
	if r == nil {
		return nil
	}
	raw := fam + "|" + signature(labels, "")
	m := r.counters[q]
	if m == nil {
		m = map[string]*cseries{}
		r.counters[q] = m
	}
	c, ok := m[raw]
	if ok {
		return c
	}
	if !ep.newSeries() {
		return nil
	}
	c = &cseries{}
	m[raw] = c
	if !math.IsNaN(prevT) {
		// A series that appears mid-run was 0 before (client libraries expose a labelled
		// child on first use).
		c.t, c.c = append(c.t, prevT), append(c.c, 0)
	}
	return c
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
				for i := range g.v {
					g.v[i] /= 100
				}
			}
		}
	}
}

// anyGaugeAbove reports whether any replica's gauge q holds a value over limit.
func (ep *epData) anyGaugeAbove(q string, limit float64) bool {
	for _, r := range ep.replicas {
		if g := r.gauges[q]; g != nil {
			for _, v := range g.v {
				if v > limit {
					return true
				}
			}
		}
	}
	return false
}

func (r *replica) gauge(q string) *gseries {
	g, ok := r.gauges[q]
	if !ok {
		g = &gseries{}
		r.gauges[q] = g
	}
	return g
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
		h = &hseries{le: le, off: hvec{b: make([]float64, len(le))}}
		hm[raw] = h
		if !math.IsNaN(prevT) {
			h.t = append(h.t, prevT)
			h.b = append(h.b, make([]float64, len(le)))
			h.cnt = append(h.cnt, 0)
			h.sum = append(h.sum, 0)
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
	cb := make([]float64, len(b))
	for i := range b {
		cb[i] = b[i] + h.off.b[i]
	}
	h.t = append(h.t, t)
	h.b = append(h.b, cb)
	h.cnt = append(h.cnt, cnt+h.off.cnt)
	h.sum = append(h.sum, sum+h.off.sum)
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

// interp is the piecewise-linear value of (t, v) at x, held constant outside the range.
func interp(t, v []float64, x float64) float64 {
	n := len(t)
	if n == 0 {
		return 0
	}
	if x <= t[0] {
		return v[0]
	}
	if x >= t[n-1] {
		return v[n-1]
	}
	i := sort.SearchFloat64s(t, x)
	if t[i] == x || t[i] == t[i-1] {
		return v[i]
	}
	return v[i-1] + (v[i]-v[i-1])*(x-t[i-1])/(t[i]-t[i-1])
}

// window is a time range in seconds since the store's base.
type window struct{ a, b float64 }

// clip narrows w to the endpoint's successful samples; ok false when they do not overlap.
func (ep *epData) clip(w window) (window, bool) {
	a, b := math.Max(w.a, ep.start), math.Min(w.b, ep.end)
	return window{a, b}, b > a
}

// gaugeStats: mean and max of the replica's samples inside w; with none inside, the
// value interpolated at the middle of w (a window shorter than the interval).
func (r *replica) gaugeStats(q string, w window) (mean, max float64, ok bool) {
	g := r.gauges[q]
	if g == nil || len(g.t) == 0 {
		return 0, 0, false
	}
	n := 0
	max = math.Inf(-1)
	for i, t := range g.t {
		if t >= w.a && t <= w.b {
			mean += g.v[i]
			if g.v[i] > max {
				max = g.v[i]
			}
			n++
		}
	}
	if n > 0 {
		return mean / float64(n), max, true
	}
	mid := (w.a + w.b) / 2
	if mid < g.t[0] || mid > g.t[len(g.t)-1] {
		return 0, 0, false
	}
	v := interp(g.t, g.v, mid)
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
		inc += interp(c.t, c.c, cw.b) - interp(c.t, c.c, cw.a)
	}
	return inc, cw.b - cw.a, true
}

// hdelta is a histogram's change over a window: finite bounds, cumulative counts, total
// count and sum.
type hdelta struct {
	le       []float64
	b        []float64
	cnt, sum float64
}

func (h *hseries) at(x float64) hvec {
	out := hvec{b: make([]float64, len(h.le))}
	col := make([]float64, len(h.t))
	for i := range h.le {
		for k := range h.t {
			col[k] = h.b[k][i]
		}
		out.b[i] = interp(h.t, col, x)
	}
	out.cnt = interp(h.t, h.cnt, x)
	out.sum = interp(h.t, h.sum, x)
	return out
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
