package contract

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// Canary defaults.
const (
	// DefaultCanaryShare: a tenth of the arrivals, the usual first step of a canary rollout.
	DefaultCanaryShare = 0.1
	// DefaultCanaryAlpha is the false-alarm rate of the early-stop test over the whole run
	// and every trigger together: the level pel's other intervals use (95%).
	DefaultCanaryAlpha = 0.05
)

// Canary is the contract's canary block: how much of the workload an interleaved canary
// run (pel run --canary URL) may send to the candidate, and when it stops sending.
//
// It is not part of the workload's identity (it is left out of Canonical and the sha256):
// it says how one workload is split between two targets, not what the workload is, so a
// canary run and a plain run of the same contract compare, and a baseline run's rollback
// triggers (pel run --rollback-from DIR) apply. A plain pel run ignores it.
type Canary struct {
	// Set: the contract has a canary block.
	Set bool
	// Share is the probability that an arrival goes to the candidate, in (0, 1); the draw
	// is seeded (contract seed and the arrival's position), never a clock. Default
	// DefaultCanaryShare; pel run --canary-share overrides it.
	Share float64
	// MaxDuration: no arrival scheduled at or after this offset from the run's start goes to
	// the candidate (0: no limit).
	MaxDuration time.Duration
	// MaxTasks: at most this many arrivals go to the candidate (0: no limit).
	MaxTasks int
	// EarlyStop stops sending to the candidate as soon as a rollback trigger is breached
	// with confidence (default true); Alpha is that test's false-alarm rate over the whole
	// run and all triggers (default DefaultCanaryAlpha).
	EarlyStop bool
	Alpha     float64
}

// DefaultCanary is the canary block a contract without one gets.
func DefaultCanary() Canary {
	return Canary{Share: DefaultCanaryShare, EarlyStop: true, Alpha: DefaultCanaryAlpha}
}

func (d *decoder) canary(n *yaml.Node, path string, c *Canary) {
	*c = DefaultCanary()
	c.Set = true
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	// A share of 1 leaves no baseline in the window to compare with; 0 sends nothing.
	if m.float("share", &c.Share) && !(c.Share > 0 && c.Share < 1) {
		m.errf("share", "want a probability strictly between 0 and 1 (the rest goes to the baseline), got %v", c.Share)
	}
	if m.duration("max_duration", &c.MaxDuration) && c.MaxDuration <= 0 {
		m.errf("max_duration", "must be positive (omit it for no limit)")
	}
	if m.int("max_tasks", &c.MaxTasks) && c.MaxTasks < 1 {
		m.errf("max_tasks", "must be at least 1 (omit it for no limit), got %d", c.MaxTasks)
	}
	m.bool("early_stop", &c.EarlyStop)
	// Above 0.5 a "stop" is more often a false alarm than not under the worst null.
	if m.float("alpha", &c.Alpha) && !(c.Alpha > 0 && c.Alpha <= 0.5) {
		m.errf("alpha", "want a false-alarm rate in (0, 0.5], got %v", c.Alpha)
	}
	m.finish()
}
