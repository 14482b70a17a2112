package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/sim"
)

// canaryThrash: long answers that kv-thrash's 24k-token cache cannot hold at half the
// share (its sims run at twice real time: the engines see 10 arrivals/s). The early stop is
// off so that both sides serve the whole window pel canary reads.
const canaryThrash = `name: canary-long
version: 1
arrival: {process: poisson, rate: 20}
duration: 20s
warmup: 1s
tasks:
  - name: answer
    prompt_tokens: {dist: uniform, min: 600, max: 1000}
    output_tokens: {dist: fixed, value: 512}
    ignore_eos: true
slo:
  ttft: {p99: 2s}
canary: {share: 0.5, early_stop: false}
`

// canaryTwins: identical short tasks for two healthy twins, in real time.
const canaryTwins = `name: canary-twins
version: 1
arrival: {process: constant, rate: 40}
duration: 20s
warmup: 1s
tasks:
  - name: chat
    prompt_tokens: {dist: fixed, value: 1024}
    output_tokens: {dist: fixed, value: 32}
    ignore_eos: true
canary: {share: 0.5}
`

func simAt(t *testing.T, scenario string, speed float64) *sim.Server {
	t.Helper()
	sc, err := sim.LoadScenario(scenario)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.NewServer(sc, sim.Options{Speed: speed, Seed: 1, Hostname: scenario})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// interleavedRun drives an interleaved canary run (pel run --canary) and diagnoses it as
// pel run does; it returns the run directory and the compared window.
func interleavedRun(t *testing.T, dir, src string, base, cand *sim.Server) (string, time.Time, time.Time) {
	t.Helper()
	c, err := contract.Parse([]byte(src), filepath.Join(dir, "c.yaml"))
	if err != nil {
		t.Error(err)
		return "", time.Time{}, time.Time{}
	}
	out := filepath.Join(dir, "run")
	if _, err := runner.Run(context.Background(), runner.Config{Target: base.URL(), Contract: c, OutDir: out,
		Canary: &runner.Canary{Target: cand.URL()}}); err != nil {
		t.Error(err)
		return "", time.Time{}, time.Time{}
	}
	if ev, _, err := ladder.Analyze(out, ladder.Options{}); err != nil {
		t.Error(err)
	} else if err := ladder.WriteRun(out, ev); err != nil {
		t.Error(err)
	}
	l, err := canary.ReadFile(filepath.Join(out, canary.LogFile))
	if err != nil {
		t.Error(err)
		return "", time.Time{}, time.Time{}
	}
	// The window pel canary reads: past the warm-up, up to the last arrival.
	return out, l.StartedAt.Add(c.Warmup + time.Second), l.StartedAt.Add(c.Duration)
}

// TestCanaryThroughPrometheus: a real Prometheus scrapes four pel sim instances, two
// pairs driven by interleaved canary runs at once: healthy vs kv-thrash, and two healthy
// twins. pel canary (scrape.QueryRange per selector, compare.Live) reads each pair from
// Prometheus alone and rejects kv-thrash and accepts the twin, as pel compare of the
// interleaved runs does (healthy vs kv-thrash here; both pairs, early stop included, in
// test/canary's TestInterleavedCanaryAgainstSim).
func TestCanaryThroughPrometheus(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	if testing.Short() {
		t.Skip("starts a Prometheus server and four pel sim instances (about 30 s)")
	}
	h1, k := simAt(t, "healthy", 2), simAt(t, "kv-thrash", 2)
	h2, h3 := simAt(t, "healthy", 1), simAt(t, "healthy", 1)
	promURL := startPrometheus(t, bin, t.TempDir(), hostPort(h1.URL()), hostPort(k.URL()), hostPort(h2.URL()), hostPort(h3.URL()))

	type pair struct {
		name         string
		src          string
		base, cand   *sim.Server
		dir          string
		start, end   time.Time
		want, wantPC compare.Verdict // pel canary's, pel compare's ("" not checked here)
	}
	pairs := []*pair{
		{name: "healthy vs kv-thrash", src: canaryThrash, base: h1, cand: k, want: compare.Reject, wantPC: compare.Reject},
		{name: "healthy twins", src: canaryTwins, base: h2, cand: h3, want: compare.Accept},
	}
	var wg sync.WaitGroup
	for _, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.dir, p.start, p.end = interleavedRun(t, t.TempDir(), p.src, p.base, p.cand)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	last := pairs[0].end
	for _, p := range pairs {
		if p.end.After(last) {
			last = p.end
		}
	}
	poll(t, 100, interval/2, "Prometheus scraping past the runs", func() bool { return promLatest(t, promURL).After(last.Add(interval)) })

	for _, p := range pairs {
		sel := func(s *sim.Server) string { return fmt.Sprintf(`instance=%q`, hostPort(s.URL())) }
		step := interval
		base, err := scrape.QueryRange(context.Background(), nil, promURL, sel(p.base), p.start.Add(-step), p.end, step)
		if err != nil {
			t.Fatal(err)
		}
		cand, err := scrape.QueryRange(context.Background(), nil, promURL, sel(p.cand), p.start.Add(-step), p.end, step)
		if err != nil {
			t.Fatal(err)
		}
		r, err := compare.Live(base, cand, sel(p.base), sel(p.cand), compare.LiveOptions{Start: p.start, End: p.end, Interval: time.Second, Resamples: 500})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var buf textBuf
		compare.LiveText(&buf, r)
		t.Logf("%s, through Prometheus:\n%s", p.name, buf)
		if r.Verdict != p.want {
			t.Errorf("%s: pel canary says %s, want %s: %q", p.name, r.Verdict, p.want, r.Reasons)
		}
		if p.wantPC != "" {
			cr, err := compare.CanaryDir(p.dir, compare.Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			if cr.Verdict != p.wantPC {
				t.Errorf("%s: pel compare of the interleaved run says %s, want %s: %q", p.name, cr.Verdict, p.wantPC, cr.Reasons)
			}
		}
	}
}

type textBuf struct{ b []byte }

func (w *textBuf) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w textBuf) String() string               { return string(w.b) }

// promLatest is the newest sample time Prometheus holds for the test job.
func promLatest(t *testing.T, promURL string) time.Time {
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(`max(timestamp(up{job="pel-target"}))`))
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) == 0 {
		return time.Time{}
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(f * 1000))
}
