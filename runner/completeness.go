package runner

import (
	"fmt"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/rundir"
)

// completeness records in ev.Run whether the run holds its contract's whole schedule: a
// signal that stopped the arrivals, a canary's stop rule that ended the schedule, one shard's
// part of a sharded schedule, a cut last line of requests.jsonl.
func completeness(ev *evidence.Evidence, c *contract.Contract, res loadgen.Result, cr *canaryRun, rd *rundir.Dir, cancelled int) {
	ev.Run.Completeness = &evidence.Completeness{Complete: true}
	planned := "its schedule"
	if c.Duration > 0 {
		planned = "a " + c.Duration.String() + " schedule"
	}
	at := res.End.Sub(res.Start).Round(100 * time.Millisecond)
	stopped := cr != nil && cr.router != nil && cr.router.Stopped() != nil
	switch {
	case stopped:
		s := cr.router.Stopped()
		ev.Run.AddGap(evidence.GapStoppedEarly, fmt.Sprintf("the canary's stop rule ended arrivals (%s); the run lasted %v of %s", s.Reason, at, planned))
	case res.Interrupted:
		ev.Run.AddGap(evidence.GapInterrupted, fmt.Sprintf("Ctrl-C or SIGTERM stopped arrivals; the run lasted %v of %s, and %d task(s) in flight were cancelled", at, planned, cancelled))
	}
	if s := ev.Run.Shard; s != nil {
		ev.Run.AddGap(evidence.GapShard, fmt.Sprintf("%d/%d, one part of the schedule (pel merge joins the shards into the whole run)", s.Index, s.Count))
	}
	if rd.Torn != nil {
		ev.Run.AddGap(evidence.GapTornLine, rundir.TornNote(rd.Torn))
	}
}

// unfinishedEvidence is the evidence.json a run directory holds while its run is going: only
// the gap that says so. The run's own evidence replaces it when the run ends.
func unfinishedEvidence(at time.Time) *evidence.Evidence {
	ev := evidence.New()
	ev.Run.AddGap(evidence.GapUnfinished, fmt.Sprintf("the run started at %s and never wrote its evidence: pel stopped before its end (a second Ctrl-C, a crash or a kill); requests.jsonl holds the tasks it recorded, those in flight as cancelled", at.UTC().Format(time.RFC3339)))
	return ev
}
