package canary

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// side draws one task's TTFT and E2E (ms) for a side of a simulated interleaved run.
type side func(rng *rand.Rand) (ttft, e2e float64, ok bool)

func lognormal(median, sigma float64) side {
	return func(rng *rand.Rand) (float64, float64, bool) {
		ttft := median * math.Exp(sigma*rng.NormFloat64())
		return ttft, ttft + 400 + 40*rng.Float64(), true
	}
}

// thrashing: a third of the tasks wait for KV blocks (TTFT ×20), as pel sim's kv-thrash does
// under a load it cannot hold.
func thrashing(median, sigma float64) side {
	base := lognormal(median, sigma)
	return func(rng *rand.Rand) (float64, float64, bool) {
		ttft, e2e, ok := base(rng)
		if rng.Float64() < 1.0/3 {
			ttft *= 20
			e2e += ttft
		}
		return ttft, e2e, ok
	}
}

type simResult struct {
	stop   *Stop
	tests  []Test
	frozen bool
}

// simulate runs one interleaved run of n arrivals (20 ms apart, 1 s warm-up) through a
// router and a monitor, without a clock: each task's record reaches the monitor in order of
// its done time, as a sink sees them.
func simulate(seed uint64, n int, share float64, base, cand side, fixed []evidence.Trigger) simResult {
	return simulateDrift(seed, n, share, base, cand, fixed, 0, 1)
}

// simulateDrift: from arrival driftFrom on (0: never) every task on both sides is slowed
// by factor, as a client machine that gets busy, or a heavier traffic mix, would do.
func simulateDrift(seed uint64, n int, share float64, base, cand side, fixed []evidence.Trigger, driftFrom int, factor float64) simResult {
	rng := rand.New(rand.NewPCG(seed, 99))
	start := time.Unix(1_000_000, 0)
	sc := contract.DefaultCanary()
	sc.Share = share
	r := NewRouter(seed, sc, func() time.Time { return start })
	src := SourceBaselineSide
	if fixed != nil {
		src = SourceRollbackFrom
	}
	m := NewMonitor(MonitorConfig{Router: r, EarlyStop: true, Alpha: 0.05, Warmup: time.Second, Triggers: fixed, Source: src,
		Derive: diagnose.Options{Resamples: 100}, Now: func() time.Time { return start }})
	recs := make([]record.Record, 0, n)
	for i := range n {
		at := time.Duration(i) * 20 * time.Millisecond
		req := workload.Request{Seq: i, At: at, Phase: workload.PhaseAt(at, time.Second)}
		r.Route(&req)
		draw := base
		if req.Phase == record.PhaseCanary {
			draw = cand
		}
		ttft, e2e, _ := draw(rng)
		if driftFrom > 0 && i >= driftFrom {
			ttft, e2e = ttft*factor, e2e*factor
		}
		sched := start.Add(at)
		recs = append(recs, record.Record{Seq: i, Phase: req.Phase, ScheduledAt: sched, Status: record.StatusOK, Accepted: true,
			FirstTokenAt: sched.Add(time.Duration(ttft * float64(time.Millisecond))), DoneAt: sched.Add(time.Duration(e2e * float64(time.Millisecond)))})
		if r.Stopped() != nil {
			break // pel run ends its arrivals at the stop
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].DoneAt.Before(recs[j].DoneAt) })
	for i := range recs {
		m.Observe(&recs[i])
	}
	tests, frozen, _, _, _ := m.Tests()
	return simResult{stop: r.Stopped(), tests: tests, frozen: frozen}
}

// TestMonitorIdenticalSidesRarelyStop: the candidate is the baseline's twin; the triggers
// are derived from the run's own baseline side (368 warm tasks) and fixed, then tested on
// the candidate's tasks. Over seeded runs the share stopped stays near the stated alpha
// (the derived bound adds its own small chance of sitting under the twin's true p99).
func TestMonitorIdenticalSidesRarelyStop(t *testing.T) {
	const trials = 80
	stops := 0
	for s := range trials {
		res := simulate(uint64(s+1), 1600, 0.5, lognormal(40, 0.3), lognormal(40, 0.3), nil)
		if !res.frozen {
			t.Fatalf("trial %d: triggers never derived", s)
		}
		if res.stop != nil {
			stops++
			t.Logf("trial %d stopped: %s", s, res.stop.Reason)
		}
	}
	t.Logf("identical sides: %d of %d runs stopped (alpha 0.05)", stops, trials)
	if stops > trials/10 {
		t.Errorf("identical sides stopped %d of %d runs: more than twice the stated 5%%", stops, trials)
	}
}

// TestMonitorStopsAThrashingCandidate: a third of the candidate's tasks wait 20× longer
// for their first token; a p99 trigger (TTFT, or E2E which carries it) is breached, by the
// candidate alone, within a few dozen of its tasks once the triggers exist, with both
// trigger sources.
func TestMonitorStopsAThrashingCandidate(t *testing.T) {
	fixed := []evidence.Trigger{
		{Signal: evidence.SigTTFTP99, Op: ">", Bound: 95, Unit: "ms"},
		{Signal: evidence.SigITLP99, Op: ">", Bound: 20, Unit: "ms"},
		{Signal: evidence.SigAcceptanceRate, Op: "<", Bound: 0.98, Unit: "ratio"},
	}
	for _, c := range []struct {
		name  string
		fixed []evidence.Trigger
	}{{"derived from the baseline side", nil}, {"fixed from a baseline run", fixed}} {
		t.Run(c.name, func(t *testing.T) {
			for s := range 20 {
				res := simulate(uint64(s+1), 1600, 0.5, lognormal(40, 0.3), thrashing(40, 0.3), c.fixed)
				// The slow first tokens make slow tasks too: either p99 trigger may cross first.
				if res.stop == nil || res.stop.Kind != StopTrigger || (res.stop.Signal != evidence.SigTTFTP99 && res.stop.Signal != evidence.SigE2EP99) {
					t.Fatalf("trial %d: stop %+v, want the TTFT or E2E p99 trigger", s, res.stop)
				}
				var hit *Test
				for i := range res.tests {
					if res.tests[i].Signal == res.stop.Signal {
						hit = &res.tests[i]
					}
				}
				if hit == nil || !hit.Crossed || hit.CrossedTask > 60 {
					t.Fatalf("trial %d: %s test %+v, want crossed within 60 candidate tasks", s, res.stop.Signal, hit)
				}
				for _, x := range res.tests {
					if x.Signal == evidence.SigITLP99 && (x.Tested || x.Why == "") {
						t.Errorf("ITL trigger tested sequentially: %+v", x)
					}
				}
			}
		})
	}
}

// TestMonitorDriftHittingBothSidesStopsNothing: the triggers are fixed early, then every
// task on both sides takes twice as long (a client machine getting busy). The candidate then
// breaches the TTFT trigger on its own, but no more than the baseline beside it: the run
// is not stopped, in all but a stated-alpha share of seeded runs.
func TestMonitorDriftHittingBothSidesStopsNothing(t *testing.T) {
	const trials = 40
	stops, breached := 0, 0
	for s := range trials {
		res := simulateDrift(uint64(s+1), 1600, 0.5, lognormal(40, 0.3), lognormal(40, 0.3), nil, 900, 2)
		if res.stop != nil {
			stops++
		}
		for _, x := range res.tests {
			if x.Signal == evidence.SigTTFTP99 && x.LogLR >= x.Threshold {
				breached++
			}
		}
	}
	t.Logf("drift on both sides: trigger breached by the candidate alone in %d of %d runs, %d stopped", breached, trials, stops)
	if breached < trials/2 {
		t.Errorf("the drift breached the trigger in only %d of %d runs: the case is not exercised", breached, trials)
	}
	if stops > trials/10 {
		t.Errorf("a drift on both sides stopped %d of %d runs", stops, trials)
	}
}

// TestMonitorSkipsWarmupAndKeepsOrder: the candidate's warm-up tasks never count, and a
// task that finishes early waits for the earlier arrivals (schedule order, not completion).
func TestMonitorSkipsWarmupAndKeepsOrder(t *testing.T) {
	start := time.Unix(0, 0)
	sc := contract.DefaultCanary()
	sc.Share = 0.999999
	r := NewRouter(1, sc, nil)
	m := NewMonitor(MonitorConfig{Router: r, EarlyStop: true, Alpha: 0.05, Warmup: time.Second, Source: SourceRollbackFrom,
		Triggers: []evidence.Trigger{{Signal: evidence.SigTTFTP99, Op: ">", Bound: 100, Unit: "ms"}}})
	var recs []record.Record
	for i := range 4 {
		at := time.Duration(i) * 600 * time.Millisecond // 0, 0.6 s in warm-up; 1.2, 1.8 s warm
		req := workload.Request{Seq: i, At: at}
		r.Route(&req)
		sched := start.Add(at)
		recs = append(recs, record.Record{Seq: i, Phase: req.Phase, ScheduledAt: sched, Status: record.StatusOK, Accepted: true,
			FirstTokenAt: sched.Add(500 * time.Millisecond), DoneAt: sched.Add(time.Second)})
	}
	// Arrival 3 ends first: nothing can be fed until arrival 2 ends.
	m.Observe(&recs[3])
	if ts, _, _, _, _ := m.Tests(); ts[0].Tasks != 0 {
		t.Fatalf("fed out of order: %+v", ts[0])
	}
	m.Observe(&recs[0])
	m.Observe(&recs[1])
	m.Observe(&recs[2])
	ts, _, _, _, _ := m.Tests()
	if ts[0].Tasks != 2 || ts[0].Breaches != 2 || ts[0].LogLR < ts[0].Threshold {
		t.Fatalf("want the two warm tasks, both breaching, past the allowance: %+v", ts[0])
	}
	// With (nearly) no baseline beside it, breaches cannot be shown to be the candidate's
	// more than its share: no stop.
	if s := r.Stopped(); s != nil {
		t.Fatalf("stopped without a baseline to compare with: %+v", s)
	}
}
