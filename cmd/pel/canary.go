package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/scrape"
)

func init() { subcommands = append(subcommands, newCanaryCmd) }

func newCanaryCmd(a *app) *cobra.Command {
	var (
		prom, baseSel, candSel, end, rollbackFrom string
		window, step                              time.Duration
		o                                         canary.LiveOptions
		asJSON                                    bool
	)
	cmd := &cobra.Command{
		Use:   "canary --prometheus URL --baseline SELECTOR --candidate SELECTOR [--window 30m]",
		Short: "Judge a production canary from the engines' own metrics in Prometheus (no load is sent)",
		Long: `canary judges a canary that is already serving live traffic: two groups of engine replicas
(baseline and candidate, each a Prometheus label selector such as 'job="vllm",track="canary"')
read over the same window from the engines' own /metrics as Prometheus stored them. It sends
no request. The window is cut into intervals (--interval, default window/30); in each, each
side gives its server-side TTFT p50/p99, ITL p99, E2E p99 and queue p99 (histogram deltas),
preemptions per thousand generated tokens, mean KV usage and queue, and throughput per
replica. Each metric's two samples are compared as automated canary analysis does (Netflix's
Kayenta): a Mann-Whitney U test and a seeded bootstrap interval of the difference of the
means, Bonferroni-corrected over the metrics; a metric is worse when both agree and its mean
moved by more than --effect. Metric groups are scored (latency 50, errors 25, saturation 25).
The baseline side's rollback triggers (p99 bounds from its own intervals, +10%, as pel's
diagnosis derives them; or a baseline run's, --rollback-from DIR) are checked on the
candidate.

Verdict: reject when a trigger is breached (the candidate's whole interval past it), a
critical metric (TTFT p99, E2E p99, preemptions) is worse, or the score is under 75;
inconclusive with fewer than 6 intervals with data per side, or a candidate mean past a
trigger's bound whose interval still straddles it; accept otherwise.

Exit status: 0 accept; 1 reject or inconclusive; 2 bad input (URL, selector, window).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if prom == "" || baseSel == "" || candSel == "" {
				return usageErrorf("canary needs --prometheus URL, --baseline SELECTOR and --candidate SELECTOR")
			}
			if window <= 0 {
				return usageErrorf("--window %v: must be positive", window)
			}
			endT := time.Now()
			if end != "" {
				t, err := parseTime(end)
				if err != nil {
					return usageErrorf("--end %q: %v", end, err)
				}
				endT = t
			}
			o.Start, o.End = endT.Add(-window), endT
			if o.Interval < 0 {
				return usageErrorf("--interval %v: must be positive", o.Interval)
			}
			if o.Interval == 0 {
				o.Interval = max(window/30, 5*time.Second)
			}
			if step <= 0 {
				step = min(max(o.Interval/5, time.Second), 15*time.Second)
			}
			if rollbackFrom != "" {
				ev, err := evidence.ReadFile(rollbackFrom + "/evidence.json")
				if err != nil {
					return usageErrorf("--rollback-from: %v", err)
				}
				o.Triggers, o.TriggersSource = ev.Rollback.Triggers, "--rollback-from "+rollbackFrom
				if o.Triggers == nil {
					o.Triggers = []evidence.Trigger{}
				}
			}
			// One step before the window, so each counter has a value at its first edge.
			from := o.Start.Add(-step)
			base, err := scrape.QueryRange(a.ctx, nil, prom, baseSel, from, o.End, step)
			if err != nil {
				return usageErrorf("--baseline: %v", err)
			}
			cand, err := scrape.QueryRange(a.ctx, nil, prom, candSel, from, o.End, step)
			if err != nil {
				return usageErrorf("--candidate: %v", err)
			}
			res, err := canary.Live(base, cand, baseSel, candSel, o)
			if err != nil {
				if errors.Is(err, badinput.ErrBadInput) {
					return usageErrorf("prometheus %s: %v", scrub.URL(prom), err)
				}
				return failError(err)
			}
			if asJSON {
				err = report.LiveJSON(a.stdout, res)
			} else {
				err = report.LiveText(a.stdout, res)
			}
			if err != nil {
				return failError(err)
			}
			return failError(report.VerdictError(res.Verdict, len(res.Reasons), true))
		},
	}
	f := cmd.Flags()
	f.StringVar(&prom, "prometheus", "", "Prometheus base URL (HTTP API v1)")
	f.StringVar(&baseSel, "baseline", "", `label matchers of the baseline replicas, e.g. 'job="vllm",track="stable"'`)
	f.StringVar(&candSel, "candidate", "", `label matchers of the candidate replicas, e.g. 'job="vllm",track="canary"'`)
	f.DurationVar(&window, "window", 30*time.Minute, "length of the analysed window, ending at --end")
	f.StringVar(&end, "end", "", "end of the window (RFC 3339 or Unix seconds; default now)")
	f.DurationVar(&o.Interval, "interval", 0, "length of each compared interval (default window/30, at least 5s)")
	f.DurationVar(&step, "step", 0, "query_range step (default interval/5, between 1s and 15s; not below the scrape interval)")
	f.StringVar(&rollbackFrom, "rollback-from", "", "check this baseline run directory's rollback triggers (mapped to the server-side quantiles) instead of deriving them from the baseline side")
	f.Float64Var(&o.Effect, "effect", 0.10, "relative change of a metric's mean below which a significant difference still passes")
	f.Float64Var(&o.Level, "level", 0.95, "confidence level (before the correction over metrics)")
	f.IntVar(&o.Resamples, "resamples", 2000, "bootstrap resamples")
	f.Uint64Var(&o.Seed, "seed", 1, "bootstrap seed (same seed, same intervals)")
	f.StringVar(&o.Engine, "engine", "", "engine adapter to use instead of detecting it from the metric names")
	f.BoolVar(&asJSON, "json", false, "print the judgement as JSON")
	return cmd
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, errors.New("want RFC 3339 (2026-01-02T15:04:05Z) or Unix seconds")
	}
	return time.UnixMilli(int64(f * 1000)), nil
}
