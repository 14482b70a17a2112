// Package prometheus_test runs a real Prometheus server (Debian's `prometheus` package,
// or the binary named by $PEL_PROMETHEUS) scraping a vLLM-V1-shaped target and a
// DCGM-shaped target, and checks that pel's Prometheus path (query_range over the run
// window) and its direct-scrape path give the same signals within the documented error.
//
// CI: apt-get update && apt-get install -y prometheus   (the test skips without it)
package prometheus_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape"
	"github.com/pel-ladder/pel/scrape/scrapetest"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// interval is both Prometheus' scrape_interval and pel's sampling interval / step.
const interval = 500 * time.Millisecond

func prometheusBinary(t *testing.T) string {
	if p := os.Getenv("PEL_PROMETHEUS"); p != "" {
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus binary not found: install it (Debian: apt-get install -y prometheus) or set PEL_PROMETHEUS; " +
			"this test compares pel's Prometheus query_range path with direct scraping")
	}
	return p
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// target is a loopback /metrics endpoint.
type target struct {
	url string
}

func serve(t *testing.T, h http.Handler) *target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{url: "http://" + ln.Addr().String() + "/metrics"}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return tg
}

func hostPort(u string) string {
	return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics")
}

// poll calls cond every step, at most n times.
func poll(t *testing.T, n int, step time.Duration, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		if cond() {
			return
		}
		time.Sleep(step)
	}
	t.Fatalf("gave up waiting for %s", what)
}

func TestPrometheusPathMatchesDirect(t *testing.T) {
	t.Parallel() // mostly waiting on timers: run beside the other Prometheus test
	bin := prometheusBinary(t)
	if testing.Short() {
		t.Skip("starts a Prometheus server (about 10 s)")
	}
	// The engine's pages are a function of wall time since it started, so Prometheus and
	// pel, scraping at different instants, read one history.
	began := time.Now()
	sc := scrapetest.KVThrash()
	sc.KVStart, sc.KVSlope = 0.80, 0.01
	eng := &scrapetest.Engine{S: sc, Clock: func() float64 { return time.Since(began).Seconds() }}
	dcgm := scrapetest.DCGM{GPUs: 2, Util: 97, SMActive: 0.45, SMOccupancy: 0.21, TensorActive: 0.12, DRAMActive: 0.83, FBUsedMiB: 71000}
	engT := serve(t, eng)
	dcgmT := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, dcgm.Page())
	}))

	promURL := startPrometheus(t, bin, t.TempDir(), hostPort(engT.url), hostPort(dcgmT.url))

	// 2 endpoints × 11 direct samples: about 5 s of "load".
	evD, evP := bothPaths(t, promURL, []string{engT.url}, []string{dcgmT.url}, 22)
	W := warmWindow(evD)
	si := interval.Seconds()
	hd, hp := headline(evD), headline(evP)
	if len(hd) < 20 {
		t.Fatalf("direct path: only %d signals", len(hd))
	}
	for name, d := range hd {
		p, ok := hp[name]
		if !ok {
			t.Errorf("%s: direct %g, absent from the Prometheus path", name, d.Value)
			continue
		}
		// Documented error of the Prometheus path: each query_range point may be up to one
		// scrape interval old, so each window edge may shift by ≤ si.
		var tol float64
		switch {
		case d.Unit == "1/s" || d.Unit == "tokens/s":
			tol = math.Abs(d.Value) * 2 * si / W // rate × edge shifts / window
		case d.Unit == "count" && name == evidence.SigPreemptions:
			tol = math.Abs(d.Value) * 2 * si / W
		case d.Unit == "ms":
			// Bucket interpolation: both estimates lie in the bucket the note names; the
			// histograms here fill with a fixed distribution, so edge shifts change no ratio.
			if b, ok := noteBucket(d.Note); ok && !strings.Contains(p.Note, b) {
				t.Errorf("%s: buckets differ: direct %q, prometheus %q", name, d.Note, p.Note)
			}
			// A mean's note counts the observations in the window; each edge may shift by
			// one scrape interval, which moves the count by at most what arrives in 2·si.
			if nd, ok := noteCount(d.Note); ok {
				np, _ := noteCount(p.Note)
				if slack := math.Ceil(nd*2*si/W) + 1; math.Abs(nd-np) > slack {
					t.Errorf("%s: observations in the window: direct %g, prometheus %g (more than %g apart)", name, nd, np, slack)
				}
			}
			tol = math.Abs(d.Value) * 1e-3
		case name == evidence.SigKVUsageMean || name == evidence.SigKVUsageMax:
			// A ramp read up to one interval late by Prometheus, and sampled at instants
			// that may each be up to one interval off on a busy machine.
			tol = sc.KVSlope*2*si + 1e-9
		case name == evidence.SigScrapeGaps:
			// Late or failed samples are a property of each path's own sampling (a busy
			// machine delays pel's ticker or Prometheus' scrapes), not of the data.
			t.Logf("%s: direct %g (%s), prometheus %g (%s)", name, d.Value, d.Note, p.Value, p.Note)
			continue
		default:
			tol = 1e-9 + math.Abs(d.Value)*1e-6 // constants: gauges, ratios, counts of replicas
		}
		if diff := math.Abs(d.Value - p.Value); diff > tol {
			t.Errorf("%s: direct %g vs prometheus %g (|Δ| %g > %g)", name, d.Value, p.Value, diff, tol)
		} else {
			t.Logf("%-34s direct %-12g prometheus %-12g |Δ| %.3g (bound %.3g)", name, d.Value, p.Value, diff, tol)
		}
	}
	for name := range hp {
		if _, ok := hd[name]; !ok {
			t.Errorf("%s only on the Prometheus path", name)
		}
	}
	if s, ok := evP.Signal(evidence.SigKVUsageMean); !ok || s.Value < 0.8 {
		t.Errorf("prometheus path kv usage %+v", s)
	}
	if s, ok := evP.Signal(evidence.SigPreemptionRate); !ok || s.Value <= 0 {
		t.Errorf("prometheus path preemption rate %+v", s)
	}
	srcs := strings.Join(evP.Stage(evidence.StageServingCache).Sources, " ")
	if !strings.Contains(srcs, "via Prometheus") {
		t.Errorf("stage 4 sources %q", srcs)
	}
}

// startPrometheus runs Prometheus scraping targets (host:port, job "pel-target") every
// interval and returns its URL once every target has been scraped at least twice.
func startPrometheus(t *testing.T, bin, dir string, targets ...string) string {
	t.Helper()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = "'" + tg + "'"
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: 400ms
  evaluation_interval: 10s
scrape_configs:
  - job_name: pel-target
    static_configs:
      - targets: [%s]
`, interval, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	promURL := "http://" + promAddr
	poll(t, 300, 50*time.Millisecond, "prometheus /-/ready", func() bool {
		resp, err := http.Get(promURL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	want := fmt.Sprintf(`"%d"]`, len(targets))
	poll(t, 300, 50*time.Millisecond, "first scrapes", func() bool {
		resp, err := http.Get(promURL + `/api/v1/query?query=count(count_over_time(up{job="pel-target"}[1m])>=2)`)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), want)
	})
	return promURL
}

// bothPaths samples directly (engine and DCGM URLs) and through Prometheus at once,
// until the direct path has written minLines samples (checked every interval/5, at most
// 600 times), and returns the two evidences filled over a "warm" phase that sits inside
// both paths' samples.
func bothPaths(t *testing.T, promURL string, engine, dcgm []string, minLines int) (evD, evP *evidence.Evidence) {
	t.Helper()
	dir := t.TempDir()
	direct, err := scrape.NewCollector(scrape.Config{Engine: engine, DCGM: dcgm, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	viaProm, err := scrape.NewCollector(scrape.Config{Prometheus: promURL, Selector: `job="pel-target"`, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	startedAt := time.Now()
	dDir, pDir := filepath.Join(dir, "direct"), filepath.Join(dir, "prom")
	for _, d := range []string{dDir, pDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := viaProm.Start(ctx, &rundir.Dir{Path: pDir}); err != nil {
		t.Fatal(err)
	}
	if err := direct.Start(ctx, &rundir.Dir{Path: dDir}); err != nil {
		t.Fatal(err)
	}
	poll(t, 600, interval/5, "direct samples", func() bool {
		b, _ := os.ReadFile(filepath.Join(dDir, rundir.MetricsFile))
		return bytes.Count(b, []byte("\n")) >= minLines
	})
	if err := direct.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	runS := time.Since(startedAt).Seconds()
	if err := viaProm.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	warm := evidence.Phase{Name: "warm", StartS: 1, EndS: runS - 1}
	fill := func(c *scrape.Collector, d string) *evidence.Evidence {
		ev := evidence.New()
		ev.Run.StartedAt = startedAt
		ev.Run.Phases = []evidence.Phase{warm}
		if err := c.Fill(ev, &rundir.Dir{Path: d}); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	return fill(direct, dDir), fill(viaProm, pDir)
}

// headline returns the unlabelled warm signals by name.
func headline(ev *evidence.Evidence) map[string]evidence.Signal {
	out := map[string]evidence.Signal{}
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			if s.Phase == "warm" && s.Labels == nil {
				out[s.Name] = s
			}
		}
	}
	return out
}

func warmWindow(ev *evidence.Evidence) float64 {
	for _, p := range ev.Run.Phases {
		if p.Name == "warm" {
			return p.EndS - p.StartS
		}
	}
	return 0
}

// noteBucket returns the "[lo, hi] ms" bucket a percentile's note names, if it names one.
func noteBucket(note string) (string, bool) {
	i := strings.LastIndex(note, "[")
	j := strings.LastIndex(note, "] ms")
	if i < 0 || j < i {
		return "", false
	}
	return note[i : j+4], true
}

// noteCount returns the "n=K" observation count a mean's note carries, if it carries one.
func noteCount(note string) (float64, bool) {
	i := strings.LastIndex(note, "n=")
	if i < 0 {
		return 0, false
	}
	var n float64
	if _, err := fmt.Sscanf(note[i:], "n=%g", &n); err != nil {
		return 0, false
	}
	return n, true
}

// TestPrometheusScrapesSim: a real Prometheus scrapes pel sim (kv-thrash) under a closed
// loop of requests; read through Prometheus, stage 4 shows KV usage near 1 and
// preemptions, and the token and preemption rates agree with direct scraping within the
// documented bound (the load makes them near-linear; gauges and tails are logged only:
// the two paths sample a noisy process at different instants).
func TestPrometheusScrapesSim(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	if testing.Short() {
		t.Skip("starts a Prometheus server and pel sim (about 10 s)")
	}
	srv := simtest.Start(t, "kv-thrash", sim.Options{Speed: 20, Seed: 1, Hostname: "sim"}, false)
	promURL := startPrometheus(t, bin, t.TempDir(), hostPort(srv.URL()+"/metrics"))
	load := &scrapetest.Load{BaseURL: srv.URL(), Concurrency: 64, PromptLen: 600, MaxTokens: 512}
	if err := load.Start(0); err != nil {
		t.Fatal(err)
	}
	evD, evP := bothPaths(t, promURL, []string{srv.URL() + "/metrics"}, nil, 12)
	if err := load.Stop(); err != nil {
		t.Fatal(err)
	}
	hd, hp := headline(evD), headline(evP)
	if s, ok := hp[evidence.SigKVUsageMax]; !ok || s.Value < 0.9 {
		t.Errorf("via Prometheus: kv usage max %+v, want near 1", s)
	}
	if s, ok := hp[evidence.SigPreemptionRate]; !ok || s.Value <= 0 {
		t.Errorf("via Prometheus: preemptions/s %+v, want > 0", s)
	}
	W, si := warmWindow(evD), interval.Seconds()
	for name, d := range hd {
		p, ok := hp[name]
		if !ok {
			t.Errorf("%s: direct %g, absent from the Prometheus path", name, d.Value)
			continue
		}
		diff := math.Abs(d.Value - p.Value)
		if d.Unit == "1/s" || d.Unit == "tokens/s" {
			tol := math.Abs(d.Value) * 2 * si / W
			if diff > tol {
				t.Errorf("%s: direct %g vs prometheus %g (|Δ| %g > %g)", name, d.Value, p.Value, diff, tol)
			}
		}
		t.Logf("%-34s direct %-12g prometheus %-12g", name, d.Value, p.Value)
	}
}
