package canary

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	mstats "github.com/aclements/go-moremath/stats"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/resample"
	"github.com/pel-ladder/pel/scrape"
)

// Live judges a production canary from the engines' own metrics, with no load of pel's
// (pel canary): the two sides are two label selectors on one Prometheus, read over the
// same window. As automated canary analysis does (Netflix's Kayenta), the window is cut
// into intervals, each side gives one value per interval and metric (server-side latency
// quantiles from histogram deltas, preemptions per generated token, KV usage, queue,
// throughput per replica: package scrape's signals, the same as pel run --prometheus
// reads), and each metric's two samples are compared with the Mann-Whitney U test and a
// seeded bootstrap interval of the difference of the means (intervals resampled). A metric
// is worse when both say so in its bad direction, at a level Bonferroni-corrected over the
// judged metrics, by more than Effect; groups of metrics are scored like Kayenta's
// (passed / judged, weighted). Rollback triggers bound a quantile of a side's traffic, so
// they are read on the whole window's histogram: the baseline's (p99 bounds: the upper end
// of its p99's 95% interval plus Margin, as the diagnosis derives them from tasks, raised to
// a bucket bound) or a run's (--rollback-from) are checked on the candidate's window quantile.
//
// Per-interval values are treated as independent draws, as Kayenta treats its time series;
// a load that drifts within the window makes neighbouring intervals alike, so the window
// should hold both sides under the same traffic (a canary behind one load balancer does).

// LiveOptions tune Live. Zero values take the defaults.
type LiveOptions struct {
	Start, End time.Time
	// Interval is each sample's length (default window/30, at least 5 s).
	Interval time.Duration
	// Level of every interval (default 0.95); Resamples and Seed drive the bootstrap
	// (default 2000, 1).
	Level     float64
	Resamples int
	Seed      uint64
	// Effect is the relative change of the mean below which a significant difference is
	// not a failure (default 0.10: a 10% regression); a baseline mean of 0 has no such
	// floor (preemptions where there were none fail).
	Effect float64
	// Margin widens a derived trigger past its CI bound (default 0.10, the diagnosis').
	Margin float64
	// MinIntervals per side below which no verdict is given (default 6: a rank test of
	// 5 against 5 cannot reach p < 0.05 after correction).
	MinIntervals int
	// Triggers, when set, replace the triggers derived from the baseline side (a baseline
	// run's, mapped onto the server-side quantiles: see liveTriggerSignal).
	Triggers       []evidence.Trigger
	TriggersSource string
	// Engine forces an adapter ("" detects it from the metric names).
	Engine string
}

func (o *LiveOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = max(o.End.Sub(o.Start)/30, 5*time.Second)
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	if o.Resamples <= 0 {
		o.Resamples = 2000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Effect <= 0 {
		o.Effect = 0.10
	}
	if o.Margin <= 0 {
		o.Margin = 0.10
	}
	if o.MinIntervals <= 0 {
		o.MinIntervals = 6
	}
}

// LiveSide is one side's selector and what its samples held.
type LiveSide struct {
	Selector string `json:"selector"`
	// Endpoints are the targets (Prometheus instance labels) seen; Replicas the engine
	// replicas (dist.engines over the window).
	Endpoints []string `json:"endpoints"`
	Replicas  int      `json:"replicas"`
	Engine    string   `json:"engine,omitempty"`
	// Intervals with a value of the first critical metric.
	Intervals int `json:"intervals"`
}

// LiveMetric is one metric's two samples (one value per interval) and their comparison.
type LiveMetric struct {
	Name   string `json:"name"`
	Signal string `json:"signal,omitempty"`
	Unit   string `json:"unit"`
	Group  string `json:"group"`
	// Better is "lower" or "higher"; "info" metrics are reported and never judged.
	Better   string    `json:"better"`
	Critical bool      `json:"critical,omitempty"`
	Base     []float64 `json:"base"`
	Cand     []float64 `json:"candidate"`
	BaseMean *float64  `json:"base_mean"`
	CandMean *float64  `json:"candidate_mean"`
	// DeltaPct is the change of the mean relative to the base's; CILo/CIHi bound the
	// difference of the means (candidate − base) by bootstrap.
	DeltaPct *float64 `json:"delta_pct"`
	CILo     *float64 `json:"ci_lo"`
	CIHi     *float64 `json:"ci_hi"`
	P        *float64 `json:"p,omitempty"`
	// Class is "pass", "high", "low" (significant, beyond the effect, either way), "nodata"
	// or "info"; Worse when the class is the bad direction.
	Class string `json:"class"`
	Worse bool   `json:"worse"`
	Note  string `json:"note,omitempty"`
}

// LiveGroup is a Kayenta-style metric group score.
type LiveGroup struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Judged int     `json:"judged"`
	Passed int     `json:"passed"`
	Score  float64 `json:"score"`
}

// LiveResult is pel canary's judgement.
type LiveResult struct {
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	IntervalS float64   `json:"interval_s"`
	Method    string    `json:"method"`
	Baseline  LiveSide  `json:"baseline"`
	Candidate LiveSide  `json:"candidate"`
	// Alpha is each metric's level after the Bonferroni correction.
	Alpha    float64         `json:"alpha_per_metric"`
	Metrics  []LiveMetric    `json:"metrics"`
	Groups   []LiveGroup     `json:"groups"`
	Score    float64         `json:"score"`
	Triggers []compare.Check `json:"triggers"`
	Verdict  compare.Verdict `json:"verdict"`
	Reasons  []string        `json:"reasons"`
	Warnings []string        `json:"warnings,omitempty"`
}

// PassScore is the score under which the candidate is rejected even without a critical
// metric failing: Kayenta's default "marginal" threshold.
const PassScore = 75.0

type liveDef struct {
	name, signal, unit, group, better string
	critical                          bool
	// value computes the metric from one interval's signals (ok false: no value).
	value func(v map[string]float64, replicas float64) (float64, bool)
}

func sigVal(name string) func(map[string]float64, float64) (float64, bool) {
	return func(v map[string]float64, _ float64) (float64, bool) { x, ok := v[name]; return x, ok }
}

func perReplica(name string) func(map[string]float64, float64) (float64, bool) {
	return func(v map[string]float64, n float64) (float64, bool) {
		x, ok := v[name]
		if !ok || n <= 0 {
			return 0, false
		}
		return x / n, true
	}
}

// liveTable: latency (weight 50), errors (25), saturation (25), throughput (reported).
// Preemptions are per thousand generated tokens, so a side's share of the traffic does not
// move them; throughput per replica is what each side's load balancer gave it, so it is
// reported, not judged.
var liveTable = []liveDef{
	{"TTFT p50", evidence.SigServerTTFTP50, "ms", "latency", "lower", false, sigVal(evidence.SigServerTTFTP50)},
	{"TTFT p99", evidence.SigServerTTFTP99, "ms", "latency", "lower", true, sigVal(evidence.SigServerTTFTP99)},
	{"ITL p99", evidence.SigServerITLP99, "ms", "latency", "lower", false, sigVal(evidence.SigServerITLP99)},
	{"E2E p99", evidence.SigServerE2EP99, "ms", "latency", "lower", true, sigVal(evidence.SigServerE2EP99)},
	{"queue p99", evidence.SigServerQueueP99, "ms", "latency", "lower", false, sigVal(evidence.SigServerQueueP99)},
	{"preemptions per 1k tokens", evidence.SigPreemptionRate, "1/ktok", "errors", "lower", true, func(v map[string]float64, _ float64) (float64, bool) {
		p, ok1 := v[evidence.SigPreemptionRate]
		g, ok2 := v[evidence.SigGenTokensRate]
		if !ok1 || !ok2 || g <= 0 {
			return 0, false
		}
		return 1000 * p / g, true
	}},
	{"KV usage mean", evidence.SigKVUsageMean, "ratio", "saturation", "lower", false, sigVal(evidence.SigKVUsageMean)},
	{"waiting mean", evidence.SigWaitingMean, "count", "saturation", "lower", false, sigVal(evidence.SigWaitingMean)},
	{"generation tokens/s per replica", evidence.SigGenTokensRate, "tokens/s", "throughput", "info", false, perReplica(evidence.SigGenTokensRate)},
	{"prompt tokens/s per replica", evidence.SigPromptTokensRate, "tokens/s", "throughput", "info", false, perReplica(evidence.SigPromptTokensRate)},
}

var liveGroups = []struct {
	name   string
	weight float64
}{{"latency", 50}, {"errors", 25}, {"saturation", 25}}

// liveTriggerSignal maps a run's client-side trigger onto the server-side quantile that
// Prometheus has: the server's figure leaves out the network and the client, so a
// client-derived bound is a lenient one here.
var liveTriggerSignal = map[string]string{
	evidence.SigTTFTP50: evidence.SigServerTTFTP50, evidence.SigTTFTP99: evidence.SigServerTTFTP99,
	evidence.SigITLP99: evidence.SigServerITLP99, evidence.SigE2EP99: evidence.SigServerE2EP99,
	evidence.SigE2EP50: evidence.SigServerE2EP50,
}

// liveValues cuts the window into n intervals and reads one side's signals in each (an
// evidence with one phase per interval, filled by package scrape).
func liveValues(ss []scrape.Sample, o LiveOptions, n int) ([]map[string]float64, []float64, string, error) {
	ev := evidence.New()
	ev.Run.StartedAt = o.Start
	for i := 0; i < n; i++ {
		a := float64(i) * o.Interval.Seconds()
		ev.Run.Phases = append(ev.Run.Phases, evidence.Phase{Name: fmt.Sprintf("i%03d", i), StartS: a, EndS: a + o.Interval.Seconds()})
	}
	if err := scrape.FillSamples(ev, ss, o.Engine); err != nil {
		return nil, nil, "", err
	}
	vals := make([]map[string]float64, n)
	reps := make([]float64, n)
	for i := range vals {
		vals[i] = map[string]float64{}
	}
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			var i int
			if len(s.Labels) > 0 || len(s.Phase) < 2 || s.Phase[0] != 'i' {
				continue
			}
			if _, err := fmt.Sscanf(s.Phase[1:], "%d", &i); err != nil || i < 0 || i >= n {
				continue
			}
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				continue
			}
			vals[i][s.Name] = s.Value
			if s.Name == evidence.SigEngines {
				reps[i] = s.Value
			}
		}
	}
	return vals, reps, ev.Run.Engine, nil
}

func endpoints(ss []scrape.Sample) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s.Kind == scrape.KindEngine && !seen[s.Endpoint] {
			seen[s.Endpoint] = true
			out = append(out, strings.TrimPrefix(s.Endpoint, "prom:"))
		}
	}
	sort.Strings(out)
	return out
}

// Live compares the candidate side's samples with the baseline side's over
// [o.Start, o.End].
func Live(base, cand []scrape.Sample, baseSel, candSel string, o LiveOptions) (*LiveResult, error) {
	if !o.End.After(o.Start) {
		return nil, badinput.Errorf("the window is empty (end %s is not after start %s)", o.End.Format(time.RFC3339), o.Start.Format(time.RFC3339))
	}
	o.defaults()
	n := int(o.End.Sub(o.Start) / o.Interval)
	if n < 1 {
		return nil, badinput.Errorf("--interval %v is longer than the window %v", o.Interval, o.End.Sub(o.Start))
	}
	res := &LiveResult{Start: o.Start, End: o.Start.Add(time.Duration(n) * o.Interval), IntervalS: o.Interval.Seconds(),
		Baseline: LiveSide{Selector: baseSel, Endpoints: endpoints(base)}, Candidate: LiveSide{Selector: candSel, Endpoints: endpoints(cand)},
		Triggers: []compare.Check{}, Reasons: []string{}}
	if len(res.Baseline.Endpoints) == 0 || len(res.Candidate.Endpoints) == 0 {
		return nil, badinput.Errorf("no engine series in the window for %s: check the selector (label matchers such as job=\"vllm\") and the window", map[bool]string{true: "the baseline " + baseSel, false: "the candidate " + candSel}[len(res.Baseline.Endpoints) == 0])
	}
	bv, brep, beng, err := liveValues(base, o, n)
	if err != nil {
		return nil, badinput.Errorf("baseline: %v", err)
	}
	cv, crep, ceng, err := liveValues(cand, o, n)
	if err != nil {
		return nil, badinput.Errorf("candidate: %v", err)
	}
	res.Baseline.Engine, res.Candidate.Engine = beng, ceng
	res.Baseline.Replicas, res.Candidate.Replicas = int(maxOf(brep)), int(maxOf(crep))
	if beng != ceng {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the sides run different engines (%s vs %s): only quantities both expose are compared", figure.OrDash(beng), figure.OrDash(ceng)))
	}

	judged := 0
	for _, d := range liveTable {
		m := LiveMetric{Name: d.name, Signal: d.signal, Unit: d.unit, Group: d.group, Better: d.better, Critical: d.critical, Base: []float64{}, Cand: []float64{}}
		for i := 0; i < n; i++ {
			if x, ok := d.value(bv[i], brep[i]); ok {
				m.Base = append(m.Base, figure.Sig6(x))
			}
			if x, ok := d.value(cv[i], crep[i]); ok {
				m.Cand = append(m.Cand, figure.Sig6(x))
			}
		}
		if d.better != "info" && len(m.Base) > 0 && len(m.Cand) > 0 {
			judged++
		}
		res.Metrics = append(res.Metrics, m)
	}
	res.Alpha = (1 - o.Level) / float64(max(judged, 1))
	for i := range res.Metrics {
		liveRow(&res.Metrics[i], res.Alpha, o, i)
	}
	for _, m := range res.Metrics {
		if m.Critical {
			res.Baseline.Intervals, res.Candidate.Intervals = len(m.Base), len(m.Cand)
			break
		}
	}
	res.Method = fmt.Sprintf("%d intervals of %v per side; per metric: two-sided Mann-Whitney U and a %.0f%% bootstrap interval of the difference of interval means (%d resamples, seed %d), worse when both agree at alpha %.4g (%.0f%% Bonferroni-corrected over %d metrics) and the mean moved by more than %.0f%%; groups scored Kayenta-style",
		n, o.Interval, o.Level*100, o.Resamples, o.Seed, res.Alpha, (1-o.Level)*100, judged, o.Effect*100)

	// Kayenta's score: each group's passed share, weighted.
	var wsum, score float64
	for _, g := range liveGroups {
		lg := LiveGroup{Name: g.name, Weight: g.weight}
		for _, m := range res.Metrics {
			if m.Group != g.name || m.Class == "info" || m.Class == "nodata" {
				continue
			}
			lg.Judged++
			if !m.Worse {
				lg.Passed++
			}
		}
		if lg.Judged > 0 {
			lg.Score = 100 * float64(lg.Passed) / float64(lg.Judged)
			wsum += g.weight
			score += g.weight * lg.Score
		}
		res.Groups = append(res.Groups, lg)
	}
	if wsum > 0 {
		res.Score = figure.Sig6(score / wsum)
	}

	bq, err := scrape.WindowQuantiles(base, o.Start, 0, float64(n)*o.Interval.Seconds(), o.Engine)
	if err != nil {
		return nil, badinput.Errorf("baseline: %v", err)
	}
	cq, err := scrape.WindowQuantiles(cand, o.Start, 0, float64(n)*o.Interval.Seconds(), o.Engine)
	if err != nil {
		return nil, badinput.Errorf("candidate: %v", err)
	}
	liveTriggers(res, o, bq, cq)
	liveDecide(res, o)
	return res, nil
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// bootMean is the bootstrap distribution of a sample's mean (len(xs) resampled values).
func bootMean(xs []float64, o LiveOptions, who string, row int) []float64 {
	out := make([]float64, o.Resamples)
	resample.Bootstrap(len(xs), o.Resamples, compare.Stream(o.Seed, "live/"+who, fmt.Sprint(row)), func(r int, w []int) {
		if r < 0 {
			return
		}
		s := 0.0
		for i, k := range w {
			s += float64(k) * xs[i]
		}
		out[r] = s / float64(len(xs))
	})
	return out
}

func liveRow(m *LiveMetric, alpha float64, o LiveOptions, row int) {
	if len(m.Base) == 0 || len(m.Cand) == 0 {
		m.Class, m.Note = "nodata", "no value on a side in the window"
		if m.Better == "info" {
			m.Class = "info"
		}
		return
	}
	bm, cm := figure.Mean(m.Base), figure.Mean(m.Cand)
	m.BaseMean, m.CandMean = figure.Ptr(figure.Sig6(bm)), figure.Ptr(figure.Sig6(cm))
	if bm != 0 {
		m.DeltaPct = figure.Ptr(figure.Sig6((cm - bm) / math.Abs(bm) * 100))
	}
	u, err := mstats.MannWhitneyUTest(m.Cand, m.Base, mstats.LocationDiffers)
	switch {
	case err == nil:
		m.P = figure.Ptr(u.P)
	case errors.Is(err, mstats.ErrSamplesEqual):
		m.P = figure.Ptr(1)
	}
	bb, cb := bootMean(m.Base, o, "base", row), bootMean(m.Cand, o, "candidate", row)
	d := make([]float64, o.Resamples)
	for i := range d {
		d[i] = cb[i] - bb[i]
	}
	// The interval matches the corrected level, so "significant" means the same for both.
	lo, hi, ok := resample.PercentileCI(d, 1-alpha)
	if ok {
		m.CILo, m.CIHi = figure.Ptr(figure.Sig6(lo)), figure.Ptr(figure.Sig6(hi))
	}
	if m.Better == "info" {
		m.Class = "info"
		return
	}
	m.Class = "pass"
	sig := m.P != nil && *m.P < alpha && ok
	beyond := func(up bool) bool {
		if bm == 0 {
			return true
		}
		if up {
			return cm > bm*(1+o.Effect)
		}
		return cm < bm*(1-o.Effect)
	}
	switch {
	case sig && lo > 0 && beyond(true):
		m.Class = "high"
	case sig && hi < 0 && beyond(false):
		m.Class = "low"
	}
	m.Worse = (m.Class == "high" && m.Better == "lower") || (m.Class == "low" && m.Better == "higher")
	if len(m.Base) < o.MinIntervals || len(m.Cand) < o.MinIntervals {
		m.Note = fmt.Sprintf("%d and %d intervals: fewer than %d on a side", len(m.Base), len(m.Cand), o.MinIntervals)
	}
}

// liveTriggers derives the baseline side's p99 triggers (or maps the given ones) and
// checks each on the candidate's quantile over the whole window: a trigger bounds the p99 of
// the candidate's traffic, which the window's histogram delta holds (all its requests), not
// the mean of per-interval p99s (an interval of 20 requests has its maximum for a p99, so
// one slow request moved that mean past a bound derived from twins). Intervals come from
// order statistics (orderCI, as pel compare's task quantiles) read at their buckets' bounds,
// the most a histogram says about one observation: the check fails when even the lower
// limit is past the bound.
func liveTriggers(res *LiveResult, o LiveOptions, bq, cq map[string]scrape.ServerQuantile) {
	var trig []evidence.Trigger
	source := "rollback trigger (baseline side, Prometheus)"
	if o.Triggers != nil {
		source = "rollback trigger (" + o.TriggersSource + ", mapped to the server-side quantile)"
		for _, t := range o.Triggers {
			s, ok := liveTriggerSignal[t.Signal]
			if !ok {
				res.Triggers = append(res.Triggers, compare.Check{Source: source, Signal: t.Signal, Op: t.Op, Bound: t.Bound, Unit: t.Unit, Basis: t.Basis, Scope: "all replicas",
					Status: compare.StatusNotChecked, Note: "no server-side counterpart in the engines' metrics"})
				continue
			}
			t.Basis = t.Signal + ": " + t.Basis
			t.Signal = s
			trig = append(trig, t)
		}
	} else {
		for _, sigName := range []string{evidence.SigServerTTFTP99, evidence.SigServerITLP99, evidence.SigServerE2EP99} {
			sq, ok := bq[sigName]
			n := sq.Count()
			if !ok || n == 0 {
				continue
			}
			v, _, _, _ := sq.Value()
			_, u := compare.OrderCI(n, sq.Q, o.Level)
			r, short := u, ""
			if u > n {
				r = n
				short = fmt.Sprintf("; %d values cannot bound a p99 from above, %d can: the largest one's bucket", n, resample.MinSamples(sq.Q, o.Level))
			}
			_, _, hi, ok := sq.Rank(r)
			if !ok || math.IsInf(hi, 1) || hi <= 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("no %s trigger derived: the baseline's upper limit is not a finite, positive bucket bound (+Inf bucket)", sigName))
				continue
			}
			// The bound goes up to a bucket bound: whether the candidate's quantile is past
			// it is then a count over it, which the histogram holds exactly.
			bound, ok := sq.BoundAtOrAbove(figure.Sig6(hi * (1 + o.Margin)))
			if !ok {
				res.Warnings = append(res.Warnings, fmt.Sprintf("no %s trigger derived: %.4g ms + %.0f%% is past the histogram's last finite bucket bound", sigName, hi, o.Margin*100))
				continue
			}
			trig = append(trig, evidence.Trigger{Signal: sigName, Op: ">", Bound: figure.Sig6(bound), Unit: "ms",
				Basis: fmt.Sprintf("baseline window p99 %.4g ms over %d values, %.0f%% upper limit %.4g (bucket bound of order statistic %d) + %.0f%%, up to the next bucket bound%s", v, n, o.Level*100, hi, r, o.Margin*100, short)})
		}
	}
	for _, t := range trig {
		ch := compare.Check{Source: source, Signal: t.Signal, Op: t.Op, Bound: t.Bound, Unit: t.Unit, Basis: t.Basis, Scope: "all replicas"}
		sq, ok := cq[t.Signal]
		n := sq.Count()
		if !ok || n == 0 {
			ch.Status, ch.Note = compare.StatusNotChecked, "the candidate has no value for this signal in the window"
			res.Triggers = append(res.Triggers, ch)
			continue
		}
		v, _, _, _ := sq.Value()
		ch.Candidate, ch.Values = figure.Ptr(figure.Sig6(v)), n
		if b, ok := bq[t.Signal]; ok {
			if bv, _, _, ok := b.Value(); ok {
				ch.Base = figure.Ptr(figure.Sig6(bv))
			}
		}
		// Latencies are not negative: a lower limit the sample cannot give is 0.
		l, u := compare.OrderCI(n, sq.Q, o.Level)
		lo, hi := 0.0, math.Inf(1)
		if _, blo, _, ok := sq.Rank(l); ok {
			lo = blo
			ch.CILo = figure.Ptr(figure.Sig6(lo))
		}
		if _, _, bhi, ok := sq.Rank(u); ok && !math.IsInf(bhi, 1) {
			hi = bhi
			ch.CIHi = figure.Ptr(figure.Sig6(hi))
		}
		ends := func(r int) string {
			if r < 1 || r > n {
				return "none"
			}
			return fmt.Sprint(r)
		}
		ch.Note = fmt.Sprintf("; candidate: its window quantile over %d values, interval from order statistics %s and %s at their buckets' bounds", n, ends(l), ends(u))
		bLo, valid := compare.Breach(t.Op, lo, t.Bound)
		bHi, _ := compare.Breach(t.Op, hi, t.Bound)
		switch {
		case !valid:
			ch.Status, ch.Note = compare.StatusNotChecked, fmt.Sprintf("unknown operator %q", t.Op)
		case bLo && bHi:
			ch.Status = compare.StatusFail
		case !bLo && !bHi:
			ch.Status = compare.StatusPass
		default:
			ch.Status = compare.StatusUncertain
			if u > n || l < 1 {
				ch.NeededTasks = resample.MinSamples(sq.Q, o.Level)
			} else {
				ch.NeededTasks = compare.Needed(n, v, lo, hi, t.Bound)
			}
		}
		res.Triggers = append(res.Triggers, ch)
	}
}

func liveDecide(res *LiveResult, o LiveOptions) {
	if res.Baseline.Intervals < o.MinIntervals || res.Candidate.Intervals < o.MinIntervals {
		res.Verdict = compare.Inconclusive
		res.Reasons = append(res.Reasons, fmt.Sprintf("too few intervals with data: %d (baseline) and %d (candidate); need at least %d per side (a longer --window or a shorter --interval)",
			res.Baseline.Intervals, res.Candidate.Intervals, o.MinIntervals))
		return
	}
	var reject, uncertain []string
	for _, ch := range res.Triggers {
		desc := fmt.Sprintf("%s %s %.4g %s (%s)", ch.Signal, ch.Op, ch.Bound, ch.Unit, ch.Source)
		switch ch.Status {
		case compare.StatusFail:
			reject = append(reject, fmt.Sprintf("%s: candidate window value %s over %d values, %.0f%% CI %s entirely past the bound", desc, figure.Fmt(ch.Candidate), ch.Values, o.Level*100, figure.FmtCI(ch.CILo, ch.CIHi)))
		case compare.StatusUncertain:
			// An interval that straddles the bound with the window's value inside holds
			// nothing up (the rank tests judge the shift); a value past the bound that is
			// not yet significant does.
			if ch.Candidate != nil {
				if past, _ := compare.Breach(ch.Op, *ch.Candidate, ch.Bound); past {
					uncertain = append(uncertain, fmt.Sprintf("%s: candidate %s past the bound, CI %s straddles it", desc, figure.Fmt(ch.Candidate), figure.FmtCI(ch.CILo, ch.CIHi)))
				}
			}
		}
	}
	for _, m := range res.Metrics {
		if m.Worse && m.Critical {
			reject = append(reject, fmt.Sprintf("%s (critical) is worse: mean %s → %s %s (%s), rank test p %.3g < %.3g", m.Name, figure.Fmt(m.BaseMean), figure.Fmt(m.CandMean), m.Unit, figure.FmtPct(m.DeltaPct), figure.OrNaN(m.P), res.Alpha))
		}
	}
	if res.Score < PassScore {
		reject = append(reject, fmt.Sprintf("score %.0f below %.0f (Kayenta's default marginal threshold): %s", res.Score, PassScore, failedNames(res)))
	}
	switch {
	case len(reject) > 0:
		res.Verdict = compare.Reject
		res.Reasons = append(res.Reasons, reject...)
	case len(uncertain) > 0:
		res.Verdict = compare.Inconclusive
		res.Reasons = append(res.Reasons, uncertain...)
	default:
		res.Verdict = compare.Accept
		res.Reasons = append(res.Reasons, fmt.Sprintf("no critical metric worse, score %.0f, no trigger breached (%d checked)", res.Score, len(res.Triggers)))
	}
}

func failedNames(res *LiveResult) string {
	var out []string
	for _, m := range res.Metrics {
		if m.Worse {
			out = append(out, m.Name)
		}
	}
	if len(out) == 0 {
		return "none worse"
	}
	return strings.Join(out, ", ") + " worse"
}
