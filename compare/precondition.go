package compare

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/figure"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape"
)

// Precondition kinds.
const (
	// KindIdentity: what ran (contract, engine, its configuration). A difference is either
	// the change under test or a mistake; compare states it first and never guesses which.
	KindIdentity = "identity"
	// KindState: conditions no change under test should alter (cache state carried over
	// from an earlier run, a restart inside the window, how tokens were counted, the load
	// generator's own lateness). A material mismatch makes the runs not comparable.
	KindState = "state"
)

// Precondition names, in the order they are checked and printed.
const (
	PreContract   = "contract"
	PreEngine     = "engine"
	PreConfig     = "engine_config"
	PreRestarts   = "engine_restarts"
	PrePromptCach = "prompt_cache"
	PreTokens     = "token_source"
	PreLateness   = "load_generator_lateness"
)

// Precondition is one thing that must match, or be accounted for, before a difference
// between two runs can be blamed on the change. The list is open: a later check (a
// structured prediction, say) appends its own with the same fields.
type Precondition struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // KindIdentity or KindState
	// Base and Candidate are each side's value as read ("-" when unknown); BaseValue and
	// CandidateValue carry the number behind it, when there is one.
	Base           string   `json:"base"`
	Candidate      string   `json:"candidate"`
	BaseValue      *float64 `json:"base_value,omitempty"`
	CandidateValue *float64 `json:"candidate_value,omitempty"`
	// OK: the two sides match (or the difference cannot matter). Known is false when a side
	// lacks the data to tell; such a check is never OK and never blocks.
	OK    bool `json:"ok"`
	Known bool `json:"known"`
	// Blocking: a mismatch that can explain a difference between the runs; any blocking
	// precondition makes the verdict not_comparable.
	Blocking bool   `json:"blocking"`
	Reason   string `json:"reason"`
}

// engineFacts is what a run's metrics.jsonl says about the engine behind it.
type engineFacts struct {
	sampled bool
	engine  string                       // adapter detected from the family names
	info    map[string]map[string]string // *_info family -> label -> value(s)
	resets  []time.Time                  // sample instants where the engine restarted (restartTracker)
}

// replicaLabels are labels that name a replica or a model rather than configure one: they
// are left out of the configuration compared across runs.
var replicaLabels = map[string]bool{"engine": true, "dp_rank": true, "gpu": true, "GPU_I_ID": true, "gpu_uuid": true, "instance": true, "job": true, "Hostname": true, "hostname": true, "model_name": true}

// maxEndpoints is the most engine endpoints a run's samples may name: each holds one
// sample's counters between samples (restartTracker).
const maxEndpoints = 1024

// engineFactsIn reads the run directory's samples file name (rundir.MetricsFile, or the
// candidate's of a canary run) one sample at a time; nil when the run sampled no engine
// /metrics. It holds one sample, and per endpoint its first sample's families and the
// counters of the one before.
func engineFactsIn(d *rundir.Dir, name string) (*engineFacts, error) {
	f, err := d.OpenFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var acc factsAcc
	if err := scrape.EachSample(f, acc.add); err != nil {
		return nil, fmt.Errorf("%s:%w", d.File(name), err)
	}
	return acc.facts(), nil
}

func engineFactsOf(ss []scrape.Sample) *engineFacts {
	var acc factsAcc
	for i := range ss {
		if err := acc.add(&ss[i]); err != nil {
			return nil
		}
	}
	return acc.facts()
}

// factsAcc gathers engineFacts from samples given in time order per endpoint (the order
// pel's collector writes them).
type factsAcc struct {
	eps map[string]*epFacts
}

type epFacts struct {
	first   time.Time
	names   map[string]bool // family names of the first sample
	info    []scrape.Family // its *_info families
	restart restartTracker  // counters of the sample before
	resets  []time.Time     // where the engine restarted
}

func (a *factsAcc) add(s *scrape.Sample) error {
	if s.Kind != scrape.KindEngine || !s.OK {
		return nil
	}
	if a.eps == nil {
		a.eps = map[string]*epFacts{}
	}
	ep := a.eps[s.Endpoint]
	if ep == nil {
		if len(a.eps) == maxEndpoints {
			return fmt.Errorf(" endpoint %.80q is one more than the %d engine endpoints a comparison reads", s.Endpoint, maxEndpoints)
		}
		ep = &epFacts{}
		a.eps[s.Endpoint] = ep
	}
	if ep.names == nil || s.T.Before(ep.first) {
		ep.first, ep.names, ep.info = s.T, map[string]bool{}, nil
		for _, fam := range s.Families {
			ep.names[fam.Name] = true
			if strings.HasSuffix(fam.Name, "_info") {
				ep.info = append(ep.info, fam)
			}
		}
	}
	if ep.restart.step(s) {
		ep.resets = append(ep.resets, s.T)
	}
	return nil
}

func (a *factsAcc) facts() *engineFacts {
	if len(a.eps) == 0 {
		return nil
	}
	f := &engineFacts{sampled: true, info: map[string]map[string]string{}}
	var eps []string
	for ep := range a.eps {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	names := map[string]bool{}
	resetAt := map[time.Time]bool{}
	for _, name := range eps {
		ep := a.eps[name]
		for n := range ep.names {
			names[n] = true
		}
		for _, fam := range ep.info {
			m := f.info[fam.Name]
			if m == nil {
				m = map[string]string{}
				f.info[fam.Name] = m
			}
			for _, met := range fam.Metrics {
				for k, v := range met.Labels {
					if replicaLabels[k] {
						continue
					}
					if old, ok := m[k]; ok && old != v && !strings.Contains("|"+old+"|", "|"+v+"|") {
						v = old + "|" + v // replicas configured differently: keep both
					}
					m[k] = v
				}
			}
		}
		for _, t := range ep.resets {
			resetAt[t] = true
		}
	}
	if ad := scrape.Detect(names); ad != nil {
		f.engine = ad.Engine
	}
	for t := range resetAt {
		f.resets = append(f.resets, t)
	}
	sort.Slice(f.resets, func(i, j int) bool { return f.resets[i].Before(f.resets[j]) })
	return f
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("," + k + "=" + l[k])
	}
	return "{" + b.String() + "}"
}

// preconditions checks what must match before the primary phase's figures can be blamed on
// the change. bs/cs are the primary phase's summaries; rows its metric table.
func preconditions(base, cand *Run, res *Result, p phasePair, bs, cs *phaseSum, rows []Metric, o Options) []Precondition {
	out := []Precondition{contractCheck(res)}
	out = append(out, engineCheck(base, cand), configCheck(base, cand))
	out = append(out, restartCheck(base, cand, bs, cs))
	out = append(out, cacheCheck(base, cand, p, bs, cs, o))
	out = append(out, tokenCheck(bs, cs, o))
	out = append(out, latenessCheck(bs, cs, rows))
	return out
}

func contractCheck(res *Result) Precondition {
	pc := Precondition{Name: PreContract, Kind: KindIdentity, Known: true,
		Base:      fmt.Sprintf("%s v%s sha256 %.12s", res.Base.ContractName, res.Base.ContractVersion, res.Base.SHA256),
		Candidate: fmt.Sprintf("%s v%s sha256 %.12s", res.Candidate.ContractName, res.Candidate.ContractVersion, res.Candidate.SHA256)}
	if res.ContractChanged {
		pc.Reason = "different workloads, compared anyway (--allow-contract-change): any difference may be the workload's"
		return pc
	}
	pc.OK, pc.Reason = true, "same workload (canonical sha256)"
	return pc
}

// engineCheck compares what each side says it ran: the engine (from evidence.json, or the
// adapter its /metrics matched) and the served model.
func engineCheck(base, cand *Run) Precondition {
	id := func(r *Run) (string, bool) {
		var parts []string
		if r.Evidence != nil && r.Evidence.Run.Engine != "" {
			parts = append(parts, r.Evidence.Run.Engine)
		}
		if r.engine != nil && r.engine.engine != "" && (len(parts) == 0 || parts[0] != r.engine.engine) {
			parts = append(parts, r.engine.engine+" /metrics")
		}
		if r.Evidence != nil && r.Evidence.Run.Model != "" {
			parts = append(parts, "model "+r.Evidence.Run.Model)
		}
		return strings.Join(parts, ", "), len(parts) > 0
	}
	b, okB := id(base)
	c, okC := id(cand)
	pc := Precondition{Name: PreEngine, Kind: KindIdentity, Base: figure.OrDash(b), Candidate: figure.OrDash(c), Known: okB && okC}
	switch {
	case !pc.Known:
		pc.Reason = "a side names no engine or model (no evidence.json, no /metrics)"
	case b == c:
		pc.OK, pc.Reason = true, "same engine and model"
	default:
		pc.Reason = "the engine or model differs: the change under test, or a mistake"
	}
	return pc
}

// configCheck compares the configuration the engine exposes as Prometheus info metrics
// (families named *_info, e.g. vLLM's vllm:cache_config_info: block size, cache dtype,
// prefix caching, GPU memory utilization, KV blocks), replica labels aside.
func configCheck(base, cand *Run) Precondition {
	pc := Precondition{Name: PreConfig, Kind: KindIdentity, Base: "-", Candidate: "-"}
	if base.engine == nil || cand.engine == nil {
		pc.Reason = "a side sampled no engine /metrics (pel run --metrics URL)"
		return pc
	}
	if len(base.engine.info) == 0 && len(cand.engine.info) == 0 {
		pc.Known, pc.OK, pc.Reason = true, true, "the engine exposes no *_info configuration metric; nothing to compare"
		return pc
	}
	pc.Known = true
	fams := map[string]bool{}
	for f := range base.engine.info {
		fams[f] = true
	}
	for f := range cand.engine.info {
		fams[f] = true
	}
	var names []string
	for f := range fams {
		names = append(names, f)
	}
	sort.Strings(names)
	var diffs, bv, cv []string
	for _, f := range names {
		b, c := base.engine.info[f], cand.engine.info[f]
		keys := map[string]bool{}
		for k := range b {
			keys[k] = true
		}
		for k := range c {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			x, okx := b[k]
			y, oky := c[k]
			if !okx {
				x = "(absent)"
			}
			if !oky {
				y = "(absent)"
			}
			if x != y {
				diffs = append(diffs, fmt.Sprintf("%s %s %s → %s", f, k, x, y))
				bv = append(bv, k+"="+x)
				cv = append(cv, k+"="+y)
			}
		}
	}
	if len(diffs) == 0 {
		pc.OK, pc.Base, pc.Candidate = true, "same", "same"
		pc.Reason = fmt.Sprintf("same configuration (%s)", strings.Join(names, ", "))
		return pc
	}
	pc.Base, pc.Candidate = strings.Join(bv, " "), strings.Join(cv, " ")
	pc.Reason = "the engine's configuration differs: " + strings.Join(diffs, "; ") + " (the change under test, or a mistake)"
	return pc
}

// restartCheck counts engine restarts inside the compared window (its monotonic counters
// reset together, or its process start time changed: restartTracker): a restart empties the caches and recompiles, so that side's window holds a
// cold engine the other side's does not.
func restartCheck(base, cand *Run, bs, cs *phaseSum) Precondition {
	pc := Precondition{Name: PreRestarts, Kind: KindState, Base: "-", Candidate: "-"}
	if base.engine == nil || cand.engine == nil {
		pc.Reason = "a side sampled no engine /metrics: restarts inside the window cannot be seen"
		return pc
	}
	count := func(f *engineFacts, ps *phaseSum) int {
		var start, end time.Time
		if ps != nil {
			start, end = ps.all.start, ps.all.end
		}
		n := 0
		for _, t := range f.resets {
			if !t.Before(start) && !t.After(end) {
				n++
			}
		}
		return n
	}
	b, c := count(base.engine, bs), count(cand.engine, cs)
	pc.Known, pc.Base, pc.Candidate, pc.BaseValue, pc.CandidateValue = true, fmt.Sprint(b), fmt.Sprint(c), num(float64(b)), num(float64(c))
	switch {
	case b == c && b == 0:
		pc.OK, pc.Reason = true, "no counter reset inside either compared window"
	case b == c:
		pc.OK, pc.Reason = true, fmt.Sprintf("both windows hold %d restart(s) (its counters reset together, or its process start time changed): each includes a cold engine", b)
	default:
		pc.Blocking = true
		pc.Reason = fmt.Sprintf("the engine restarted inside the compared window %d time(s) on the base and %d on the candidate (its counters reset together, or its process start time changed): a restart empties its caches and warms up again, so one side measured a cold engine the other did not", b, c)
	}
	return pc
}

// hitRate is a side's prefix-cache hit rate over the compared phase: the engine's own
// signal (engine.prefix_cache_hit_rate, hits/queries over the phase window), else the
// cached share of prompt tokens its usage blocks reported (prompt_tokens_details).
func hitRate(r *Run, phase string, ps *phaseSum, otherReports bool) (float64, string, bool) {
	if r.Evidence != nil {
		for _, s := range r.Evidence.SignalsNamed(evidence.SigPrefixHitRate) {
			if len(s.Labels) == 0 && s.Phase == phase {
				return s.Value, s.Source, true
			}
		}
		if s, ok := r.Evidence.Signal(evidence.SigPrefixHitRate); ok {
			return s.Value, s.Source, true
		}
	}
	if ps != nil && (ps.usageCache || otherReports) && ps.prompt > 0 {
		return ps.cached / ps.prompt, "usage.prompt_tokens_details.cached_tokens", true
	}
	return 0, "", false
}

func usageReportsCache(ps *phaseSum) bool { return ps != nil && ps.usageCache }

// promptOverlap is the share of the smaller side's distinct prompts that the other side
// also sent (by prompt_sha256); known is false when a side recorded no hashes. Past
// maxDistinct hashes a side's sets are samples (distinct): the counts are then estimates,
// scaled by the sampling rate, and the share their ratio.
func promptOverlap(bs, cs *phaseSum, base, cand *summary) (share float64, shared, of int, known bool) {
	if bs == nil || cs == nil || base.prompts.len() == 0 || cs.prompts.len() == 0 {
		return 0, 0, 0, false
	}
	// Either side may have run first: count the candidate's compared prompts the base sent
	// anywhere, and the base's compared prompts the candidate sent anywhere.
	l := max(base.prompts.level, cand.prompts.level, bs.prompts.level, cs.prompts.level)
	n1, of1 := overlap(&cs.prompts, &base.prompts, l)
	n2, of2 := overlap(&bs.prompts, &cand.prompts, l)
	scale := 1 << l
	if of1 == 0 {
		return 0, 0, 0, false
	}
	s1, s2 := float64(n1)/float64(of1), 0.0
	if of2 > 0 {
		s2 = float64(n2) / float64(of2)
	}
	if s2 > s1 {
		return s2, n2 * scale, of2 * scale, true
	}
	return s1, n1 * scale, of1 * scale, true
}

// cacheCheck: a prefix cache outlives a run. When two runs sent the same prompts (a contract
// with prompts.reuse_across_runs, or runs made before the per-run nonce), the later one can
// hit what the earlier one left cached, and its prefill work shrinks for a reason no change
// under test caused. The prefill work per task is proportional to the uncached share of
// prompt tokens, 1 − hit rate; a relative difference of that share larger than
// Options.Tolerance (the smallest relative change the verdict treats as a finding) can move
// goodput or a prefill-bound latency by more than the tolerance, so it blocks. When each
// run's prompts were its own, nothing carried over: a hit-rate difference is the engine's
// own behaviour under the change (more KV capacity keeps more prefixes) and is reported.
func cacheCheck(base, cand *Run, p phasePair, bs, cs *phaseSum, o Options) Precondition {
	pc := Precondition{Name: PrePromptCach, Kind: KindState, Base: "-", Candidate: "-"}
	bothReport := usageReportsCache(bs) || usageReportsCache(cs)
	hb, srcB, okB := hitRate(base, p.base, bs, bothReport)
	hc, srcC, okC := hitRate(cand, p.cand, cs, bothReport)
	if okB {
		pc.Base, pc.BaseValue = fmt.Sprintf("hit rate %.3f", hb), num(hb)
	}
	if okC {
		pc.Candidate, pc.CandidateValue = fmt.Sprintf("hit rate %.3f", hc), num(hc)
	}
	share, shared, of, known := promptOverlap(bs, cs, base.sum, cand.sum)
	overlap := "prompt identity unknown (no prompt_sha256 in requests.jsonl)"
	if known {
		overlap = fmt.Sprintf("%d of %d distinct prompts (%.0f%%) were sent by both runs", shared, of, share*100)
	}
	if known && shared == 0 {
		pc.Known, pc.OK = true, true
		pc.Reason = "each run sent its own prompts (per-run nonce): no cache state carried over from one to the other"
		if okB && okC && hb != hc {
			pc.Reason += fmt.Sprintf("; the hit rates (%.3f vs %.3f, %s) are each engine's own behaviour under its workload", hb, hc, srcB)
		}
		return pc
	}
	if !okB || !okC {
		pc.Reason = overlap + ", and a side has no prefix-cache signal (sample the engine's /metrics with --metrics): a cache warmed by the other run cannot be ruled out"
		return pc
	}
	pc.Known = true
	ub, uc := 1-hb, 1-hc
	rel := 0.0
	if m := math.Max(ub, uc); m > 0 {
		rel = math.Abs(ub-uc) / m
	}
	if rel <= o.Tolerance {
		pc.OK = true
		pc.Reason = fmt.Sprintf("%s; the uncached share of prompt tokens (1 − hit rate) is %.3f vs %.3f, within %.0f%%: the same prefill work", overlap, ub, uc, o.Tolerance*100)
		return pc
	}
	pc.Blocking = true
	later := "the candidate"
	if runStart(base).After(runStart(cand)) {
		later = "the base"
	}
	src := srcB
	if srcC != srcB {
		src += " / " + srcC
	}
	pc.Reason = fmt.Sprintf("%s, and the engine served %.1f%% of prompt tokens from its prefix cache on the base vs %.1f%% on the candidate (%s): the uncached prefill work per task differs %.0f%% (more than the %.0f%% tolerance). %s ran later and can have hit what the other left cached; rerun both with per-run prompts (the default: drop prompts.reuse_across_runs) or restart the engine before each run",
		overlap, hb*100, hc*100, src, rel*100, o.Tolerance*100, firstUpper(later))
	return pc
}

func firstUpper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func runStart(r *Run) time.Time {
	if r.Evidence != nil && !r.Evidence.Run.StartedAt.IsZero() {
		return r.Evidence.Run.StartedAt
	}
	return r.sum.first
}

// tokenCheck: ITL and TPOT are per token, and token counts come from the server's usage
// block or, failing that, a client estimate. A share x of tasks counted the other way can
// move a per-token quantile by up to x in rank and a per-token rate by up to x; above the
// tolerance that can make a difference on its own.
func tokenCheck(bs, cs *phaseSum, o Options) Precondition {
	pc := Precondition{Name: PreTokens, Kind: KindState, Base: "-", Candidate: "-"}
	share := func(ps *phaseSum) (float64, int) {
		if ps == nil || ps.tokN == 0 {
			return 0, 0
		}
		return float64(ps.tokEst) / float64(ps.tokN), ps.tokN
	}
	b, nb := share(bs)
	c, nc := share(cs)
	if nb == 0 || nc == 0 {
		pc.Reason = "a side's records do not say where token counts came from"
		return pc
	}
	desc := func(x float64) string {
		switch x {
		case 0:
			return "usage (all tasks)"
		case 1:
			return "estimate (all tasks)"
		}
		return fmt.Sprintf("estimate for %.1f%% of tasks", x*100)
	}
	pc.Known, pc.Base, pc.Candidate, pc.BaseValue, pc.CandidateValue = true, desc(b), desc(c), num(b), num(c)
	if d := math.Abs(b - c); d <= o.Tolerance {
		pc.OK, pc.Reason = true, "token counts come from the same source"
		if d > 0 {
			pc.Reason = fmt.Sprintf("the share of tasks with estimated token counts differs by %.1f points, within the %.0f%% tolerance", d*100, o.Tolerance*100)
		}
		return pc
	}
	pc.Blocking = true
	pc.Reason = fmt.Sprintf("token counts were estimated (no usage block) for %.1f%% of completed tasks on the base and %.1f%% on the candidate: ITL and TPOT are per token, so the sides measured them differently (ask the server for usage: stream_options.include_usage)", b*100, c*100)
	return pc
}

// latenessCheck: TTFT and E2E are measured from the scheduled time, so the load generator's
// own lateness (schedule lag: sent − scheduled, less any contract-imposed client queue) is
// part of them. Lateness can explain a difference when taking the lag difference out of a
// judged TTFT or E2E change (shifting its interval by the difference of the lag at the same
// quantile) changes whether that change is significant: a change that only the lag made, or
// a change the lag hid. Lag differences that leave every judgement as it was are reported.
func latenessCheck(bs, cs *phaseSum, rows []Metric) Precondition {
	pc := Precondition{Name: PreLateness, Kind: KindState, Base: "-", Candidate: "-"}
	if bs == nil || cs == nil || bs.lag.N() == 0 || cs.lag.N() == 0 {
		pc.Reason = "a side has no send times"
		return pc
	}
	// The lags as stage 1's schedule_lag figures read them (quantile.Hist of recorded values).
	lb, lc := bs.lagMs, cs.lagMs
	pc.Known = true
	pc.Base = fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", lb(0.5), lb(0.99))
	pc.Candidate = fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", lc(0.5), lc(0.99))
	pc.BaseValue, pc.CandidateValue = num(lb(0.99)), num(lc(0.99))
	judged := 0
	for _, q := range []struct {
		row string
		q   float64
	}{{"ttft_p50_ms", 0.5}, {"ttft_p99_ms", 0.99}, {"e2e_p99_ms", 0.99}} {
		var row *Metric
		for i := range rows {
			if rows[i].Name == q.row {
				row = &rows[i]
			}
		}
		if row == nil || row.CILo == nil || row.CIHi == nil {
			continue // not judged (too few values): nothing for lateness to explain
		}
		judged++
		d := lc(q.q) - lb(q.q)
		lo, hi := *row.CILo, *row.CIHi
		before, after := lo > 0 || hi < 0, lo-d > 0 || hi-d < 0
		if before == after {
			continue
		}
		pc.Blocking = true
		what := "makes"
		if after {
			what = "hides"
		}
		pc.Reason = fmt.Sprintf("the load generator's own lateness (schedule lag) at p%g is %.2f ms on the base and %.2f ms on the candidate; %s is measured from the schedule and includes it, and the %+.2f ms difference %s the change of %s (CI [%+.2f, %+.2f] ms, without the lag difference [%+.2f, %+.2f] ms). The client was busier on one side: rerun on a quieter client machine",
			q.q*100, lb(q.q), lc(q.q), row.Label, d, what, row.Label, lo, hi, lo-d, hi-d)
		return pc
	}
	pc.OK = true
	if judged == 0 {
		pc.Reason = "no TTFT or E2E quantile was judged, so lateness explains no judged difference"
	} else {
		pc.Reason = "taking the lag difference out of the judged TTFT and E2E changes leaves every judgement as it was"
	}
	return pc
}
