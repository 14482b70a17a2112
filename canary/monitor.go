package canary

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/resample"
)

// FreezeTasks is how many warm baseline tasks an interleaved run collects before it derives
// the rollback triggers from its own baseline side: the fewest that bound a p99 on both
// sides at 95% (resample.MinSamples). A p99 bound derived from fewer is the sample's
// largest value plus the margin, which an identical candidate exceeds more often than the
// 1% the test assumes, so the test would stop a good candidate.
var FreezeTasks = resample.MinSamples(0.99, 0.95)

// Trigger sources.
const (
	SourceBaselineSide = "baseline side" // derived from this run's baseline tasks as it runs
	SourceRollbackFrom = "rollback-from" // a previous baseline run's evidence.json
)

// Test is one rollback trigger's sequential test on the candidate's tasks (canary.json).
type Test struct {
	evidence.Trigger
	// Tested: the trigger has a per-task outcome to test; Why says why not otherwise.
	Tested bool   `json:"tested"`
	Why    string `json:"why,omitempty"`
	// Breach is what counts as a breach for one task, e.g. "TTFT > 81.2 ms".
	Breach string `json:"breach,omitempty"`
	// P0 is the breach probability the trigger allows (1 − q for a q-quantile bound, 1 − a
	// for an acceptance floor a); Alpha this test's share of the false-alarm rate.
	P0    float64 `json:"p0,omitempty"`
	Alpha float64 `json:"alpha,omitempty"`
	// Tasks are the candidate's tasks the test saw (in its scope: completed tasks for a
	// latency), Breaches those that breached; LogLR its statistic against the trigger's
	// allowance, Threshold log(1/Alpha).
	Tasks     int     `json:"tasks"`
	Breaches  int     `json:"breaches"`
	LogLR     float64 `json:"log_lr"`
	Threshold float64 `json:"threshold,omitempty"`
	// BaseTasks and BaseBreaches are the baseline side's, over the same arrivals;
	// VsBaselineLogLR the statistic of "the breaches fall on the candidate more often than
	// its share": each breach, on either side, is the candidate's with probability Share
	// at most when the candidate breaches no more often than the baseline at that moment.
	BaseTasks       int     `json:"base_tasks"`
	BaseBreaches    int     `json:"base_breaches"`
	Share           float64 `json:"share,omitempty"`
	VsBaselineLogLR float64 `json:"vs_baseline_log_lr"`
	// Crossed: both statistics reached the threshold (the trigger breached, and by the
	// candidate more than by the baseline beside it); at which candidate task (its position
	// among the tested ones) and when.
	Crossed     bool      `json:"crossed"`
	CrossedTask int       `json:"crossed_task,omitempty"`
	CrossedAt   time.Time `json:"crossed_at,omitzero"`
	CrossedAtS  float64   `json:"crossed_at_s,omitempty"`

	x, vs Exceedance
	// outcome maps a task to (in scope, breached).
	outcome func(o *outcome) (bool, bool)
}

// outcome is what a test needs of one candidate task.
type outcome struct {
	seq                  int
	cancelled, ok, accep bool
	failed               bool
	ttft, e2e, tpot      float64 // ms; NaN when absent
	has                  [3]bool // ttft, e2e, tpot
}

func outcomeOf(r *record.Record) *outcome {
	o := &outcome{seq: r.Seq, cancelled: r.Status == record.StatusCancelled, ok: r.OK(), accep: r.Accepted, failed: r.Failed()}
	if d, ok := r.TTFT(); ok && r.OK() {
		o.ttft, o.has[0] = figure.Ms(d), true
	}
	if d, ok := r.E2E(); ok && r.OK() {
		o.e2e, o.has[1] = figure.Ms(d), true
	}
	if d, ok := r.TPOT(); ok && r.OK() {
		o.tpot, o.has[2] = figure.Ms(d), true
	}
	return o
}

// quantileSignals are the client latency signals a per-task outcome can test: which
// latency (index into outcome.has) and which quantile.
var quantileSignals = map[string]struct {
	idx  int
	name string
	q    float64
}{
	evidence.SigTTFTP50: {0, "TTFT", 0.50}, evidence.SigTTFTP95: {0, "TTFT", 0.95}, evidence.SigTTFTP99: {0, "TTFT", 0.99},
	evidence.SigE2EP50: {1, "E2E", 0.50}, evidence.SigE2EP99: {1, "E2E", 0.99},
	evidence.SigTPOTP50: {2, "TPOT", 0.50},
}

// newTest maps a trigger to its per-task test: a latency q-quantile over a bound is a
// breach probability over 1 − q; an acceptance rate under a floor a is a rejection
// probability over 1 − a; an error rate over b is a failure probability over b. Anything
// else (ITL, whose tokens are not independent within a task; goodput, a rate of the
// window; server-side signals) is judged once at the end by pel compare only.
func newTest(t evidence.Trigger) *Test {
	ts := &Test{Trigger: t}
	over := t.Op == ">" || t.Op == ">="
	under := t.Op == "<" || t.Op == "<="
	if qs, ok := quantileSignals[t.Signal]; ok && over {
		ts.Tested, ts.P0 = true, 1-qs.q
		ts.Breach = fmt.Sprintf("%s > %.4g %s", qs.name, t.Bound, t.Unit)
		b := t.Bound
		ts.outcome = func(o *outcome) (bool, bool) {
			if !o.has[qs.idx] {
				return false, false
			}
			v := [3]float64{o.ttft, o.e2e, o.tpot}[qs.idx]
			return true, v > b
		}
		return ts
	}
	switch {
	case t.Signal == evidence.SigAcceptanceRate && under && t.Bound > 0 && t.Bound < 1:
		ts.Tested, ts.P0, ts.Breach = true, 1-t.Bound, "task not accepted"
		ts.outcome = func(o *outcome) (bool, bool) { return true, !o.accep }
	case t.Signal == evidence.SigErrorRate && over && t.Bound > 0 && t.Bound < 1:
		ts.Tested, ts.P0, ts.Breach = true, t.Bound, "task failed"
		ts.outcome = func(o *outcome) (bool, bool) { return true, o.failed }
	case strings.HasPrefix(t.Signal, "client.itl_"):
		ts.Why = "ITL is per token and a task's tokens are not independent: judged at the end (pel compare), not sequentially"
	default:
		ts.Why = "no per-task outcome for this signal: judged at the end (pel compare), not sequentially"
	}
	return ts
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	Router *Router
	// Share is the probability that a live arrival goes to the candidate (the router's).
	Share float64
	// EarlyStop stops the router at the first crossing; Alpha is the false-alarm rate over
	// the whole run and every tested trigger.
	EarlyStop bool
	Alpha     float64
	// Warmup: tasks scheduled before it warm either side up (the baseline's cold phase,
	// the candidate's) and are left out of the tests.
	Warmup time.Duration
	// Triggers, when set, are fixed from the start (pel run --rollback-from DIR, Source
	// names it); nil: they are derived from this run's baseline side once it has
	// FreezeTasks warm tasks.
	Triggers []evidence.Trigger
	Source   string
	// Derive tunes the derivation (diagnose's defaults: seeded bootstrap, +10% margin).
	Derive diagnose.Options
	// Now timestamps crossings (nil: time.Now); no decision reads it.
	Now func() time.Time
}

// Monitor watches an interleaved run's records as they finish: it derives the rollback
// triggers from the baseline side (or holds fixed ones), tests each trigger on the tasks of
// both sides in schedule order, and stops the router at the first crossing when early stop
// is on. A trigger is crossed when two tests, each at the trigger's alpha, have both
// rejected: the candidate breaches the trigger (its breach probability is over the
// allowance), and it breaches more than the baseline beside it (the breaches, of either
// side, fall on the candidate more often than its share). A false stop needs the first to
// err when the candidate keeps the trigger, or the second to err when the candidate is no
// worse than the baseline, so its probability is at most alpha under either; and a change
// of conditions during the run (the client machine slowing down, the traffic mix moving)
// that hits both sides alike stops nothing, even when it breaches a trigger fixed before
// it. Observe is safe for concurrent use (it is the sink's).
type Monitor struct {
	cfg MonitorConfig

	mu     sync.Mutex
	tests  []*Test
	frozen bool
	// frozeAt and frozenAfter say when the in-run triggers were derived, from how many
	// baseline tasks; why when none could be.
	frozeAt     time.Time
	frozenAfter int
	deriveWhy   string
	base        []record.Record // warm baseline tasks until the triggers are frozen
	// queue holds every arrival in schedule order; head is the next to feed.
	queue   []queued
	head    int
	done    map[int]*outcome // finished tasks not yet fed
	backlog []fed            // fed in order before the triggers were frozen
	tested  int              // candidate tasks past warm-up fed to the tests
}

type queued struct {
	seq          int
	at           time.Duration
	canary, live bool
}

type fed struct {
	o      *outcome
	canary bool
}

// NewMonitor makes a monitor and hooks it to the router's arrivals.
func NewMonitor(cfg MonitorConfig) *Monitor {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Share <= 0 {
		cfg.Share = cfg.Router.scope.Share
	}
	m := &Monitor{cfg: cfg, done: map[int]*outcome{}}
	if cfg.Triggers != nil {
		m.freeze(cfg.Triggers, 0)
	}
	cfg.Router.mu.Lock()
	cfg.Router.onRoute = m.routed
	cfg.Router.mu.Unlock()
	return m
}

// routed is called by the router (under its lock) for each arrival, in order.
func (m *Monitor) routed(seq int, at time.Duration, canary, live bool) {
	m.mu.Lock()
	m.queue = append(m.queue, queued{seq, at, canary, live})
	m.mu.Unlock()
}

// freeze fixes the tests; the alpha is split evenly over the tested triggers (Bonferroni),
// so the chance that any of them stops a candidate that breaches none is at most Alpha.
func (m *Monitor) freeze(ts []evidence.Trigger, after int) {
	m.frozen, m.frozeAt, m.frozenAfter = true, m.cfg.Now(), after
	var tested []*Test
	for _, t := range ts {
		x := newTest(t)
		m.tests = append(m.tests, x)
		if x.Tested {
			tested = append(tested, x)
		}
	}
	for _, x := range tested {
		x.Alpha, x.Share = m.cfg.Alpha/float64(len(tested)), m.cfg.Share
		x.x = Exceedance{P0: x.P0, Alpha: x.Alpha}
		x.vs = Exceedance{P0: m.cfg.Share, Alpha: x.Alpha}
		x.Threshold = x.x.Threshold()
	}
}

// Observe takes one finished record (the run's sink calls it for every record).
func (m *Monitor) Observe(r *record.Record) {
	if r.Step != nil {
		return // a multi-step task is judged by its task record
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.frozen && r.Phase == record.PhaseWarm && r.Status != record.StatusCancelled {
		m.base = append(m.base, *r)
		if len(m.base) >= FreezeTasks {
			ts, why := diagnose.RollbackTriggers(m.base, m.cfg.Derive)
			m.deriveWhy = why
			m.freeze(ts, len(m.base))
			m.base = nil
			for _, f := range m.backlog {
				m.feed(f.o, f.canary)
			}
			m.backlog = nil
		}
	}
	m.done[r.Seq] = outcomeOf(r)
	// Feed in schedule order: a task that finishes early is no likelier to be fast than
	// one still running, so outcomes are taken by position, never by completion (fast
	// tasks finish first; taking them first would bias every look toward "no breach").
	for m.head < len(m.queue) {
		q := m.queue[m.head]
		o, ok := m.done[q.seq]
		if !ok {
			break
		}
		delete(m.done, q.seq)
		m.head++
		if o.cancelled || q.at < m.cfg.Warmup || !q.live {
			continue // cancelled: no outcome; warm-up: a cold phase; not live: no draw
		}
		if !m.frozen {
			m.backlog = append(m.backlog, fed{o, q.canary})
			continue
		}
		m.feed(o, q.canary)
	}
	if m.head > 4096 && m.head*2 > len(m.queue) {
		m.queue = append([]queued(nil), m.queue[m.head:]...)
		m.head = 0
	}
}

// feed adds one task's outcome to every test and stops the router at a crossing.
func (m *Monitor) feed(o *outcome, canary bool) {
	if canary {
		m.tested++
	}
	for _, t := range m.tests {
		if !t.Tested {
			continue
		}
		in, breach := t.outcome(o)
		if !in {
			continue
		}
		if canary {
			t.x.Add(breach)
			t.Tasks, t.Breaches, t.LogLR = t.x.N, t.x.K, t.x.LogLR()
		} else {
			t.BaseTasks++
			if breach {
				t.BaseBreaches++
			}
		}
		if breach {
			t.vs.Add(canary)
			t.VsBaselineLogLR = t.vs.LogLR()
		}
		if t.Crossed || !canary || !t.x.Crossed() || !t.vs.Crossed() {
			continue
		}
		t.Crossed, t.CrossedTask, t.CrossedAt = true, t.Tasks, m.cfg.Now()
		if m.cfg.EarlyStop {
			m.cfg.Router.StopNow(Stop{Kind: StopTrigger, Signal: t.Signal, At: t.CrossedAt, CanaryTasks: m.tested,
				Reason: fmt.Sprintf("rollback trigger %s %s %.4g %s breached with confidence: %d of %d candidate tasks had %s (the trigger allows %.3g%%; log-LR %.2f) against %d of %d baseline tasks beside them (breaches on the candidate beyond its %.3g share: log-LR %.2f); each ≥ log(1/%.3g) = %.2f",
					t.Signal, t.Op, t.Bound, t.Unit, t.Breaches, t.Tasks, t.Breach, t.P0*100, t.LogLR, t.BaseBreaches, t.BaseTasks, t.Share, t.VsBaselineLogLR, t.Alpha, t.Threshold)})
		}
	}
}

// Tests returns a copy of the tests' current state, and how the triggers were obtained.
func (m *Monitor) Tests() (tests []Test, frozen bool, frozeAt time.Time, after int, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tests {
		c := *t
		c.outcome = nil
		tests = append(tests, c)
	}
	why = m.deriveWhy
	if !m.frozen {
		why = fmt.Sprintf("the baseline side had %d warm tasks, fewer than the %d the triggers are derived from", len(m.base), FreezeTasks)
	}
	return tests, m.frozen, m.frozeAt, m.frozenAfter, why
}
