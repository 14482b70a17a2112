package compare

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"

	mstats "github.com/aclements/go-moremath/stats"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/resample"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/verify"
)

// ErrBadInput marks an unreadable run directory, a contract mismatch or unusable options
// (the command line maps it to exit 2): the program's one bad-input kind. Test with
// errors.Is.
var ErrBadInput = badinput.ErrBadInput

func badInput(format string, a ...any) error { return badinput.Errorf(format, a...) }

// Verdict of a comparison.
type Verdict string

const (
	Accept       Verdict = "accept"
	Reject       Verdict = "reject"
	Inconclusive Verdict = "inconclusive"
	// NotComparable: a precondition that no change under test should alter differs in a way
	// that can explain a difference (see Precondition); no verdict on the change is given.
	NotComparable Verdict = "not_comparable"
)

// Check statuses.
const (
	StatusPass          = "pass"           // the candidate's whole CI is on the safe side of the bound
	StatusFail          = "fail"           // the whole CI is past the bound: a significant breach
	StatusUncertain     = "uncertain"      // the CI straddles the bound
	StatusBaselineFails = "baseline_fails" // an SLO bound the baseline breaks too: not the change's doing
	StatusNotChecked    = "not_checked"    // the signal cannot be computed for the candidate
	// StatusPerRequest: a per-request (max) objective, shown with its worst value; acceptance
	// judges it task by task, so it decides through the acceptance rate, not as a check.
	StatusPerRequest = "per_request"
)

// Options tune the statistics. Zero values take the defaults.
type Options struct {
	// AllowContractChange compares runs of different contracts (their sha256 differ); the
	// result then says so loudly. Without it such a comparison is refused.
	AllowContractChange bool `json:"allow_contract_change,omitempty"`
	// AllowPartialBaseline takes a partial run (interrupted, stopped early, one shard, a torn
	// requests.jsonl: evidence.Completeness) as the baseline; the result then says so. Without
	// it such a baseline is refused: its figures describe only part of the contract.
	AllowPartialBaseline bool `json:"allow_partial_baseline,omitempty"`
	// Resamples of the bootstrap (default 2000).
	Resamples int `json:"resamples"`
	// Seed of the bootstrap's generator (default 1): the same inputs give the same intervals.
	Seed uint64 `json:"seed"`
	// Level of the confidence intervals (default 0.95).
	Level float64 `json:"level"`
	// MinTasks per side in the compared phase below which no verdict is given (default 30,
	// the diagnosis' own floor for rollback triggers).
	MinTasks int `json:"min_tasks"`
	// Tolerance is the relative drop of acceptance rate or goodput that counts as worse
	// (default 0.02): a change must be significant AND larger than this to reject. It keeps a
	// fixed-window artefact (goodput = accepted / window, and the window ends with the
	// slowest task) from rejecting a change whose every task was accepted.
	Tolerance float64 `json:"tolerance"`
}

func (o *Options) defaults() {
	if o.Resamples <= 0 {
		o.Resamples = 2000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = 0.95
	}
	if o.MinTasks <= 0 {
		o.MinTasks = 30
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 0.02
	}
}

// Run is one run directory, loaded.
type Run struct {
	Dir      string
	Contract *contract.Contract
	// Evidence is evidence.json when present (rollback triggers come from it), else nil.
	Evidence *evidence.Evidence
	// Records are the task records when the run is held in memory (Load, or a caller's own:
	// an interleaved canary's sides, a sweep point); nil for a run Open streamed, whose
	// summary is all a comparison reads.
	Records []record.Record
	sum     *summary
	// engine is what metrics.jsonl says about the engine (nil: no engine /metrics sampled).
	engine *engineFacts
	// shares and windows, per phase, are the side's share of the arrivals and the window
	// both sides share in an interleaved canary run (interleaved.go): goodput and cost are
	// computed over it, scaled by the share. nil: the side's own window, whole.
	shares, windows map[string]float64
}

// Load reads a run directory and holds its task records (Run.Records), for a caller that
// reads them itself: contract.yaml and requests.jsonl are required, evidence.json is
// optional. A comparison of two directories (Dirs) streams them instead (Open).
func Load(dir string) (*Run, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	return FromDir(d)
}

// Open reads a run directory as Load does, streaming its records into the bounded summary
// a comparison reads, and holds none of them (Run.Records is nil).
func Open(dir string) (*Run, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	return Summarize(d)
}

func openDir(dir string) (*rundir.Dir, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, badInput("run directory %s: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, badInput("%s is not a run directory", dir)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return d, nil
}

// FromDir reads the task records and engine facts of an opened run directory (its contract
// and evidence.json are the ones rundir.Open read) and holds the records.
func FromDir(d *rundir.Dir) (*Run, error) {
	r := &Run{Dir: d.Path, Contract: d.Contract, Evidence: d.Evidence}
	err := d.Each(func(rec *record.Record) error {
		// A comparison reads timings, tokens and verdicts, never the text a --keep-text
		// run stored: it is not held.
		rec.Prompt, rec.Output = "", ""
		for i := range rec.StepRecords() {
			st := &rec.StepRecords()[i]
			st.Prompt, st.Output = "", ""
		}
		r.Records = append(r.Records, *rec)
		return nil
	})
	if err != nil {
		return nil, badInput("%v", err)
	}
	if r.engine, err = engineFactsIn(d, rundir.MetricsFile); err != nil {
		return nil, badInput("%v", err)
	}
	return r, nil
}

// Summarize reads an opened run directory as FromDir does, one record at a time into the
// run's summary, holding none.
func Summarize(d *rundir.Dir) (*Run, error) {
	r := &Run{Dir: d.Path, Contract: d.Contract, Evidence: d.Evidence, sum: newSummary(d.Contract)}
	err := d.Each(func(rec *record.Record) error {
		if err := r.sum.add(rec); err != nil {
			return fmt.Errorf("%s: %w", d.File(rundir.RequestsFile), err)
		}
		return nil
	})
	if err != nil {
		return nil, badInput("%v", err)
	}
	if r.engine, err = engineFactsIn(d, rundir.MetricsFile); err != nil {
		return nil, badInput("%v", err)
	}
	return r, nil
}

// summary is the run's summary, reduced from its records when it holds them.
func (r *Run) summary() (*summary, error) {
	if r.sum == nil {
		s, err := summarize(r.Contract, r.Records)
		if err != nil {
			return nil, badInput("%s: %v", r.Dir, err)
		}
		r.sum = s
	}
	return r.sum, nil
}

// Result is a comparison, ready to render (Text) or encode as JSON.
type Result struct {
	Base      RunInfo `json:"base"`
	Candidate RunInfo `json:"candidate"`
	// ContractChanged: the two runs ran different contracts (allowed by option only).
	ContractChanged bool    `json:"contract_changed"`
	Method          string  `json:"method"`
	Options         Options `json:"options"`
	// Preconditions are checked before anything is judged: what must match (or be
	// accounted for) for a difference to be the change's. Comparable is false when one of
	// them blocks, and the verdict is then not_comparable.
	Preconditions []Precondition `json:"preconditions"`
	Comparable    bool           `json:"comparable"`
	// Phases compared, primary (the one the verdict rests on) first.
	Phases []PhaseResult `json:"phases"`
	// Triggers are the baseline's rollback triggers checked against the candidate.
	Triggers []Check `json:"triggers"`
	// SLO are the contract's percentile SLO bounds checked against the candidate.
	SLO      []Check  `json:"slo"`
	Verdict  Verdict  `json:"verdict"`
	Reasons  []string `json:"reasons"`
	Warnings []string `json:"warnings,omitempty"`
	// NeededTasks, with an inconclusive verdict, estimates the tasks per side in the
	// compared phase that would settle it (0: unknown, or more samples alone would not);
	// NeededFor names the check that needs them and why.
	NeededTasks int    `json:"needed_tasks,omitempty"`
	NeededFor   string `json:"needed_for,omitempty"`
	// Predictions are the baseline's findings' structured predictions checked against the
	// candidate (owner first); Explanation reads the verdict through them.
	Predictions []verify.Result `json:"predictions,omitempty"`
	Explanation string          `json:"explanation,omitempty"`
}

// RunInfo identifies one side.
type RunInfo struct {
	Dir             string         `json:"dir"`
	ContractName    string         `json:"contract_name"`
	ContractVersion string         `json:"contract_version"`
	SHA256          string         `json:"contract_sha256"`
	Tasks           map[string]int `json:"tasks_by_phase"`
}

// PhaseResult is the metric table of one phase pair.
type PhaseResult struct {
	Phase          string   `json:"phase"` // e.g. "warm", or "canary" (candidate) vs "warm" (base)
	BasePhase      string   `json:"base_phase"`
	CandidatePhase string   `json:"candidate_phase"`
	Primary        bool     `json:"primary"`
	BaseTasks      int      `json:"base_tasks"`
	CandidateTasks int      `json:"candidate_tasks"`
	BaseCompleted  int      `json:"base_completed"`
	CandCompleted  int      `json:"candidate_completed"`
	Metrics        []Metric `json:"metrics"`
	Notes          []string `json:"notes,omitempty"`
}

// Metric is one row: both values, the delta and its confidence interval.
type Metric struct {
	Name   string `json:"name"`
	Label  string `json:"label"`
	Signal string `json:"signal,omitempty"` // evidence vocabulary name, when there is one
	Unit   string `json:"unit"`
	Better string `json:"better"` // "higher" or "lower"
	// Base and Candidate are the point estimates on each run's tasks (null: no data).
	Base      *float64 `json:"base"`
	Candidate *float64 `json:"candidate"`
	// Delta = candidate − base; DeltaPct relative to base (null when base is 0).
	Delta    *float64 `json:"delta"`
	DeltaPct *float64 `json:"delta_pct"`
	// CILo/CIHi bound the delta (same unit), by bootstrap.
	CILo *float64 `json:"ci_lo"`
	CIHi *float64 `json:"ci_hi"`
	// P is the two-sided Mann-Whitney U p-value on per-task values (latency rows only).
	P *float64 `json:"p,omitempty"`
	// Significant: the CI of the delta excludes 0.
	Significant bool   `json:"significant"`
	Change      string `json:"change"` // "better", "worse", "~" (no significant change), "?" (too few values to judge), "n/a"
	Note        string `json:"note,omitempty"`
}

// Check is one bound checked against the candidate.
type Check struct {
	Source    string   `json:"source"` // "rollback trigger (base evidence.json)" or "contract slo"
	Signal    string   `json:"signal"`
	Op        string   `json:"op"` // the breach condition: value Op Bound
	Bound     float64  `json:"bound"`
	Unit      string   `json:"unit"`
	Scope     string   `json:"scope,omitempty"` // "all tasks" or "task NAME"
	Basis     string   `json:"basis,omitempty"`
	Base      *float64 `json:"base,omitempty"`
	Candidate *float64 `json:"candidate"`
	// CILo/CIHi bound the candidate's value; null on a side the sample cannot bound (a
	// p99 of fewer than 368 tasks has no upper bound at 95%), or both null without interval.
	CILo   *float64 `json:"ci_lo"`
	CIHi   *float64 `json:"ci_hi"`
	Status string   `json:"status"`
	Note   string   `json:"note,omitempty"`
	// Values is how many values the candidate's check rests on: tasks in its scope that
	// have the value (a task-type check sees only that type; latency only completed tasks).
	Values int `json:"values"`
	// NeededTasks estimates how many values in the check's scope would move an uncertain
	// check out of its CI (the interval narrows as 1/√n, or a quantile's order statistics
	// need that many to bound it).
	NeededTasks int `json:"needed_tasks,omitempty"`
}

// metricDef is one row of the table.
type metricDef struct {
	name, label, signal, unit string
	higher                    bool
	st                        stat
}

var table = []metricDef{
	{"acceptance_rate", "acceptance rate", evidence.SigAcceptanceRate, "ratio", true, stat{kAccept, 0}},
	{"goodput_rps", "goodput", evidence.SigGoodput, "1/s", true, stat{kGoodput, 0}},
	{"error_rate", "error rate", evidence.SigErrorRate, "ratio", false, stat{kError, 0}},
	{"ttft_p50_ms", "TTFT p50", evidence.SigTTFTP50, "ms", false, stat{kTTFT, 0.50}},
	{"ttft_p99_ms", "TTFT p99", evidence.SigTTFTP99, "ms", false, stat{kTTFT, 0.99}},
	{"itl_p50_ms", "ITL p50", evidence.SigITLP50, "ms", false, stat{kITL, 0.50}},
	{"itl_p99_ms", "ITL p99", evidence.SigITLP99, "ms", false, stat{kITL, 0.99}},
	{"tpot_p50_ms", "TPOT p50", evidence.SigTPOTP50, "ms", false, stat{kTPOT, 0.50}},
	{"e2e_p99_ms", "E2E p99", evidence.SigE2EP99, "ms", false, stat{kE2E, 0.99}},
	{"cost_per_accepted_task", "cost per accepted task", "", "usd", false, stat{kCost, 0}},
}

// signalStats maps the client signals a trigger may name to the statistic that recomputes
// them from records (so the candidate's value gets a confidence interval).
var signalStats = map[string]stat{
	evidence.SigAcceptanceRate: {kAccept, 0},
	evidence.SigErrorRate:      {kError, 0},
	evidence.SigGoodput:        {kGoodput, 0},
	evidence.SigTTFTP50:        {kTTFT, 0.50},
	evidence.SigTTFTP95:        {kTTFT, 0.95},
	evidence.SigTTFTP99:        {kTTFT, 0.99},
	evidence.SigITLP50:         {kITL, 0.50},
	evidence.SigITLP99:         {kITL, 0.99},
	evidence.SigTPOTP50:        {kTPOT, 0.50},
	evidence.SigE2EP50:         {kE2E, 0.50},
	evidence.SigE2EP99:         {kE2E, 0.99},
}

// Dirs loads two run directories and compares them.
func Dirs(baseDir, candDir string, o Options) (*Result, error) {
	base, err := Open(baseDir)
	if err != nil {
		return nil, err
	}
	cand, err := Open(candDir)
	if err != nil {
		return nil, err
	}
	partial, err := partialRuns(base, cand, o)
	if err != nil {
		return nil, err
	}
	res, err := Compare(base, cand, o)
	if res != nil {
		res.Warnings = append(partial, res.Warnings...)
	}
	return res, err
}

// Compare judges the candidate against the base. It refuses runs of different contracts
// unless o.AllowContractChange, and never mixes phases.
func Compare(base, cand *Run, o Options) (*Result, error) {
	o.defaults()
	bsum, err := base.summary()
	if err != nil {
		return nil, err
	}
	csum, err := cand.summary()
	if err != nil {
		return nil, err
	}
	res := &Result{
		Base: runInfo(base, bsum), Candidate: runInfo(cand, csum), Options: o,
		Triggers: []Check{}, SLO: []Check{}, Reasons: []string{},
		Method: fmt.Sprintf("%.0f%% percentile bootstrap over tasks (%d resamples, seed %d; ITL resamples whole tasks); Mann-Whitney U, two-sided, on per-task latencies (ITL: per-task mean)",
			o.Level*100, o.Resamples, o.Seed),
	}
	if res.Base.SHA256 != res.Candidate.SHA256 {
		if !o.AllowContractChange {
			return nil, badInput("the runs used different contracts: base %s (%s v%s, sha256 %.12s), candidate %s (%s v%s, sha256 %.12s); a comparison across workloads is not a comparison of the change (pass --allow-contract-change to compare anyway)",
				base.Dir, res.Base.ContractName, res.Base.ContractVersion, res.Base.SHA256, cand.Dir, res.Candidate.ContractName, res.Candidate.ContractVersion, res.Candidate.SHA256)
		}
		res.ContractChanged = true
		res.Warnings = append(res.Warnings, fmt.Sprintf("CONTRACTS DIFFER (base sha256 %.12s, candidate %.12s): compared anyway because --allow-contract-change was given; any difference below may be the workload's, not the change's",
			res.Base.SHA256, res.Candidate.SHA256))
	}
	for _, r := range []*Run{base, cand} {
		if r.Evidence != nil && r.Evidence.Contract.SHA256 != "" && r.Evidence.Contract.SHA256 != r.Contract.SHA256() {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: evidence.json names contract sha256 %.12s but contract.yaml hashes to %.12s (stale evidence?): records and contract.yaml were used",
				r.Dir, r.Evidence.Contract.SHA256, r.Contract.SHA256()))
		}
	}
	pairs := pairPhases(bsum, csum)
	if len(pairs) == 0 {
		return nil, badInput("no phase in common: base has %s, candidate has %s", phaseList(res.Base.Tasks), phaseList(res.Candidate.Tasks))
	}
	for _, p := range pairs {
		if p.base != p.cand {
			res.Warnings = append(res.Warnings, fmt.Sprintf("candidate phase %q compared with base phase %q (a canary is the candidate's steady state)", p.cand, p.base))
		}
	}

	var primary struct {
		b, c     *side
		bb, cb   boot
		stats    []stat
		bps, cps *phaseSum
	}
	for i, p := range pairs {
		bps, cps := bsum.phases[p.base], csum.phases[p.cand]
		bs := bps.side(costPerHour(base.Contract))
		cs := cps.side(costPerHour(cand.Contract))
		bs.canaryWindow(base.windows[p.base], base.shares[p.base])
		cs.canaryWindow(cand.windows[p.cand], cand.shares[p.cand])
		stats := make([]stat, len(table))
		for j, m := range table {
			stats[j] = m.st
		}
		if i == 0 {
			// The primary phase also carries the stats behind triggers and SLO bounds.
			stats = appendUnique(stats, triggerStats(base.Evidence)...)
			for _, g := range objectiveGroups(base.Contract, "") {
				if g.task == "" && g.metric == "" {
					stats = appendUnique(stats, objectiveStats(g.objs)...)
				}
			}
		}
		bb := bs.bootstrap(stats, o.Resamples, rng(o.Seed, "base", p.base))
		cb := cs.bootstrap(stats, o.Resamples, rng(o.Seed, "candidate", p.cand))
		pr := PhaseResult{Phase: p.cand, BasePhase: p.base, CandidatePhase: p.cand, Primary: i == 0,
			BaseTasks: bs.n, CandidateTasks: cs.n, BaseCompleted: bs.completed, CandCompleted: cs.completed}
		for j, m := range table {
			if m.st.kind == kCost && bs.costPerHour == 0 && cs.costPerHour == 0 {
				continue // the contract prices nothing
			}
			pr.Metrics = append(pr.Metrics, metricRow(m, j, bs, cs, bb, cb, o))
		}
		if bs.units < bs.n || cs.units < cs.n {
			pr.Notes = append(pr.Notes, fmt.Sprintf("intervals resample clusters of tasks (task i in cluster i mod k, a systematic sample of the phase): base %d tasks in %d clusters, candidate %d in %d; point values and order-statistic intervals read every task", bs.n, bs.units, cs.n, cs.units))
		}
		if n := min(bs.n, cs.n); n < o.MinTasks {
			pr.Notes = append(pr.Notes, fmt.Sprintf("only %d tasks on the smaller side (fewer than %d): every figure here is indicative only", n, o.MinTasks))
		}
		res.Phases = append(res.Phases, pr)
		if i == 0 {
			primary.b, primary.c, primary.bb, primary.cb, primary.stats = bs, cs, bb, cb, stats
			primary.bps, primary.cps = bps, cps
		}
	}

	// Checks run on the primary phase only.
	find := func(st stat) int {
		for i, s := range primary.stats {
			if s == st {
				return i
			}
		}
		return -1
	}
	if base.Evidence == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s has no evidence.json: no rollback triggers to check", base.Dir))
	} else if len(base.Evidence.Rollback.Triggers) == 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s/evidence.json has no rollback triggers (run `pel analyze %s` to derive them): latency changes are reported but only the contract's SLO bounds and acceptance decide", base.Dir, base.Dir))
	}
	if base.Evidence != nil {
		for _, t := range base.Evidence.Rollback.Triggers {
			ch := Check{Source: "rollback trigger (base evidence.json)", Signal: t.Signal, Op: t.Op, Bound: t.Bound, Unit: t.Unit, Basis: t.Basis, Scope: "all tasks"}
			if st, ok := signalStats[t.Signal]; ok {
				j := find(st)
				judge(&ch, primary.c, st, primary.cb.point[j], primary.cb.reps[j], o.Level)
			} else {
				pointOnly(&ch, cand.Evidence)
			}
			res.Triggers = append(res.Triggers, ch)
		}
	}
	res.SLO = append(res.SLO, objectiveChecks(base, primary.b, primary.bb, primary.c, primary.cb, primary.stats, primary.bps, primary.cps, pairs[0], o)...)

	res.Preconditions = preconditions(base, cand, res, pairs[0], primary.bps, primary.cps, res.Phases[0].Metrics, o)
	if cand.windows != nil {
		interleavedPreconditions(res.Preconditions) // interleaved.go
	}
	decide(res, primary.b, primary.c, o)
	res.Predictions, res.Explanation = predictions(base, cand, res)
	return res, nil
}

func runInfo(r *Run, s *summary) RunInfo {
	ri := RunInfo{Dir: r.Dir, ContractName: r.Contract.Name, ContractVersion: r.Contract.Version, SHA256: r.Contract.SHA256(), Tasks: map[string]int{}}
	for p, ps := range s.phases {
		ri.Tasks[p] = ps.all.n
	}
	return ri
}

func phaseList(m map[string]int) string {
	if len(m) == 0 {
		return "no tasks"
	}
	var ps []string
	for p, n := range m {
		ps = append(ps, fmt.Sprintf("%s (%d)", p, n))
	}
	sort.Strings(ps)
	return strings.Join(ps, ", ")
}

type phasePair struct{ base, cand string }

// pairPhases pairs phases of the same name, warm first, then cold, then others; a
// candidate that has only a canary phase is paired with the base's warm phase.
func pairPhases(base, cand *summary) []phasePair {
	bp, cp := map[string]bool{}, map[string]bool{}
	for p := range base.phases {
		bp[p] = true
	}
	for p := range cand.phases {
		cp[p] = true
	}
	var out []phasePair
	if bp[record.PhaseWarm] && cp[record.PhaseWarm] {
		out = append(out, phasePair{record.PhaseWarm, record.PhaseWarm})
	} else if bp[record.PhaseWarm] && cp[record.PhaseCanary] && !bp[record.PhaseCanary] {
		out = append(out, phasePair{record.PhaseWarm, record.PhaseCanary})
	}
	var rest []string
	for p := range bp {
		if p != record.PhaseWarm && cp[p] {
			rest = append(rest, p)
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i] == record.PhaseCanary || rest[j] == record.PhaseCanary {
			return rest[i] == record.PhaseCanary && rest[j] != record.PhaseCanary // canary before cold when no warm pair
		}
		return rest[i] < rest[j]
	})
	for _, p := range rest {
		if len(out) > 0 && out[0].cand == p {
			continue
		}
		out = append(out, phasePair{p, p})
	}
	return out
}

func costPerHour(c *contract.Contract) float64 {
	if !c.Cost.Known() {
		return 0
	}
	return c.Cost.AcceleratorHourUSD * float64(c.Cost.Accelerators)
}

// rng gives each side and phase its own deterministic stream.
func rng(seed uint64, who, phase string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(who + "/" + phase))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func appendUnique(stats []stat, more ...stat) []stat {
	for _, s := range more {
		dup := false
		for _, t := range stats {
			if s == t {
				dup = true
				break
			}
		}
		if !dup {
			stats = append(stats, s)
		}
	}
	return stats
}

func triggerStats(ev *evidence.Evidence) []stat {
	if ev == nil {
		return nil
	}
	var out []stat
	for _, t := range ev.Rollback.Triggers {
		if st, ok := signalStats[t.Signal]; ok {
			out = append(out, st)
		}
	}
	return out
}

// kindOf is the statistic kind that measures a contract metric.
var kindOf = map[contract.Metric]kind{contract.MetricTTFT: kTTFT, contract.MetricITL: kITL, contract.MetricTPOT: kTPOT, contract.MetricE2E: kE2E}

// statOf is the statistic an objective bounds: its quantile of the metric, or the worst
// value (quantile 1) for a per-request max.
func statOf(ob contract.Objective) stat {
	q := ob.Quantile
	if ob.PerRequest() {
		q = 1
	}
	return stat{kindOf[ob.Metric], q}
}

// objectiveGroup is the objectives judged over one population of a phase's tasks (scope),
// bootstrapped together under key.
type objectiveGroup struct {
	scope, key string
	objs       []contract.Objective
	// task is the task type of a type's own objectives; metric, for global ones, the metric
	// some task types replace (so the group sees only the types that do not); both empty:
	// every task of the phase.
	task   string
	metric contract.Metric
}

// objectiveGroups splits the contract's objectives by the tasks each governs: the global
// ones over every task (or, for a metric a task type replaces, over the types that keep the
// global bound), a task type's own over its tasks; percentile objectives first in each, as
// contract.Objectives orders them.
func objectiveGroups(c *contract.Contract, prefix string) []objectiveGroup {
	var out []objectiveGroup
	idx := map[string]int{}
	scoped := scopedMetrics(c)
	for _, ob := range c.Objectives() {
		g := objectiveGroup{scope: "all tasks"}
		switch {
		case ob.Task != "":
			g.scope, g.task = "task "+ob.Task, ob.Task
		case scoped[ob.Metric]:
			g.scope, g.metric = "tasks held to the global "+string(ob.Metric)+" bounds", ob.Metric
		}
		g.key = prefix + g.scope
		i, ok := idx[g.scope]
		if !ok {
			i = len(out)
			idx[g.scope] = i
			out = append(out, g)
		}
		out[i].objs = append(out[i].objs, ob)
	}
	for i := range out {
		// Percentile objectives first: their statistics lead each bootstrap, as they did
		// before per-request ones joined it, so a replicate's draws serve both unchanged.
		objs := out[i].objs
		var ps, ms []contract.Objective
		for _, ob := range objs {
			if ob.PerRequest() {
				ms = append(ms, ob)
			} else {
				ps = append(ps, ob)
			}
		}
		out[i].objs = append(ps, ms...)
	}
	return out
}

// scopedMetrics are the metrics some task type of c replaces with bounds of its own.
func scopedMetrics(c *contract.Contract) map[contract.Metric]bool {
	out := map[contract.Metric]bool{}
	for _, ob := range c.Objectives() {
		if ob.Task != "" {
			out[ob.Metric] = true
		}
	}
	return out
}

func objectiveStats(objs []contract.Objective) []stat {
	out := make([]stat, len(objs))
	for i, ob := range objs {
		out[i] = statOf(ob)
	}
	return out
}

// groupSide is a group's side of a phase.
func (ps *phaseSum) groupSide(g objectiveGroup, costPerHour float64) *side {
	switch {
	case g.task != "":
		return ps.taskSide(g.task)
	case g.metric != "":
		if ps == nil || ps.global[g.metric] == nil {
			return newSideAcc(false).side(0)
		}
		return ps.global[g.metric].side(0)
	}
	return ps.side(costPerHour)
}

// objectiveCheck is the check of one objective against a side: a percentile's point value,
// interval and status; a per-request max's worst value, which acceptance judges task by
// task (its tasks over the limit are rejected and counted in the acceptance rate), so it
// never decides a comparison on its own.
func objectiveCheck(ob contract.Objective, scope string, s *side, point float64, reps []float64, level float64) Check {
	ch := Check{Source: "contract slo", Signal: ob.Signal(), Op: ">", Bound: ob.LimitMs(), Unit: "ms", Scope: scope}
	if ob.PerRequest() {
		ch.Candidate = num(point)
		ch.Values = s.lat[kindOf[ob.Metric]].Len()
		ch.Status = StatusPerRequest
		ch.Note = "the worst value; a per-request bound is judged task by task, its misses counted in the acceptance rate"
		return ch
	}
	judge(&ch, s, statOf(ob), point, reps, level)
	return ch
}

// objectiveChecks checks every objective of the base's contract on both sides of the
// primary phase pair: the whole-phase group reuses the primary bootstrap (all its stats are
// in it), the others bootstrap their own sides.
func objectiveChecks(base *Run, primary *side, pb boot, primaryC *side, pc boot, stats []stat, bps, cps *phaseSum, p phasePair, o Options) []Check {
	var out []Check
	find := func(st stat) int {
		for i, s := range stats {
			if s == st {
				return i
			}
		}
		return -1
	}
	for _, g := range objectiveGroups(base.Contract, "") {
		if g.task == "" && g.metric == "" {
			for _, ob := range g.objs {
				j := find(statOf(ob))
				ch := objectiveCheck(ob, g.scope, primaryC, pc.point[j], pc.reps[j], o.Level)
				objectiveBase(&ch, ob, primary, pb.point[j], pb.reps[j], o.Level)
				out = append(out, ch)
			}
			continue
		}
		sts := objectiveStats(g.objs)
		bs, cs := bps.groupSide(g, 0), cps.groupSide(g, 0)
		who := "task/" + g.task
		if g.metric != "" {
			who = "global/" + string(g.metric)
		}
		bb := bs.bootstrap(sts, o.Resamples, rng(o.Seed, "base/"+who, p.base))
		cb := cs.bootstrap(sts, o.Resamples, rng(o.Seed, "candidate/"+who, p.cand))
		for i, ob := range g.objs {
			ch := objectiveCheck(ob, g.scope, cs, cb.point[i], cb.reps[i], o.Level)
			objectiveBase(&ch, ob, bs, bb.point[i], bb.reps[i], o.Level)
			out = append(out, ch)
		}
	}
	return out
}

// objectiveBase adds the base's value to a check (and, for a percentile, whether the base
// breaks the bound too).
func objectiveBase(ch *Check, ob contract.Objective, s *side, point float64, reps []float64, level float64) {
	if ob.PerRequest() {
		ch.Base = num(point)
		return
	}
	baselineToo(ch, s, statOf(ob), point, reps, level)
}

func num(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// breach reports whether v is past the bound in the op's direction.
func breach(op string, v, bound float64) (bool, bool) {
	switch op {
	case ">":
		return v > bound, true
	case ">=":
		return v >= bound, true
	case "<":
		return v < bound, true
	case "<=":
		return v <= bound, true
	}
	return false, false
}

// interval is the confidence interval of one statistic of one side. Quantiles of one value
// per task (TTFT, TPOT, E2E) use the equal-tailed distribution-free order-statistic interval
// (orderCI; one-sided, ±Inf, when the sample cannot bound the quantile on that side); ITL quantiles and
// rates use the bootstrap, ITL only with at least minSamples values. need is the sample
// size that would give a two-sided interval, when it is not.
func interval(s *side, st stat, reps []float64, level float64) (lo, hi float64, ok bool, need int, why string) {
	if st.kind.latency() {
		c := &s.lat[st.kind]
		n := c.Len()
		if n == 0 {
			return 0, 0, false, 0, "no values"
		}
		nmin := resample.MinSamples(st.q, level)
		if st.kind != kITL {
			loK, hiK := orderCI(n, st.q, level)
			lo, hi = math.Inf(-1), math.Inf(1)
			if loK >= 1 {
				lo = c.Value(loK - 1)
			}
			if hiK <= n {
				hi = c.Value(hiK - 1)
			}
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
				need = nmin
			}
			return lo, hi, true, need, ""
		}
		if n < nmin {
			return 0, 0, false, nmin, fmt.Sprintf("p%g of %d values: an interval needs at least %d", st.q*100, n, nmin)
		}
	}
	lo, hi, ok = resample.PercentileCI(append([]float64(nil), reps...), level)
	if !ok {
		return 0, 0, false, 0, "too few tasks for an interval"
	}
	return lo, hi, true, 0, ""
}

// judge sets a check's status from the candidate's point estimate and interval: fail only
// when the whole interval is past the bound, pass only when it is wholly short of it.
func judge(ch *Check, s *side, st stat, point float64, reps []float64, level float64) {
	ch.Candidate = num(point)
	if ch.Candidate == nil {
		ch.Status, ch.Note = StatusNotChecked, "not measured: the candidate has no value for this signal in the compared phase, so the bound is neither met nor missed"
		return
	}
	if _, valid := breach(ch.Op, 0, 0); !valid {
		ch.Status, ch.Note = StatusNotChecked, fmt.Sprintf("unknown operator %q", ch.Op)
		return
	}
	// Values counts what the check rests on, in the unit NeededTasks uses: values of the
	// latency in the check's scope for a quantile's order statistics, tasks otherwise.
	ch.Values = s.n
	if st.kind.latency() {
		ch.Values = s.lat[st.kind].Len()
	}
	lo, hi, ok, need, why := interval(s, st, reps, level)
	if !ok {
		ch.Status, ch.Note, ch.NeededTasks = StatusUncertain, why, need
		return
	}
	ch.CILo, ch.CIHi = num(lo), num(hi)
	bLo, _ := breach(ch.Op, lo, ch.Bound)
	bHi, _ := breach(ch.Op, hi, ch.Bound)
	switch {
	case bLo && bHi:
		ch.Status = StatusFail
	case !bLo && !bHi:
		ch.Status = StatusPass
	default:
		ch.Status = StatusUncertain
		if need > 0 {
			ch.NeededTasks = need
			ch.Note = fmt.Sprintf("%d values cannot bound this quantile on both sides at this level", ch.Values)
		} else {
			ch.Values = s.n
			ch.NeededTasks = needed(s.n, point, lo, hi, ch.Bound)
		}
	}
}

// needed estimates the sample size at which the interval around point would no longer
// reach the bound: its half-width shrinks as 1/√n.
func needed(n int, point, lo, hi, bound float64) int {
	dist := math.Abs(point - bound)
	half := (hi - lo) / 2
	if dist == 0 || half <= 0 || n == 0 {
		return 0
	}
	k := float64(n) * (half / dist) * (half / dist)
	if k > 1e7 {
		return 0
	}
	return int(math.Ceil(k))
}

// baselineToo marks an SLO breach the baseline shows as clearly as the candidate: the
// comparison cannot blame the change for it.
func baselineToo(ch *Check, s *side, st stat, point float64, reps []float64, level float64) {
	ch.Base = num(point)
	if ch.Status != StatusFail || ch.Base == nil {
		return
	}
	lo, hi, ok, _, _ := interval(s, st, reps, level)
	if !ok {
		return
	}
	bLo, _ := breach(ch.Op, lo, ch.Bound)
	bHi, _ := breach(ch.Op, hi, ch.Bound)
	if bLo && bHi {
		ch.Status = StatusBaselineFails
		ch.Note = fmt.Sprintf("the baseline breaks this bound too (%.4g, CI [%.4g, %.4g])", point, lo, hi)
	}
}

// pointOnly checks a trigger on a signal pel cannot recompute from records (a server-side
// signal) against the candidate's evidence.json value, without an interval.
func pointOnly(ch *Check, ev *evidence.Evidence) {
	if ev == nil {
		ch.Status, ch.Note = StatusNotChecked, "the candidate has no evidence.json"
		return
	}
	s, ok := ev.Signal(ch.Signal)
	if !ok {
		ch.Status, ch.Note = StatusNotChecked, "the candidate's evidence.json has no such signal"
		return
	}
	ch.Candidate = num(s.Value)
	b, valid := breach(ch.Op, s.Value, ch.Bound)
	switch {
	case !valid:
		ch.Status, ch.Note = StatusNotChecked, fmt.Sprintf("unknown operator %q", ch.Op)
	case b:
		// No interval: a breach is not significant by construction, so it cannot reject.
		ch.Status, ch.Note = StatusUncertain, "point value from "+s.Source+" past the bound; no interval for a server-side signal"
	default:
		ch.Status, ch.Note = StatusPass, "point value from "+s.Source+"; no interval for a server-side signal"
	}
}

func metricRow(m metricDef, j int, bs, cs *side, bb, cb boot, o Options) Metric {
	row := Metric{Name: m.name, Label: m.label, Signal: m.signal, Unit: m.unit, Better: "lower", Change: "n/a"}
	if m.higher {
		row.Better = "higher"
	}
	bv, cv := bb.point[j], cb.point[j]
	row.Base, row.Candidate = num(bv), num(cv)
	if row.Base == nil || row.Candidate == nil {
		row.Note = "not measured on one side: no values to compare"
		return row
	}
	row.Delta = num(cv - bv)
	if bv != 0 {
		row.DeltaPct = num((cv - bv) / math.Abs(bv) * 100)
	}
	if m.st.kind.latency() {
		x, y := bs.perTask[m.st.kind], cs.perTask[m.st.kind]
		u, err := mstats.MannWhitneyUTest(x, y, mstats.LocationDiffers)
		switch {
		case err == nil:
			row.P = num(u.P)
		case errors.Is(err, mstats.ErrSamplesEqual):
			row.P = num(1)
		}
		// Judge a quantile only where both samples can bound it: below that a bootstrap of
		// a p99 is a bootstrap of the sample maximum, and its interval is fiction.
		n := min(bs.lat[m.st.kind].Len(), cs.lat[m.st.kind].Len())
		if nmin := resample.MinSamples(m.st.q, o.Level); n < nmin {
			row.Change = "?"
			row.Note = fmt.Sprintf("not judged: a p%g needs at least %d values per side for a %.0f%% interval, the smaller side has %d", m.st.q*100, nmin, o.Level*100, n)
			return row
		}
	}
	if bb.reps[j] == nil || cb.reps[j] == nil {
		return row
	}
	d := make([]float64, o.Resamples)
	for r := range d {
		d[r] = cb.reps[j][r] - bb.reps[j][r]
	}
	lo, hi, ok := resample.PercentileCI(d, o.Level)
	if !ok {
		row.Note = "too few values for an interval"
		return row
	}
	row.CILo, row.CIHi = num(lo), num(hi)
	row.Significant = lo > 0 || hi < 0
	if (m.st.kind == kGoodput || m.st.kind == kCost) && math.Abs(cv-bv) < o.Tolerance*math.Abs(bv) {
		// Their intervals hold the window fixed: a change under the tolerance is the
		// window's last task, not a finding.
		row.Significant = false
	}
	row.Change = "~"
	if row.Significant {
		if (cv > bv) == m.higher {
			row.Change = "better"
		} else {
			row.Change = "worse"
		}
	}
	if row.P != nil && (*row.P < 1-o.Level) != row.Significant {
		if row.Significant {
			row.Note = "the interval moved but the U test sees no shift of the distribution as a whole (a tail effect)"
		} else {
			row.Note = "the U test sees the distribution shift; this quantile's interval still includes no change"
		}
	}
	return row
}

// decide sets the verdict: not comparable when a precondition blocks; reject on a significant breach or a significant fall of
// acceptance or goodput; inconclusive on too few tasks or an interval straddling a bound;
// accept otherwise.
func decide(res *Result, b, c *side, o Options) {
	p := res.Phases[0]
	var blocked []string
	for _, pc := range res.Preconditions {
		if pc.Blocking {
			blocked = append(blocked, fmt.Sprintf("not comparable (%s): %s", pc.Name, pc.Reason))
		}
	}
	res.Comparable = len(blocked) == 0
	if !res.Comparable {
		// The figures are still shown, but no difference between these runs can be blamed
		// on the change until the mismatch is removed.
		res.Verdict = NotComparable
		res.Reasons = append(res.Reasons, blocked...)
		return
	}
	if b.n < o.MinTasks || c.n < o.MinTasks {
		res.Verdict = Inconclusive
		res.NeededTasks = o.MinTasks
		res.NeededFor = fmt.Sprintf("no verdict below %d tasks per side", o.MinTasks)
		res.Reasons = append(res.Reasons, fmt.Sprintf("too few tasks to judge: %s phase has %d (base) and %d (candidate); need at least %d per side",
			p.Phase, b.n, c.n, o.MinTasks))
		return
	}
	var reject, uncertain []string
	need, needFor := 0, ""
	for _, list := range [][]Check{res.Triggers, res.SLO} {
		for _, ch := range list {
			desc := fmt.Sprintf("%s %s %.4g %s (%s, %s)", ch.Signal, ch.Op, ch.Bound, ch.Unit, ch.Source, ch.Scope)
			switch ch.Status {
			case StatusFail:
				reject = append(reject, fmt.Sprintf("%s: candidate %s, %.0f%% CI %s entirely past the bound", desc, figure.Fmt(ch.Candidate), o.Level*100, figure.FmtCI(ch.CILo, ch.CIHi)))
			case StatusUncertain:
				s := fmt.Sprintf("%s: candidate %s, CI %s straddles the bound", desc, figure.Fmt(ch.Candidate), figure.FmtCI(ch.CILo, ch.CIHi))
				if ch.NeededTasks > 0 && ch.Values > 0 {
					// The check sees ch.Values of its scope's values; scale to tasks of the
					// compared phase, so the advice matches the counts shown.
					tasks := int(math.Ceil(float64(ch.NeededTasks) * float64(c.n) / float64(ch.Values)))
					s += fmt.Sprintf(" (it rests on %d values in its scope; about %d would settle it)", ch.Values, ch.NeededTasks)
					if tasks > need {
						need = tasks
						needFor = fmt.Sprintf("%s (%s) rests on %d values of the candidate's %d tasks and needs about %d", ch.Signal, ch.Scope, ch.Values, c.n, ch.NeededTasks)
					}
				}
				uncertain = append(uncertain, s)
			}
		}
	}
	for _, m := range p.Metrics {
		if m.Name != "acceptance_rate" && m.Name != "goodput_rps" {
			continue
		}
		if m.CIHi == nil || m.Base == nil {
			continue
		}
		if *m.CIHi < -o.Tolerance*math.Abs(*m.Base) {
			reject = append(reject, fmt.Sprintf("%s fell %.1f%%, CI of the change [%s, %s] entirely below −%.0f%%",
				m.Label, -deref(m.DeltaPct), figure.FmtRel(m.CILo, m.Base), figure.FmtRel(m.CIHi, m.Base), o.Tolerance*100))
		}
	}
	switch {
	case len(reject) > 0:
		res.Verdict = Reject
		res.Reasons = append(res.Reasons, reject...)
	case len(uncertain) > 0:
		res.Verdict = Inconclusive
		res.NeededTasks, res.NeededFor = need, needFor
		res.Reasons = append(res.Reasons, uncertain...)
	default:
		res.Verdict = Accept
		n := 0
		for _, ch := range append(append([]Check{}, res.Triggers...), res.SLO...) {
			if ch.Status == StatusPass {
				n++
			}
		}
		res.Reasons = append(res.Reasons, fmt.Sprintf("no bound breached (%d checks passed) and neither acceptance nor goodput fell significantly by more than %.0f%%", n, o.Tolerance*100))
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
