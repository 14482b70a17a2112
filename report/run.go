package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// ShardLine says which shard a run was and how its clock compared with the target's.
func ShardLine(w io.Writer, ev *evidence.Evidence) {
	s := ev.Run.Shard
	if s == nil {
		return
	}
	clock := "not compared (see notes)"
	if c := s.Clock; c != nil {
		clock = fmt.Sprintf("target's clock %+.1f ms ± %.1f ms from this machine's", c.OffsetMs, c.BoundMs)
	}
	fmt.Fprintf(w, "shard %d/%d, schedule from %s; %s\n", s.Index, s.Count, s.StartAt.UTC().Format(time.RFC3339Nano), clock)
}

// MergeShards prints a merged run's header and one line per shard: tasks, schedule lag,
// clock.
func MergeShards(w io.Writer, ev *evidence.Evidence, dir string) {
	fmt.Fprintf(w, "pel merge: %s, %d shards, contract %s sha256 %.12s\n", dir, len(ev.Run.Shards), ev.Contract.Name, ev.Contract.SHA256)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\ttasks\tlag p50 ms\tlag p99 ms\ttarget clock − shard's, ms\tdirectory\t")
	for _, s := range ev.Run.Shards {
		clock := "not measured"
		if c := s.Clock; c != nil {
			clock = fmt.Sprintf("%+.1f ± %.1f", c.OffsetMs, c.BoundMs)
		}
		late := ""
		if s.Note != "" {
			late = "  LATE"
		}
		fmt.Fprintf(tw, "%d/%d\t%d\t%.1f\t%.1f%s\t%s\t%s\t\n", s.Index, s.Count, s.Tasks, s.ScheduleLagP50Ms, s.ScheduleLagP99Ms, late, clock, s.Dir)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
