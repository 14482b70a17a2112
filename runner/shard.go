package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// MinStartLead is how far ahead --start-at must be when a run starts: the clock probe
// (~2 s) and the connection set-up happen before it, and a shard that starts late runs
// its part of the schedule late from the first task.
const MinStartLead = 5 * time.Second

// checkStart validates a sharded run's shard and start before anything is written.
func checkStart(cfg *Config, now time.Time) error {
	if cfg.Shard.Count == 0 {
		cfg.Shard = workload.Shard{Index: 0, Count: 1}
	}
	if err := cfg.Shard.Check(); err != nil {
		return badInput("--shard: %v", err)
	}
	if cfg.Shard.Count > 1 && cfg.StartAt.IsZero() {
		return badInput("--shard %s needs --start-at TIME: every shard's schedule counts from the one instant", cfg.Shard)
	}
	if !cfg.StartAt.IsZero() {
		if lead := cfg.StartAt.Sub(now); lead < MinStartLead {
			return badInput("--start-at %s is %s from now: give it at least %v (the shards probe the target's clock and connect first)",
				cfg.StartAt.UTC().Format(time.RFC3339), lead.Round(time.Millisecond), MinStartLead)
		}
	}
	return nil
}

// stampShard puts the shard on every record the driver hands to sink.
func stampShard(sink func(*record.Record) error, s workload.Shard) func(*record.Record) error {
	if s.Count <= 1 {
		return sink
	}
	tag := s.String()
	return func(r *record.Record) error {
		r.Shard = tag
		return sink(r)
	}
}

// Clock probing. A load generator on another machine sends on its own clock; the shards
// of a run line up only as well as their clocks agree. Each shard measures the target's
// clock against its own from the Date header of ordinary requests (every HTTP server sends
// one; its resolution is a second). A response whose header reads D was produced while the
// target's clock was in [D, D+1 s), at some local instant between the request's send s and
// its answer r, so the offset θ (target − local) lies in [D − r, D + 1 s − s). Intersecting
// these intervals over probes sent across a tick of the target's second narrows θ to the
// probes' spacing plus a round trip: first 30 probes 40 ms apart find a tick, then probes
// 2 ms apart straddle the next one. The result is a bound, not an estimate: the true offset
// lies within OffsetMs ± BoundMs (unless a clock was stepped during the probe, which shows
// as an empty intersection and is reported).

const (
	probeCoarse      = 30
	probeCoarseEvery = 40 * time.Millisecond
	probeFine        = 40
	probeFineEvery   = 2 * time.Millisecond
)

type clockProbe struct {
	lo, hi time.Duration // the offset interval so far
	n      int
	rtt    time.Duration
	have   bool
}

func (p *clockProbe) add(s, r time.Time, d time.Time) {
	lo, hi := d.Sub(r), d.Add(time.Second).Sub(s)
	if !p.have {
		p.lo, p.hi, p.have = lo, hi, true
	} else {
		p.lo, p.hi = max(p.lo, lo), min(p.hi, hi)
	}
	p.n++
	p.rtt = max(p.rtt, r.Sub(s))
}

// probeClock measures the target's clock against this machine's (see above). It returns
// nil and why when the target sends no usable Date header.
func probeClock(ctx context.Context, hc *http.Client, target, apiKey string) (*evidence.ClockOffset, string) {
	url := loadgen.Endpoint(target, "/v1/models")
	var p clockProbe
	once := func() (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err.Error()
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		s := time.Now()
		resp, err := hc.Do(req)
		r := time.Now()
		if err != nil {
			return false, err.Error()
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			return false, "the target sends no Date header"
		}
		p.add(s, r, d)
		return true, ""
	}
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for i := 0; i < probeCoarse; i++ {
		if ok, why := once(); !ok {
			return nil, why
		}
		if !sleep(probeCoarseEvery) {
			return nil, "interrupted"
		}
	}
	// The target's next whole second, in local time, lies in [S − hi, S − lo): probe across it.
	if p.hi-p.lo > 2*probeFineEvery {
		now := time.Now()
		s := now.Add(p.lo).Truncate(time.Second).Add(time.Second)
		from := s.Add(-p.hi).Add(-5 * time.Millisecond)
		if from.Before(now) {
			from, s = from.Add(time.Second), s.Add(time.Second)
		}
		if sleep(time.Until(from)) {
			for i := 0; i < probeFine && time.Now().Before(s.Add(-p.lo).Add(5*time.Millisecond)); i++ {
				if ok, why := once(); !ok {
					return nil, why
				}
				if !sleep(probeFineEvery) {
					break
				}
			}
		}
	}
	if p.lo > p.hi {
		return nil, fmt.Sprintf("the target's Date headers contradict each other over %d probes (a clock stepped while probing?)", p.n)
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
	return &evidence.ClockOffset{
		OffsetMs: ms((p.lo + p.hi) / 2), BoundMs: ms((p.hi - p.lo + 1) / 2),
		Via: fmt.Sprintf("Date headers of %d GET /v1/models sent across ticks of the target's second (round trip ≤ %v)", p.n, p.rtt.Round(time.Microsecond)),
	}, ""
}
