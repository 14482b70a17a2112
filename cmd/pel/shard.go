package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pel-ladder/pel/workload"
)

// shardFlags are pel run's --shard and --start-at.
type shardFlags struct{ shard, startAt string }

func (s *shardFlags) register(f *pflag.FlagSet) {
	f.StringVar(&s.shard, "shard", "", "run shard `I/N` of the contract's one schedule: every N-th arrival from the I-th (0 ≤ I < N); needs --start-at")
	f.StringVar(&s.startAt, "start-at", "", "wall-clock `TIME` the schedule starts (RFC 3339, e.g. 2026-03-01T12:00:00Z, or +DURATION from now); every shard of a run gets the same")
}

// config parses the flags; zero values without them.
func (s *shardFlags) config(now time.Time) (workload.Shard, time.Time, error) {
	var sh workload.Shard
	if s.shard != "" {
		var err error
		if sh, err = workload.ParseShard(s.shard); err != nil {
			return sh, time.Time{}, usageErrorf("--shard: %v", err)
		}
	}
	var at time.Time
	if s.startAt != "" {
		var err error
		if at, err = parseStartAt(s.startAt, now); err != nil {
			return sh, time.Time{}, usageErrorf("--start-at: %v", err)
		}
	}
	return sh, at, nil
}

// parseStartAt reads an RFC 3339 time or +DURATION from now.
func parseStartAt(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if rest, ok := strings.CutPrefix(v, "+"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q: want +DURATION such as +30s", v)
		}
		return inStartBounds(v, now.Add(d), now)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time such as 2026-03-01T12:00:00Z, or +DURATION", v)
	}
	return inStartBounds(v, t, now)
}

// inStartBounds returns t, the start v names, when it is within maxStartPast and
// maxStartAhead of now.
func inStartBounds(v string, t, now time.Time) (time.Time, error) {
	switch {
	case t.Before(now.Add(-maxStartPast)):
		return time.Time{}, fmt.Errorf("%s is %s before now: every arrival since would be sent at once (give the start the shards share, or +DURATION)", v, now.Sub(t).Round(time.Minute))
	case t.After(now.Add(maxStartAhead)):
		return time.Time{}, fmt.Errorf("%s is %s from now, past pel's bound of %s (a typo in the date?)", v, t.Sub(now).Round(time.Hour), maxStartAhead)
	}
	return t, nil
}

// Bounds on a shared start time. A shard started a little after the start catches up (its
// late arrivals carry their lag); one started an hour after would send an hour of arrivals
// at once. A start weeks ahead is a mistyped date, and a run that waits for it never ends.
const (
	maxStartPast  = time.Hour
	maxStartAhead = 7 * 24 * time.Hour
)
