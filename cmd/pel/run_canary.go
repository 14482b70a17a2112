package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
)

// canaryFlags are pel run's interleaved-canary flags.
type canaryFlags struct {
	target       string
	share        float64
	metrics      []string
	rollbackFrom string
}

func (kf *canaryFlags) register(f *pflag.FlagSet) {
	f.StringVar(&kf.target, "canary", "", "interleaved canary: base URL of the candidate server; each arrival goes to it with the canary share (seeded), the rest to --target, in the same window (judge with pel compare DIR)")
	f.Float64Var(&kf.share, "canary-share", 0, "probability that an arrival goes to the candidate (default: the contract's canary.share, else 0.1)")
	f.StringArrayVar(&kf.metrics, "canary-metrics", nil, "the candidate engine's /metrics URL to sample into DIR/canary-metrics.jsonl (repeatable; --metrics is the baseline's)")
	f.StringVar(&kf.rollbackFrom, "rollback-from", "", "take the early stop's rollback triggers from this baseline run directory (same contract) instead of deriving them from the run's own baseline side")
}

// config builds the runner's canary configuration (nil without --canary).
func (kf *canaryFlags) config(c *contract.Contract, interval time.Duration, engine string) (*runner.Canary, error) {
	if kf.target == "" {
		if kf.share != 0 || len(kf.metrics) > 0 || kf.rollbackFrom != "" {
			return nil, usageErrorf("--canary-share, --canary-metrics and --rollback-from need --canary URL")
		}
		return nil, nil
	}
	if kf.share != 0 && !(kf.share > 0 && kf.share < 1) {
		return nil, usageErrorf("--canary-share %v: want a probability strictly between 0 and 1", kf.share)
	}
	cc := &runner.Canary{Target: kf.target, Share: kf.share}
	if len(kf.metrics) > 0 {
		if interval <= 0 {
			return nil, usageErrorf("--metrics-interval must be positive, got %v", interval)
		}
		col, err := scrape.NewCollector(scrape.Config{Engine: kf.metrics, Interval: interval, File: canary.MetricsFile, EngineOverride: engine})
		if err != nil {
			return nil, usageErrorf("--canary-metrics: %v", err)
		}
		cc.Collectors = []runner.Collector{col}
	}
	if kf.rollbackFrom != "" {
		ts, err := triggersFrom(kf.rollbackFrom, c)
		if err != nil {
			return nil, usageError(err)
		}
		cc.Triggers, cc.RollbackFrom = ts, kf.rollbackFrom
	}
	return cc, nil
}

// triggersFrom reads a baseline run's rollback triggers; the run must be of the same
// contract, or its bounds describe another workload.
func triggersFrom(dir string, c *contract.Contract) ([]evidence.Trigger, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("--rollback-from: %v", err)
	}
	if bc := d.Contract; bc.SHA256() != c.SHA256() {
		return nil, fmt.Errorf("--rollback-from %s: its contract (sha256 %.12s) is not this run's (%.12s): its triggers bound another workload", dir, bc.SHA256(), c.SHA256())
	}
	ev := d.Evidence
	if ev == nil {
		return nil, fmt.Errorf("--rollback-from %s: no %s (the run has not finished, or was never analysed)", dir, rundir.EvidenceFile)
	}
	if len(ev.Rollback.Triggers) == 0 {
		return nil, fmt.Errorf("--rollback-from %s: evidence.json has no rollback triggers (run pel analyze %s; it needs at least 30 warm tasks)", dir, dir)
	}
	return ev.Rollback.Triggers, nil
}

// printCanary summarises canary.json after an interleaved run (nothing when dir has none).
func printCanary(w io.Writer, dir string) {
	if l, err := canary.ReadFile(filepath.Join(dir, canary.LogFile)); err == nil {
		report.CanaryRun(w, l, dir)
	}
}
