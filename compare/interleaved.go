package compare

import (
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
)

// An interleaved canary run holds both sides of a comparison in one directory (package
// canary splits it and judges it); the two methods below are what a comparison needs to
// know of such a side: which tasks it holds, and the window its goodput is computed over.

// Part is an empty side of r under name, with evidence ev (nil: none), r's contract and
// r's engine facts, for its caller to stream some of r's tasks into (Add).
func (r *Run) Part(name string, ev *evidence.Evidence) *Run {
	p := NewRun(name, r.Contract, ev)
	p.engine = r.engine
	return p
}

// ReadEngine replaces r's engine facts with those of the samples file name in the run
// directory d (one side's engine in an interleaved run).
func (r *Run) ReadEngine(d *rundir.Dir, name string) error {
	f, err := engineFactsIn(d, name)
	if err != nil {
		return badInput("%v", err)
	}
	r.engine = f
	return nil
}

// Interleave marks r as one side of an interleaved run: per phase, shares is the side's
// share of the arrivals and windows the window both sides share (seconds). Goodput and
// cost are then computed over the shared window scaled by the share, and the comparison
// knows that one load generator sent both sides' tasks.
func (r *Run) Interleave(shares, windows map[string]float64) {
	r.shares, r.windows = shares, windows
}

// interleavedPreconditions: in an interleaved run one load generator sent both sides'
// tasks in one window, each arrival's side drawn at random, so its lateness falls on both
// sides alike and a difference between them is sampling noise, not a busier client.
func interleavedPreconditions(ps []Precondition) {
	for i := range ps {
		if p := &ps[i]; p.Name == PreLateness && p.Known && !p.OK {
			p.OK, p.Blocking = true, false
			p.Reason = "one load generator sent both sides' tasks in one window, each arrival's side drawn at random: its lateness falls on both sides alike, and the difference shown is sampling noise, not a busier client"
		}
	}
}

// canaryWindow sets the side's goodput window to the window both sides of an interleaved
// run share, times the side's share of its arrivals: goodput then reads as if the side
// had served every arrival, and differs between the sides by acceptance alone. 0 leaves
// the side's own window.
func (s *side) canaryWindow(window, share float64) {
	if window > 0 && share > 0 && share <= 1 {
		s.windowS = window * share
	}
}
