package canary_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

var liveStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pages renders a scrapetest engine as Prometheus would return it: one sample per step
// for secs seconds (plus one step before the window), from instance inst.
func pages(t *testing.T, sc scrapetest.Scenario, inst string, secs int) []scrape.Sample {
	t.Helper()
	var out []scrape.Sample
	for s := -1; s <= secs; s++ {
		fams, err := scrape.ParsePage(strings.NewReader(sc.PageAt(float64(s+100), 0)), "text/plain; version=0.0.4")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scrape.Sample{T: liveStart.Add(time.Duration(s) * time.Second), Endpoint: "prom:" + inst, Kind: scrape.KindEngine,
			Origin: scrape.OriginPrometheus, OK: true, Families: fams})
	}
	return out
}

func TestLive(t *testing.T) {
	healthy2 := scrapetest.Healthy()
	healthy2.Engines = 2
	cases := []struct {
		name   string
		cand   scrapetest.Scenario
		secs   int
		want   compare.Verdict
		golden string
		check  func(t *testing.T, r *canary.LiveResult)
	}{{
		name: "identical", cand: healthy2, secs: 60, want: compare.Accept, golden: "live-identical",
		check: func(t *testing.T, r *canary.LiveResult) {
			if r.Score != 100 || r.Baseline.Replicas != 2 || r.Candidate.Intervals != 12 {
				t.Errorf("score %v, replicas %d, intervals %d", r.Score, r.Baseline.Replicas, r.Candidate.Intervals)
			}
		},
	}, {
		name: "kv thrash", cand: scrapetest.KVThrash(), secs: 60, want: compare.Reject, golden: "live-kv-thrash",
		check: func(t *testing.T, r *canary.LiveResult) {
			failed := false
			for _, c := range r.Triggers {
				if c.Signal == evidence.SigServerTTFTP99 && c.Status == compare.StatusFail {
					failed = true
				}
			}
			if !failed {
				t.Errorf("TTFT p99 trigger not breached: %+v", r.Triggers)
			}
			for _, m := range r.Metrics {
				if m.Name == "preemptions per 1k tokens" && !m.Worse {
					t.Errorf("preemptions where there were none not worse: %+v", m)
				}
				if m.Group == "throughput" && m.Worse {
					t.Errorf("throughput judged: %+v", m)
				}
			}
		},
	}, {
		name: "too short", cand: healthy2, secs: 20, want: compare.Inconclusive,
		check: func(t *testing.T, r *canary.LiveResult) {
			if !strings.Contains(r.Reasons[0], "too few intervals") {
				t.Errorf("reasons %q", r.Reasons)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := pages(t, healthy2, "10.0.0.1:8000", c.secs)
			cand := pages(t, c.cand, "10.0.0.2:8000", c.secs)
			r, err := canary.Live(base, cand, `track="stable"`, `track="canary"`, canary.LiveOptions{Start: liveStart, End: liveStart.Add(time.Duration(c.secs) * time.Second), Interval: 5 * time.Second, Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != c.want {
				t.Errorf("verdict %s, want %s: %q", r.Verdict, c.want, r.Reasons)
			}
			c.check(t, r)
			if c.golden == "" {
				return
			}
			var buf bytes.Buffer
			if err := report.LiveText(&buf, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", c.golden+".golden"), buf.Bytes())
		})
	}
	if _, err := canary.Live(nil, nil, "a", "b", canary.LiveOptions{Start: liveStart, End: liveStart.Add(time.Minute)}); err == nil {
		t.Error("no series: want an error naming the selector")
	}
}

// TestLiveTriggerOnWindowQuantile: twins serving 20 requests a second, all with a TTFT in
// vLLM's (20, 40] ms bucket, read in 18 intervals of 1 s; the candidate also serves k slower
// requests. The baseline's derived TTFT p99 bound is its largest bucket's bound, 40 ms (360
// values cannot bound a p99 from above), plus 10%, up to the next bucket bound: 60 ms, the
// first value past which "p99 over it" is a count the histogram holds. The expectations
// follow from what a p99 is over the candidate's 360 + k requests:
//   - one 200 ms request is within the 1% a p99 leaves out (its interval's p99, the maximum
//     of 21, moves a mean of interval p99s past the bound);
//   - seven at 50 ms (1.9%) put the p99 in (40, 60]: past 44 ms only by interpolation inside
//     the bucket (a bound between bucket bounds would judge the interpolation);
//   - five at 200 ms (1.4%) put the p99 in the slow bucket, but order statistic 352, the
//     interval's lower end, is still fast: sampling alone can do that, so the verdict waits;
//   - eleven at 200 ms (3%) leave no doubt.
func TestLiveTriggerOnWindowQuantile(t *testing.T) {
	twin := func(slow int, v float64) scrapetest.Scenario {
		s := scrapetest.Healthy()
		s.ReqRate, s.TTFT = 20, []scrapetest.Obs{{V: 0.03, W: 1}}
		for i := 0; i < slow; i++ {
			s.SlowTTFT = append(s.SlowTTFT, scrapetest.Single{At: 100.5 + float64(i*17/slow), V: v})
		}
		return s
	}
	cases := []struct {
		slow   int
		ttft   float64
		status string
		want   compare.Verdict
	}{
		{slow: 1, ttft: 0.2, status: compare.StatusUncertain, want: compare.Accept},
		{slow: 7, ttft: 0.05, status: compare.StatusUncertain, want: compare.Accept},
		{slow: 5, ttft: 0.2, status: compare.StatusUncertain, want: compare.Inconclusive},
		{slow: 11, ttft: 0.2, status: compare.StatusFail, want: compare.Reject},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d at %v s", c.slow, c.ttft), func(t *testing.T) {
			base := pages(t, twin(0, 0), "10.0.0.1:8000", 18)
			cand := pages(t, twin(c.slow, c.ttft), "10.0.0.2:8000", 18)
			r, err := canary.Live(base, cand, "base", "cand", canary.LiveOptions{Start: liveStart, End: liveStart.Add(18 * time.Second), Interval: time.Second, Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			var ttft *compare.Check
			for i := range r.Triggers {
				if r.Triggers[i].Signal == evidence.SigServerTTFTP99 {
					ttft = &r.Triggers[i]
				}
			}
			if ttft == nil {
				t.Fatalf("no TTFT p99 trigger: %+v", r.Triggers)
			}
			if ttft.Bound != 60 || ttft.Values != 360+c.slow {
				t.Errorf("bound %v over %d values, want 60 (40 ms + 10%%, up to a bucket bound) over %d", ttft.Bound, ttft.Values, 360+c.slow)
			}
			if ttft.Status != c.status || r.Verdict != c.want {
				var buf bytes.Buffer
				report.LiveText(&buf, r)
				t.Errorf("trigger %s, verdict %s; want %s, %s:\n%s", ttft.Status, r.Verdict, c.status, c.want, buf.String())
			}
		})
	}
}
