package scrape

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
)

// quantileNote says how every server-side quantile was obtained.
const quantileNote = "bucket-interpolated: histogram deltas over the window (counter resets handled per series), linear within the bucket as Prometheus histogram_quantile; the true value lies in the bucket"

// FillFromDir reads the run directory's samples file name (a regular file only) and fills
// stages 4, 2 and 5 of ev (see FillSamples).
func FillFromDir(ev *evidence.Evidence, d *rundir.Dir, name, engineOverride string) error {
	f, err := d.OpenFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := DecodeSamples(f)
	if err != nil {
		return fmt.Errorf("%s:%w", d.File(name), err)
	}
	return FillSamples(ev, samples, engineOverride)
}

// FillFromFile reads a metrics.jsonl and fills stages 4, 2 and 5 of ev (see Fill).
// engineOverride forces the engine adapter ("" auto-detects).
func FillFromFile(ev *evidence.Evidence, path, engineOverride string) error {
	samples, err := ReadSamples(path)
	if err != nil {
		return err
	}
	return FillSamples(ev, samples, engineOverride)
}

// FillSamples fills ev from samples already in memory.
//
// Windows: one per phase of ev.Run.Phases (seconds since ev.Run.StartedAt); signals carry
// the phase name, so the warm one is the headline. Without phases, one window over all
// samples with no phase. A zero StartedAt means the first sample's time.
func FillSamples(ev *evidence.Evidence, samples []Sample, engineOverride string) error {
	st, err := build(samples, ev.Run.StartedAt, engineOverride)
	if err != nil {
		return err
	}
	type phase struct {
		name string
		w    window
	}
	var phases []phase
	for _, p := range ev.Run.Phases {
		phases = append(phases, phase{p.Name, window{p.StartS, p.EndS}})
	}
	if len(phases) == 0 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, ep := range st.endpoints {
			for _, t := range ep.attempts {
				lo, hi = math.Min(lo, t), math.Max(hi, t)
			}
		}
		if hi > lo {
			phases = append(phases, phase{"", window{lo, hi}})
		}
	}
	engines := st.replicasOf(KindEngine)
	gpus := st.replicasOf(KindDCGM)
	for _, ep := range st.endpoints {
		if ep.kind == KindEngine && ep.ad != nil && ev.Run.Engine == "" {
			ev.Run.Engine = ep.ad.Engine
		}
	}
	dropped := 0
	for _, p := range phases {
		var all []evidence.Signal
		all = append(all, st.engineSignals(engines, p.w, p.name)...)
		all = append(all, st.gpuSignals(gpus, p.w, p.name)...)
		all = append(all, distSignals(engines, p.w, p.name)...)
		for _, s := range all {
			if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
				dropped++ // NaN buckets or bounds on a page: no number to report
				continue
			}
			ev.Add(s)
		}
	}
	if dropped > 0 {
		st.notes[KindEngine] = append(st.notes[KindEngine], fmt.Sprintf("%d signals left out: not finite (NaN or infinite values on the pages)", dropped))
	}
	systemConfig(ev, samples)
	st.annotate(ev, KindEngine, evidence.StageServingCache)
	st.annotate(ev, KindDCGM, evidence.StageGPUExecution)
	st.series(ev)
	return nil
}

func sig(name, unit string, stage int, source, phase string, w window, v float64) evidence.Signal {
	return evidence.Signal{Name: name, Value: round(v), Unit: unit, Stage: stage, Source: source, Phase: phase, Window: &evidence.Window{StartS: round(w.a), EndS: round(w.b)}}
}

// round keeps evidence.json readable and golden files stable across platforms.
func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 6-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func sourceOf(rs []*replica) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[0].ep.ad.source()
}

// coverage is the union extent of the replicas' endpoints inside w.
func coverage(rs []*replica, w window) window {
	out := window{math.Inf(1), math.Inf(-1)}
	for _, r := range rs {
		if cw, ok := r.ep.clip(w); ok {
			out.a, out.b = math.Min(out.a, cw.a), math.Max(out.b, cw.b)
		}
	}
	if out.a > out.b {
		return w
	}
	return out
}

// engineSignals computes stage-4 signals over w. Aggregation across replicas
// (data-parallel engines, several endpoints):
//   - waiting/running/KV usage: the worst replica (max of per-replica means, max of
//     per-replica maxima) — the replica that limits the tasks routed to it — plus one
//     signal per replica labelled engine=<id> when there are several;
//   - counters (tokens, preemptions): summed rates (deployment totals);
//   - prefix-cache and spec-decode ratios: pooled (sum of hits / sum of queries);
//   - latency quantiles: from the merged histogram deltas of all replicas.
func (st *store) engineSignals(rs []*replica, w window, phase string) []evidence.Signal {
	if len(rs) == 0 {
		return nil
	}
	src := sourceOf(rs)
	stage := evidence.StageServingCache
	cw := coverage(rs, w)
	var out []evidence.Signal
	add := func(name, unit string, v float64, note string) {
		s := sig(name, unit, stage, src, phase, cw, v)
		s.Note = note
		out = append(out, s)
	}
	multi := len(rs) > 1
	gaugePair := func(q, meanName, maxName, unit, note string) {
		worstMean, worstMax := math.Inf(-1), math.Inf(-1)
		found := false
		for _, r := range rs {
			mean, max, ok := r.gaugeStats(q, w)
			if !ok {
				continue
			}
			found = true
			worstMean, worstMax = math.Max(worstMean, mean), math.Max(worstMax, max)
			if multi {
				for _, x := range []struct {
					n string
					v float64
				}{{meanName, mean}, {maxName, max}} {
					s := sig(x.n, unit, stage, r.ep.ad.source(), phase, cw, x.v)
					s.Labels = map[string]string{"engine": r.label}
					out = append(out, s)
				}
			}
		}
		if found {
			n := note
			if multi {
				n = strings.TrimSpace(n + " worst of " + fmt.Sprint(len(rs)) + " replicas")
			}
			add(meanName, unit, worstMean, n)
			add(maxName, unit, worstMax, n)
		}
	}
	gaugePair(qWaiting, evidence.SigWaitingMean, evidence.SigWaitingMax, "count", "")
	gaugePair(qRunning, evidence.SigRunningMean, evidence.SigRunningMax, "count", "")
	gaugePair(qKVUsage, evidence.SigKVUsageMean, evidence.SigKVUsageMax, "ratio", percentNote(rs, qKVUsage))

	sumRate := func(q string) (inc, rate float64, ok bool) {
		for _, r := range rs {
			i, d, k := r.increase(q, w)
			if !k || d <= 0 {
				continue
			}
			inc += i
			rate += i / d
			ok = true
		}
		return inc, rate, ok
	}
	if inc, rate, ok := sumRate(qPreemptions); ok {
		add(evidence.SigPreemptionRate, "1/s", rate, "")
		add(evidence.SigPreemptions, "count", inc, "")
	}
	if _, rate, ok := sumRate(qPromptTokens); ok {
		add(evidence.SigPromptTokensRate, "tokens/s", rate, "")
	}
	if _, rate, ok := sumRate(qGenTokens); ok {
		add(evidence.SigGenTokensRate, "tokens/s", rate, "")
	}
	if _, rate, ok := sumRate(qServiceSeconds); ok {
		add(evidence.SigInServiceMean, "count", rate, "rate of the per-request processing seconds the engine adds up (Little's law: requests in service on average), exact between scrapes")
	}
	if _, rate, ok := sumRate(qSteps); ok {
		add(evidence.SigStepsRate, "1/s", rate, "")
	}
	if _, mx, ok := maxGauge(rs, qTokensMax, w); ok {
		add(evidence.SigTokensMax, "tokens", mx, "largest context any sequence held since the engine started")
	}
	hits, _, okH := sumRate(qPrefixHits)
	queries, _, okQ := sumRate(qPrefixQueries)
	switch {
	case okH && okQ && queries > 0:
		add(evidence.SigPrefixHitRate, "ratio", hits/queries, "prefix-cache hits / queries over the window")
	default:
		if m, ok := meanGauge(rs, qPrefixHitGauge, w); ok {
			add(evidence.SigPrefixHitRate, "ratio", m, strings.TrimSpace("engine-reported hit-rate gauge, averaged over the window "+percentNote(rs, qPrefixHitGauge)))
		}
	}

	for _, x := range serverQuantiles {
		d, skipped := mergedDelta(rs, x.q, w)
		if d == nil {
			continue
		}
		if name, ok := serverMeans[x.q]; ok && d.cnt >= 1 {
			add(name, "ms", d.sum/d.cnt*1000, fmt.Sprintf("histogram sum/count deltas over the window; n=%.0f", d.cnt))
		}
		for _, p := range []struct {
			name string
			q    float64
		}{{x.p50, 0.5}, {x.p99, 0.99}} {
			v, lo, hi, ok := d.quantile(p.q)
			if !ok {
				continue
			}
			note := fmt.Sprintf("bucket-interpolated from histogram deltas; true value in [%g, %g] ms; n=%.0f", round(lo*1000), round(hi*1000), d.cnt)
			if skipped > 0 {
				note += fmt.Sprintf("; %d series with other bucket bounds left out", skipped)
			}
			if r := rs[0]; x.q == qITL && r.ep.ad.Engine == "tgi" {
				note += "; TGI per-request mean time per token"
			}
			add(p.name, "ms", v*1000, note)
		}
	}
	if d, _ := mergedDelta(rs, qIterTokens, w); d != nil && d.cnt > 0 {
		add(evidence.SigIterationTokensAvg, "tokens", d.sum/d.cnt, "mean tokens per engine step: histogram sum/count deltas")
	}
	acc, _, okA := sumRate(qSpecAccepted)
	draftTok, _, okT := sumRate(qSpecDraftTok)
	drafts, _, okD := sumRate(qSpecDrafts)
	if okA && okT && draftTok > 0 {
		add(evidence.SigSpecAcceptanceRate, "ratio", acc/draftTok, "accepted / draft tokens over the window")
	} else if m, ok := meanGauge(rs, qSpecRateGauge, w); ok {
		add(evidence.SigSpecAcceptanceRate, "ratio", m, strings.TrimSpace("engine-reported gauge, averaged over the window "+percentNote(rs, qSpecRateGauge)))
	}
	if okA && okD && drafts > 0 {
		add(evidence.SigSpecMeanAcceptLen, "tokens", 1+acc/drafts, "1 + accepted tokens / drafts (counts the bonus token, as vLLM does)")
	} else if m, ok := meanGauge(rs, qSpecLenGauge, w); ok {
		add(evidence.SigSpecMeanAcceptLen, "tokens", m, "engine-reported gauge, averaged over the window")
	}
	// pel sim's step lag: the worst any replica showed at a sample. The gauge holds the
	// lag of the last step only, so the dropped-schedule counter goes in the note: it
	// catches lag between samples too.
	lagMax, lagOK := math.Inf(-1), false
	for _, r := range rs {
		if _, mx, ok := r.gaugeStats(qStepLag, w); ok {
			lagMax, lagOK = math.Max(lagMax, mx), true
		}
	}
	if lagOK {
		note := "max over the window of pel_sim_step_lag_seconds (simulator overload, not a scenario fault)"
		if skipped, _, ok := sumRate(qClockSkipped); ok {
			note += fmt.Sprintf("; %g s of schedule dropped", round(skipped))
		}
		add(evidence.SigEngineStepLagMs, "ms", lagMax*1000, note)
	}
	gaps, note := st.gaps(KindEngine, w)
	add(evidence.SigScrapeGaps, "count", float64(gaps), note)
	return out
}

// percentNote says which endpoints reported a ratio as a percent.
func percentNote(rs []*replica, q string) string {
	seen := map[string]bool{}
	var eps []string
	for _, r := range rs {
		if r.ep.percent[q] && !seen[r.ep.id] {
			seen[r.ep.id] = true
			eps = append(eps, r.ep.id)
		}
	}
	if len(eps) == 0 {
		return ""
	}
	return "(reported as a percent by " + strings.Join(eps, ", ") + "; divided by 100)"
}

// maxGauge is the largest sample of a gauge over w on any replica.
func maxGauge(rs []*replica, q string, w window) (mean, mx float64, ok bool) {
	mx = math.Inf(-1)
	for _, r := range rs {
		if m, x, k := r.gaugeStats(q, w); k {
			mean, mx, ok = m, math.Max(mx, x), true
		}
	}
	return mean, mx, ok
}

func meanGauge(rs []*replica, q string, w window) (float64, bool) {
	sum, n := 0.0, 0
	for _, r := range rs {
		if m, _, ok := r.gaugeStats(q, w); ok {
			sum += m
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func mergedDelta(rs []*replica, q string, w window) (*hdelta, int) {
	var d *hdelta
	skipped := 0
	for _, r := range rs {
		x, s := r.delta(q, w)
		skipped += s
		if x == nil {
			continue
		}
		if d == nil {
			d = x.clone()
			continue
		}
		if !d.merge(x) {
			skipped++
		}
	}
	return d, skipped
}

// gpuSignals computes stage-2 signals from DCGM. Activity ratios are averaged over the
// GPUs (and given per GPU, labelled gpu=<id>, when there are several); FB used is the
// peak of any GPU; NVLink/PCIe rates are summed. GPU_UTIL only says a kernel was
// running: its note points at the fields that say what the GPU was doing.
func (st *store) gpuSignals(rs []*replica, w window, phase string) []evidence.Signal {
	if len(rs) == 0 {
		return nil
	}
	src := "dcgm"
	stage := evidence.StageGPUExecution
	cw := coverage(rs, w)
	var out []evidence.Signal
	have := map[string]bool{}
	for _, r := range rs {
		for q := range r.gauges {
			have[q] = true
		}
	}
	utilNote := "DCGM_FI_DEV_GPU_UTIL/100: share of time any kernel ran, not work done; read it with"
	var dims []string
	for _, x := range []struct{ q, n string }{{qSMActive, "SM active"}, {qSMOccupancy, "SM occupancy"}, {qTensorActive, "tensor active"}, {qDRAMActive, "DRAM active"}} {
		if have[x.q] {
			dims = append(dims, x.n)
		}
	}
	if len(dims) == 0 {
		utilNote = "DCGM_FI_DEV_GPU_UTIL/100: share of time any kernel ran, not work done; the profiling fields that say what limits the GPU (DCGM_FI_PROF_SM_ACTIVE, _SM_OCCUPANCY, _PIPE_TENSOR_ACTIVE, _DRAM_ACTIVE) are absent, so no conclusion is drawn from it"
	} else {
		utilNote += " " + strings.Join(dims, ", ")
	}
	multi := len(rs) > 1
	for _, x := range []struct {
		q, name, unit, agg, note string
	}{
		{qGPUUtil, evidence.SigGPUUtil, "ratio", "mean", utilNote},
		{qSMActive, evidence.SigSMActive, "ratio", "mean", "DCGM_FI_PROF_SM_ACTIVE: cycles with ≥1 warp resident on an SM"},
		{qSMOccupancy, evidence.SigSMOccupancy, "ratio", "mean", "DCGM_FI_PROF_SM_OCCUPANCY: resident warps / max warps"},
		{qTensorActive, evidence.SigTensorActive, "ratio", "mean", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: cycles the tensor pipe was busy"},
		{qDRAMActive, evidence.SigDRAMActive, "ratio", "mean", "DCGM_FI_PROF_DRAM_ACTIVE: cycles the memory interface was busy (bandwidth use)"},
		{qFBUsed, evidence.SigFBUsedMiB, "MiB", "peak", "DCGM_FI_DEV_FB_USED: peak of any GPU"},
		{qNVLink, evidence.SigNVLinkBytesPS, "bytes/s", "sum", "DCGM_FI_PROF_NVLINK_TX_BYTES + _RX_BYTES, summed over GPUs"},
		{qPCIe, evidence.SigPCIeBytesPS, "bytes/s", "sum", "DCGM_FI_PROF_PCIE_TX_BYTES + _RX_BYTES, summed over GPUs"},
	} {
		var vals []float64
		for _, r := range rs {
			mean, max, ok := r.gaugeStats(x.q, w)
			if !ok {
				continue
			}
			v := mean
			if x.agg == "peak" {
				v = max
			}
			vals = append(vals, v)
			if multi {
				s := sig(x.name, x.unit, stage, src, phase, cw, v)
				s.Labels = map[string]string{"gpu": r.label}
				out = append(out, s)
			}
		}
		if len(vals) == 0 {
			continue
		}
		var v float64
		switch x.agg {
		case "mean":
			for _, y := range vals {
				v += y
			}
			v /= float64(len(vals))
		case "peak":
			v = math.Inf(-1)
			for _, y := range vals {
				v = math.Max(v, y)
			}
		case "sum":
			for _, y := range vals {
				v += y
			}
		}
		s := sig(x.name, x.unit, stage, src, phase, cw, v)
		s.Note = x.note
		if multi && x.agg == "mean" {
			s.Note += fmt.Sprintf("; mean of %d GPUs", len(vals))
		}
		out = append(out, s)
	}
	return out
}

// distSignals: stage 5 — how many engine replicas, and how evenly they were loaded
// (coefficient of variation of the per-replica mean running requests).
func distSignals(rs []*replica, w window, phase string) []evidence.Signal {
	if len(rs) == 0 {
		return nil
	}
	src := sourceOf(rs)
	cw := coverage(rs, w)
	out := []evidence.Signal{sig(evidence.SigEngines, "count", evidence.StageDistributed, src, phase, cw, float64(len(rs)))}
	if len(rs) < 2 {
		return out
	}
	var means []float64
	for _, r := range rs {
		if m, _, ok := r.gaugeStats(qRunning, w); ok {
			means = append(means, m)
		}
	}
	if len(means) < 2 {
		return out
	}
	mu := 0.0
	for _, m := range means {
		mu += m
	}
	mu /= float64(len(means))
	if mu <= 0 {
		return out
	}
	ss := 0.0
	for _, m := range means {
		ss += (m - mu) * (m - mu)
	}
	cv := math.Sqrt(ss/float64(len(means))) / mu
	s := sig(evidence.SigReplicaImbalanceCV, "ratio", evidence.StageDistributed, src, phase, cw, cv)
	s.Note = fmt.Sprintf("population CV of mean running requests over %d replicas", len(means))
	out = append(out, s)
	return out
}

// gaps counts failed samples and late intervals (attempts more than 1.5 intervals
// apart) of the endpoints of one kind inside w, with a note per endpoint.
func (st *store) gaps(kind string, w window) (int, string) {
	total := 0
	var notes []string
	for _, ep := range st.endpoints {
		if ep.kind != kind {
			continue
		}
		failed := 0
		first := ""
		for _, f := range ep.failures {
			if f.t >= w.a && f.t <= w.b {
				failed++
				if first == "" {
					first = fmt.Sprintf("%s at %+.1f s", f.err, f.t)
				}
			}
		}
		late := 0
		if ep.interval > 0 {
			for i := 1; i < len(ep.attempts); i++ {
				a, b := ep.attempts[i-1], ep.attempts[i]
				if b-a > 1.5*ep.interval && b >= w.a && a <= w.b {
					late++
				}
			}
		}
		if failed+late == 0 {
			continue
		}
		total += failed + late
		n := fmt.Sprintf("%s: %d failed", ep.id, failed)
		if first != "" {
			n += " (first: " + first + ")"
		}
		if late > 0 {
			n += fmt.Sprintf(", %d late", late)
		}
		notes = append(notes, n)
	}
	return total, strings.Join(notes, "; ")
}

// annotate adds sources, whole-run notes and the status of the stage fed by one kind.
func (st *store) annotate(ev *evidence.Evidence, kind string, stage int) {
	var eps []*epData
	for _, ep := range st.endpoints {
		if ep.kind == kind {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return
	}
	s := ev.Stage(stage)
	clean := true
	for _, ep := range eps {
		src := ep.id
		if ep.ad != nil {
			src = ep.ad.source() + " " + ep.id
		}
		if ep.origin == OriginPrometheus {
			src += " (via Prometheus query_range)"
		}
		s.Sources = append(s.Sources, src)
		if len(ep.failures) > 0 || ep.ad == nil || len(ep.okT) < 2 {
			clean = false
		}
		if len(ep.failures) > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %d of %d samples failed (first: %s at %+.1f s); windows use the samples around the gaps", ep.id, len(ep.failures), len(ep.attempts), ep.failures[0].err, ep.failures[0].t))
		}
		if len(ep.resets) > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %d counter reset(s) (engine restart?), handled like Prometheus rate(): %s", ep.id, ep.nResets, strings.Join(firstN(ep.resets, 3), "; ")))
		}
		if ep.ad != nil && kind == KindEngine {
			var missing []string
			for _, q := range []string{qWaiting, qRunning, qKVUsage, qPreemptions, qTTFT, qQueue} {
				if len(ep.chosen[q]) == 0 {
					missing = append(missing, q)
				}
			}
			if len(missing) > 0 {
				s.Notes = append(s.Notes, fmt.Sprintf("%s (%s): not exposed: %s", ep.id, ep.ad.Engine, strings.Join(missing, ", ")))
			}
		}
	}
	s.Notes = append(s.Notes, st.notes[kind]...)
	if kind == KindEngine && len(s.Signals) > 0 {
		s.Notes = append(s.Notes, "server latency quantiles are "+quantileNote)
	}
	// Stage 4 is scrape's alone: its status is ours. Stage 2 is shared with profiler
	// traces: never downgrade what another source established.
	switch {
	case len(s.Signals) == 0:
	case clean:
		s.Status = evidence.StatusCollected
	case kind == KindEngine || s.Status == evidence.StatusMissing:
		s.Status = evidence.StatusPartial
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// series adds chart series: per replica, waiting/running/KV usage at every sample and
// preemptions/s and generation tokens/s between samples; per GPU, the DCGM ratios.
func (st *store) series(ev *evidence.Evidence) {
	engines := st.replicasOf(KindEngine)
	multi := len(engines) > 1
	for _, r := range engines {
		var labels map[string]string
		if multi {
			labels = map[string]string{"engine": r.label}
		}
		src := r.ep.ad.source()
		for _, x := range []struct{ q, name, unit string }{
			{qWaiting, evidence.SeriesWaiting, "count"},
			{qRunning, evidence.SeriesRunning, "count"},
			{qKVUsage, evidence.SeriesKVUsage, "ratio"},
		} {
			if g := r.gauges[x.q]; g != nil && len(g.t) > 0 {
				ft, fv := finite(g.t, g.v)
				ev.Stage(evidence.StageServingCache).Series = append(ev.Stage(evidence.StageServingCache).Series,
					evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: labels, T: ft, V: fv})
			}
		}
		for _, x := range []struct{ q, name, unit string }{
			{qPreemptions, evidence.SigPreemptionRate, "1/s"},
			{qGenTokens, evidence.SigGenTokensRate, "tokens/s"},
		} {
			m := r.counters[x.q]
			if len(m) == 0 || len(r.ep.okT) < 2 {
				continue
			}
			var t, v []float64
			for i := 1; i < len(r.ep.okT); i++ {
				a, b := r.ep.okT[i-1], r.ep.okT[i]
				inc := 0.0
				for _, c := range m {
					inc += interp(c.t, c.c, b) - interp(c.t, c.c, a)
				}
				t = append(t, b)
				v = append(v, inc/(b-a))
			}
			ft, fv := finite(t, v)
			ev.Stage(evidence.StageServingCache).Series = append(ev.Stage(evidence.StageServingCache).Series,
				evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: labels, T: ft, V: fv})
		}
	}
	gpus := st.replicasOf(KindDCGM)
	multi = len(gpus) > 1
	for _, r := range gpus {
		var labels map[string]string
		if multi {
			labels = map[string]string{"gpu": r.label}
		}
		for _, x := range []struct{ q, name string }{
			{qGPUUtil, evidence.SigGPUUtil}, {qSMActive, evidence.SigSMActive}, {qSMOccupancy, evidence.SigSMOccupancy},
			{qTensorActive, evidence.SigTensorActive}, {qDRAMActive, evidence.SigDRAMActive},
		} {
			if g := r.gauges[x.q]; g != nil && len(g.t) > 0 {
				ft, fv := finite(g.t, g.v)
				ev.Stage(evidence.StageGPUExecution).Series = append(ev.Stage(evidence.StageGPUExecution).Series,
					evidence.Series{Name: x.name, Unit: "ratio", Source: "dcgm", Labels: labels, T: ft, V: fv})
			}
		}
	}
	for _, n := range []int{evidence.StageServingCache, evidence.StageGPUExecution} {
		s := ev.Stage(n)
		sort.SliceStable(s.Series, func(i, j int) bool { return s.Series[i].Name < s.Series[j].Name })
	}
}

// finite returns the points of a series whose value is a finite number (JSON has no NaN).
func finite(t, v []float64) ([]float64, []float64) {
	var ot, ov []float64
	for i := range v {
		if !math.IsNaN(v[i]) && !math.IsInf(v[i], 0) {
			ot, ov = append(ot, round(t[i])), append(ov, round(v[i]))
		}
	}
	return ot, ov
}
