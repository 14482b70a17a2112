package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
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
		want   Verdict
		golden string
		check  func(t *testing.T, r *LiveResult)
	}{{
		name: "identical", cand: healthy2, secs: 60, want: Accept, golden: "live-identical",
		check: func(t *testing.T, r *LiveResult) {
			if r.Score != 100 || r.Baseline.Replicas != 2 || r.Candidate.Intervals != 12 {
				t.Errorf("score %v, replicas %d, intervals %d", r.Score, r.Baseline.Replicas, r.Candidate.Intervals)
			}
		},
	}, {
		name: "kv thrash", cand: scrapetest.KVThrash(), secs: 60, want: Reject, golden: "live-kv-thrash",
		check: func(t *testing.T, r *LiveResult) {
			failed := false
			for _, c := range r.Triggers {
				if c.Signal == evidence.SigServerTTFTP99 && c.Status == StatusFail {
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
		name: "too short", cand: healthy2, secs: 20, want: Inconclusive,
		check: func(t *testing.T, r *LiveResult) {
			if !strings.Contains(r.Reasons[0], "too few intervals") {
				t.Errorf("reasons %q", r.Reasons)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := pages(t, healthy2, "10.0.0.1:8000", c.secs)
			cand := pages(t, c.cand, "10.0.0.2:8000", c.secs)
			r, err := Live(base, cand, `track="stable"`, `track="canary"`, LiveOptions{Start: liveStart, End: liveStart.Add(time.Duration(c.secs) * time.Second), Interval: 5 * time.Second, Resamples: 500})
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
			if err := LiveText(&buf, r); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", c.golden+".golden")
			if *update {
				os.WriteFile(golden, buf.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if buf.String() != string(want) {
				t.Errorf("text differs from %s (rerun with -update if intended):\n%s", golden, buf.String())
			}
		})
	}
	if _, err := Live(nil, nil, "a", "b", LiveOptions{Start: liveStart, End: liveStart.Add(time.Minute)}); err == nil {
		t.Error("no series: want an error naming the selector")
	}
}
