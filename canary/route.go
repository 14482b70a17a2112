package canary

import (
	"fmt"
	"sync"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// routeStream separates the routing draw from every stream the workload draws from, so the
// split never moves an arrival, a length or a prompt.
const routeStream = 0xCA7A12

// Draw is arrival seq's routing number in [0, 1): a pure function of the contract seed and
// the arrival's position in the schedule (splitmix64), never of a clock. The arrival goes to
// the candidate when Draw < share, so the same seed and share route the same arrivals in
// every run, and a larger share routes a superset of a smaller one's arrivals.
func Draw(seed uint64, seq int) float64 {
	z := seed ^ routeStream ^ (uint64(seq)+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// Stop kinds.
const (
	StopTrigger     = "trigger"      // a rollback trigger breached with confidence (early stop)
	StopMaxTasks    = "max_tasks"    // the canary's scope: that many tasks sent
	StopMaxDuration = "max_duration" // the canary's scope: its time is up
)

// Stop is when and why the run stopped sending to the candidate. An arrival the router
// sees after it goes to the baseline (a rollback); pel run also ends its arrivals there,
// since the comparison window is over, and lets the tasks in flight finish.
type Stop struct {
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// AtS is At in seconds since the run's start (filled when the log is written).
	AtS float64 `json:"at_s"`
	// Signal is the breached trigger's signal (kind trigger).
	Signal string `json:"signal,omitempty"`
	// CanaryTasks is how many candidate tasks the decision rested on (kind trigger), or
	// were sent (scope).
	CanaryTasks int `json:"canary_tasks"`
	// AfterSeq: arrivals from this position on were not sent to the candidate (the arrivals
	// already planned before the stop keep their target).
	AfterSeq int `json:"after_seq"`
}

// Router decides, once per arrival and in schedule order, whether it goes to the candidate:
// its seeded draw is under the share, the canary's scope (max tasks, max duration) is not
// exhausted, and the canary has not been stopped. It marks the candidate's arrivals with
// phase canary; the load generator sends by phase (loadgen.SplitDoer).
type Router struct {
	seed  uint64
	scope contract.Canary
	now   func() time.Time

	mu       sync.Mutex
	arrivals int
	routed   int
	nextSeq  int
	stop     *Stop
	onRoute  func(seq int, at time.Duration, canary, live bool) // the monitor's queue of arrivals
	baseline int
}

// NewRouter routes with the contract's seed and canary block (share already resolved).
// now is the clock that only timestamps a stop (nil: time.Now); no decision reads it.
func NewRouter(seed uint64, scope contract.Canary, now func() time.Time) *Router {
	if now == nil {
		now = time.Now
	}
	return &Router{seed: seed, scope: scope, now: now}
}

// Route is loadgen.DriverConfig.Route: it sets req.Phase to canary for the candidate's
// arrivals and leaves the others' phase as it is.
func (r *Router) Route(req *workload.Request) {
	r.mu.Lock()
	r.arrivals++
	r.nextSeq = req.Seq + 1
	if r.stop == nil {
		switch {
		case r.scope.MaxDuration > 0 && req.At >= r.scope.MaxDuration:
			r.stopLocked(Stop{Kind: StopMaxDuration, Reason: fmt.Sprintf("the canary's max_duration %v is up", r.scope.MaxDuration), CanaryTasks: r.routed}, req.Seq)
		case r.scope.MaxTasks > 0 && r.routed >= r.scope.MaxTasks:
			r.stopLocked(Stop{Kind: StopMaxTasks, Reason: fmt.Sprintf("the canary's max_tasks (%d) were sent", r.scope.MaxTasks), CanaryTasks: r.routed}, req.Seq)
		}
	}
	// live: this arrival's side was drawn (the canary runs), so both sides had their share
	// of it; after a stop every arrival goes to the baseline.
	live := r.stop == nil
	canary := live && Draw(r.seed, req.Seq) < r.scope.Share
	if canary {
		req.Phase = record.PhaseCanary
		r.routed++
	} else {
		r.baseline++
	}
	on := r.onRoute
	r.mu.Unlock()
	// Outside the lock: the monitor takes its own lock here, and holds it when it stops the
	// router. The pacer routes one arrival at a time, so the monitor still sees them in order.
	if on != nil {
		on(req.Seq, req.At, canary, live)
	}
}

// StopNow stops sending to the candidate (the first stop wins); it reports whether this
// call stopped it.
func (r *Router) StopNow(s Stop) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		return false
	}
	r.stopLocked(s, r.nextSeq)
	return true
}

func (r *Router) stopLocked(s Stop, after int) {
	if s.At.IsZero() {
		s.At = r.now()
	}
	s.AfterSeq = after
	r.stop = &s
}

// Stopped returns the stop, or nil while the canary runs.
func (r *Router) Stopped() *Stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop == nil {
		return nil
	}
	s := *r.stop
	return &s
}

// Counts returns the arrivals routed so far: all, to the candidate.
func (r *Router) Counts() (arrivals, canary int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrivals, r.routed
}
