package scrape

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/engine"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/rundir"
)

// quantileNote says how every server-side quantile was obtained.
const quantileNote = "bucket-interpolated: histogram deltas over the window (counter resets handled per series), linear within the bucket as Prometheus histogram_quantile; the true value lies in the bucket"

// FillFromDir reads the run directory's samples file name (a regular file only) and fills
// stages 4, 2 and 5 of ev (see FillSamples). The file is streamed twice (see store): its
// size bounds neither pass's memory.
func FillFromDir(ev *evidence.Evidence, d *rundir.Dir, name, engineOverride string) error {
	f, err := d.OpenFile(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return fillFrom(ev, f, d.File(name), engineOverride)
}

// FillFromFile reads a metrics.jsonl and fills stages 4, 2 and 5 of ev (see Fill).
// engineOverride forces the engine adapter ("" auto-detects).
func FillFromFile(ev *evidence.Evidence, path, engineOverride string) error {
	f, err := rundir.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return fillFrom(ev, f, path, engineOverride)
}

// fillFrom streams the samples of f (named path in errors) twice: the scan, then the ingest.
func fillFrom(ev *evidence.Evidence, f io.ReadSeeker, path, engineOverride string) error {
	st := newStore(ev.Run.StartedAt)
	if err := eachHead(f, st.scan); err != nil {
		return fmt.Errorf("%s:%w", path, err)
	}
	if err := st.prepare(ev.Run.Phases, engineOverride); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := EachSample(f, func(s *Sample) error { st.ingest(s); return nil }); err != nil {
		return fmt.Errorf("%s:%w", path, err)
	}
	st.finish()
	return st.fill(ev)
}

// FillSamples fills ev from samples already in memory.
//
// Windows: one per phase of ev.Run.Phases (seconds since ev.Run.StartedAt); signals carry
// the phase name, so the warm one is the headline. Without phases, one window over all
// samples with no phase. A zero StartedAt means the first sample's time.
func FillSamples(ev *evidence.Evidence, samples []Sample, engineOverride string) error {
	st, err := buildSamples(samples, ev.Run.StartedAt, ev.Run.Phases, engineOverride)
	if err != nil {
		return err
	}
	return st.fill(ev)
}

// buildSamples is the store of samples in memory, in time order (a stable sort), over the
// windows of phases.
func buildSamples(samples []Sample, base time.Time, phases []evidence.Phase, engineOverride string) (*store, error) {
	byT := make([]*Sample, len(samples))
	for i := range samples {
		byT[i] = &samples[i]
	}
	sort.SliceStable(byT, func(i, j int) bool { return byT[i].T.Before(byT[j].T) })
	st := newStore(base)
	for _, s := range byT {
		st.scan(headOf(s))
	}
	// Endpoints in the order they first appear in samples (as in a file), not in time order.
	first := map[string]int{}
	for i := range samples {
		if _, ok := first[samples[i].Endpoint]; !ok {
			first[samples[i].Endpoint] = i
		}
	}
	sort.SliceStable(st.endpoints, func(i, j int) bool { return first[st.endpoints[i].id] < first[st.endpoints[j].id] })
	if err := st.prepare(phases, engineOverride); err != nil {
		return nil, err
	}
	for _, s := range byT {
		st.ingest(s)
	}
	st.finish()
	return st, nil
}

// finish ends the second pass: percents made ratios, replicas labelled.
func (st *store) finish() {
	for _, ep := range st.endpoints {
		if ep.ad != nil {
			ep.rescalePercents()
			if ep.dropped > 0 {
				st.notes[ep.kind] = append(st.notes[ep.kind], fmt.Sprintf("%s: %d new series not stored past pel's bound of %d per endpoint (labels changing at every scrape?)", ep.id, ep.dropped, maxStoreSeries))
			}
		}
	}
	st.labelReplicas()
}

// fill computes the signals of every window from a finished store.
func (st *store) fill(ev *evidence.Evidence) error {
	engines := st.replicasOf(KindEngine)
	gpus := st.replicasOf(KindDCGM)
	for _, ep := range st.endpoints {
		if ep.kind == KindEngine && ep.ad != nil && ev.Run.Engine == "" {
			ev.Run.Engine = ep.ad.Engine
		}
	}
	if ev.Run.Engine != "" && ev.Run.EngineForm == "" {
		ev.Run.EngineForm = engine.Lookup(ev.Run.Engine).Processes
	}
	dropped := 0
	for _, w := range st.wins {
		var all []evidence.Signal
		all = append(all, st.engineSignals(engines, w, w.name)...)
		all = append(all, st.gpuSignals(gpus, w, w.name)...)
		all = append(all, distSignals(engines, w, w.name)...)
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
	last := map[string]*Sample{}
	for _, ep := range st.endpoints {
		if ep.lastOK != nil {
			last[ep.id] = ep.lastOK
		}
	}
	systemConfig(ev, last)
	st.annotate(ev, KindEngine, evidence.StageServingCache)
	st.annotate(ev, KindDCGM, evidence.StageGPUExecution)
	st.series(ev)
	return nil
}

// sig is a signal of the scrape; its figures have six significant digits, which keep
// evidence.json readable and golden files stable across platforms.
func sig(name, unit string, stage int, source, phase string, w window, v float64) evidence.Signal {
	return evidence.Signal{Name: name, Value: figure.Sig6(v), Unit: unit, Stage: stage, Source: source, Phase: phase, Window: &evidence.Window{StartS: figure.Sig6(w.a), EndS: figure.Sig6(w.b)}}
}

func sourceOf(rs []*replica) string {
	if len(rs) == 0 {
		return ""
	}
	return rs[0].ep.ad.source()
}

// coverage is the union extent of the replicas' endpoints inside w.
func coverage(rs []*replica, w window) window {
	out := window{a: math.Inf(1), b: math.Inf(-1), i: w.i, name: w.name, load: w.load}
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
	// A gauge's window ends with the phase's arrivals (window.gaugeEnd).
	gw := cw
	gw.b = math.Min(cw.b, w.gaugeEnd())
	addGauge := func(name, unit string, v float64, note string) {
		s := sig(name, unit, stage, src, phase, gw, v)
		s.Note = note
		out = append(out, s)
	}
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
					s := sig(x.n, unit, stage, r.ep.ad.source(), phase, gw, x.v)
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
			addGauge(meanName, unit, worstMean, n)
			addGauge(maxName, unit, worstMax, n)
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
			note := fmt.Sprintf("bucket-interpolated from histogram deltas; true value in [%g, %g] ms; n=%.0f", figure.Sig6(lo*1000), figure.Sig6(hi*1000), d.cnt)
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
			note += fmt.Sprintf("; %g s of schedule dropped", figure.Sig6(skipped))
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
	// Every DCGM field here is a gauge: its window ends with the phase's arrivals
	// (window.gaugeEnd).
	cw := coverage(rs, w)
	cw.b = math.Min(cw.b, w.gaugeEnd())
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
		failed, first, late := ep.winFailed[w.i], ep.winFirst[w.i], ep.winLate[w.i]
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
		if ep.nFailures > 0 || ep.ad == nil || ep.nOK < 2 {
			clean = false
		}
		if ep.nFailures > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s: %d of %d samples failed (first: %s at %+.1f s); windows use the samples around the gaps", ep.id, ep.nFailures, ep.nAttempts, ep.firstFail.err, ep.firstFail.t))
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
// preemptions/s and generation tokens/s between samples; per GPU, the DCGM ratios. Each
// is downsampled past maxChartPoints (see chart), and the replicas of one endpoint past
// maxChartReplicas are drawn as one line per quantity (their max, or for a rate their sum).
func (st *store) series(ev *evidence.Evidence) {
	downsampled, folded := 0, map[int][]string{}
	add := func(stage int, s evidence.Series, c *chart) {
		s.T, s.V, s.Min, s.Max = c.points()
		if s.Min != nil {
			downsampled++
		}
		ev.Stage(stage).Series = append(ev.Stage(stage).Series, s)
	}
	engines := st.replicasOf(KindEngine)
	multi := len(engines) > 1
	gauges := []struct{ q, name, unit string }{
		{qWaiting, evidence.SeriesWaiting, "count"},
		{qRunning, evidence.SeriesRunning, "count"},
		{qKVUsage, evidence.SeriesKVUsage, "ratio"},
	}
	rates := []struct{ q, name, unit string }{
		{qPreemptions, evidence.SigPreemptionRate, "1/s"},
		{qGenTokens, evidence.SigGenTokensRate, "tokens/s"},
	}
	for _, r := range engines {
		if r.folded() {
			continue
		}
		var labels map[string]string
		if multi {
			labels = map[string]string{"engine": r.label}
		}
		src := r.ep.ad.source()
		for _, x := range gauges {
			if g := r.gauges[x.q]; g != nil && g.chart != nil {
				add(evidence.StageServingCache, evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: labels}, g.chart)
			}
		}
		for _, x := range rates {
			if len(r.counters[x.q]) == 0 || r.ep.nOK < 2 {
				continue
			}
			c := r.rates[x.q]
			if c == nil {
				c = &chart{}
			}
			add(evidence.StageServingCache, evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: labels}, c)
		}
	}
	gpuGauges := []struct{ q, name string }{
		{qGPUUtil, evidence.SigGPUUtil}, {qSMActive, evidence.SigSMActive}, {qSMOccupancy, evidence.SigSMOccupancy},
		{qTensorActive, evidence.SigTensorActive}, {qDRAMActive, evidence.SigDRAMActive},
	}
	gpus := st.replicasOf(KindDCGM)
	multi = len(gpus) > 1
	for _, r := range gpus {
		if r.folded() {
			continue
		}
		var labels map[string]string
		if multi {
			labels = map[string]string{"gpu": r.label}
		}
		for _, x := range gpuGauges {
			if g := r.gauges[x.q]; g != nil && g.chart != nil {
				add(evidence.StageGPUExecution, evidence.Series{Name: x.name, Unit: "ratio", Source: "dcgm", Labels: labels}, g.chart)
			}
		}
	}
	// The fold of each endpoint's replicas past maxChartReplicas.
	for _, ep := range st.endpoints {
		if ep.ad == nil || len(ep.order) <= maxChartReplicas {
			continue
		}
		n := len(ep.order) - maxChartReplicas
		stage, key, src := evidence.StageServingCache, "engine", ep.ad.source()
		qs := append([]struct{ q, name, unit string }{}, gauges...)
		if ep.kind == KindDCGM {
			stage, key, src, qs = evidence.StageGPUExecution, "gpu", "dcgm", nil
			for _, x := range gpuGauges {
				qs = append(qs, struct{ q, name, unit string }{x.q, x.name, "ratio"})
			}
		}
		host := ep.host + " "
		if len(st.endpoints) == 1 {
			host = ""
		}
		for _, x := range qs {
			if c := ep.fold[x.q]; c != nil {
				add(stage, evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: map[string]string{key: fmt.Sprintf("%sother %d (max)", host, n)}}, c)
			}
		}
		if ep.kind == KindEngine {
			for _, x := range rates {
				if c := ep.foldRate[x.q]; c != nil {
					add(stage, evidence.Series{Name: x.name, Unit: x.unit, Source: src, Labels: map[string]string{key: fmt.Sprintf("%sother %d (sum)", host, n)}}, c)
				}
			}
		}
		folded[stage] = append(folded[stage], fmt.Sprintf("%s: %d replicas drawn one by one, the other %d as one line per quantity (labelled \"other %d\": their max, or for a rate their sum)", ep.id, maxChartReplicas, n, n))
	}
	for _, n := range []int{evidence.StageServingCache, evidence.StageGPUExecution} {
		s := ev.Stage(n)
		sort.SliceStable(s.Series, func(i, j int) bool { return s.Series[i].Name < s.Series[j].Name })
		s.Notes = append(s.Notes, folded[n]...)
	}
	if downsampled > 0 {
		s := ev.Stage(evidence.StageServingCache)
		if len(ev.Stage(evidence.StageServingCache).Series) == 0 {
			s = ev.Stage(evidence.StageGPUExecution)
		}
		s.Notes = append(s.Notes, fmt.Sprintf("%d time series have more samples than the %d points a chart holds: each point is a bucket of consecutive samples (equal counts) at its last sample's time, with the mean of their values and their min and max beside it", downsampled, maxChartPoints))
	}
}
