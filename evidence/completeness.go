package evidence

import "strings"

// Kinds of a gap in a run's completeness.
const (
	GapInterrupted  = "interrupted"   // Ctrl-C or SIGTERM stopped the arrivals
	GapStoppedEarly = "stopped_early" // the run ended its own schedule early (a canary's stop rule)
	GapShard        = "shard"         // one shard of a sharded run: part of the schedule
	GapTornLine     = "torn_line"     // requests.jsonl ends in a cut line (a crash mid-write)
	GapUnfinished   = "unfinished"    // the run never wrote its evidence (stopped at once, crashed)
)

// Gap is one reason a run holds less than its contract's whole schedule.
type Gap struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Completeness says whether a run holds the whole schedule its contract describes. A partial
// run's figures describe only what ran: they lead its verdict, and a comparison does not take
// it as a baseline unless told to.
type Completeness struct {
	Complete bool  `json:"complete"`
	Gaps     []Gap `json:"gaps,omitempty"`
}

// AddGap records a gap once per kind (a later detail of the same kind replaces the earlier).
func (r *Run) AddGap(kind, detail string) {
	if r.Completeness == nil {
		r.Completeness = &Completeness{Complete: true}
	}
	c := r.Completeness
	c.Complete = false
	for i := range c.Gaps {
		if c.Gaps[i].Kind == kind {
			c.Gaps[i].Detail = detail
			return
		}
	}
	c.Gaps = append(c.Gaps, Gap{Kind: kind, Detail: detail})
}

// Partial reports whether the run is known to hold less than its whole schedule.
func (r *Run) Partial() bool { return r.Completeness != nil && !r.Completeness.Complete }

// PartialText is one line naming every gap ("interrupted: …; torn line: …"), empty for a
// complete run or one whose completeness was not recorded.
func (r *Run) PartialText() string {
	if !r.Partial() {
		return ""
	}
	var parts []string
	for _, g := range r.Completeness.Gaps {
		parts = append(parts, strings.ReplaceAll(g.Kind, "_", " ")+": "+g.Detail)
	}
	return strings.Join(parts, "; ")
}
