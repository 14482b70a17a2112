package scrape

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// server serves e on a loopback port; model time advances one second per page served,
// so the page sequence depends on event counts only.
type server struct {
	e     *scrapetest.Engine
	pages atomic.Int64
	url   string
}

func serve(t *testing.T, s scrapetest.Scenario) *server {
	t.Helper()
	sv := &server{}
	sv.e = &scrapetest.Engine{S: s, Clock: func() float64 { return float64(sv.pages.Load()) }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sv.e.ServeHTTP(w, r)
		sv.pages.Add(1)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() {
		sv.e.Revive()
		hs.Close()
	})
	sv.url = "http://" + ln.Addr().String() + "/metrics"
	return sv
}

// waitFor polls cond every interval, at most n times.
func waitFor(t *testing.T, n int, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		if cond() {
			return
		}
		time.Sleep(interval)
	}
	t.Fatalf("gave up waiting for %s", what)
}

const testInterval = 25 * time.Millisecond

func runCollector(t *testing.T, cfg Config, until func() bool) (*evidence.Evidence, []Sample) {
	t.Helper()
	dir := t.TempDir()
	cfg.Interval = testInterval
	c, err := NewCollector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	started := time.Now()
	if err := c.Start(ctx, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 800, testInterval, "samples", until)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt = started
	if err := c.Fill(ev, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	ss, err := ReadSamples(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	return ev, ss
}

// TestCollectorScenarios: sampled over HTTP, a kv-thrash engine shows KV usage near 1
// and preemptions; a healthy one none. The first sample precedes Start's return.
func TestCollectorScenarios(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       scrapetest.Scenario
		preempt bool
	}{{"kv-thrash", scrapetest.KVThrash(), true}, {"healthy", scrapetest.Healthy(), false}} {
		t.Run(tc.name, func(t *testing.T) {
			sv := serve(t, tc.s)
			ev, ss := runCollector(t, Config{Engine: []string{sv.url}}, func() bool { return sv.pages.Load() >= 8 })
			// The first sample is taken before Start returns. Like every sample it is bounded
			// by a 20 ms timeout, which a loaded -race machine can miss: then it is a recorded
			// timeout, not a success (the same allowance TestEndpointDies makes).
			if ss[0].Endpoint != sv.url || ss[0].Kind != KindEngine || (!ss[0].OK && !strings.Contains(ss[0].Err, "timeout")) {
				t.Fatalf("first sample %+v", ss[0])
			}
			kv := must(t, ev, evidence.SigKVUsageMean)
			pr := must(t, ev, evidence.SigPreemptionRate)
			if tc.preempt && (kv.Value < 0.95 || pr.Value <= 0) {
				t.Errorf("kv-thrash: kv %g preemptions/s %g", kv.Value, pr.Value)
			}
			if !tc.preempt && pr.Value != 0 {
				t.Errorf("healthy: preemptions/s %g", pr.Value)
			}
			if ev.Run.Engine != "vllm" {
				t.Errorf("engine %q", ev.Run.Engine)
			}
		})
	}
}

// TestEndpointDies: one engine hangs mid-run (accepts, never answers) and another is
// dead from the start; the healthy one keeps its rhythm, Start and Stop return (each
// request bounded by the timeout), and the gaps are recorded and reported.
func TestEndpointDies(t *testing.T) {
	good := serve(t, scrapetest.Healthy())
	dying := serve(t, scrapetest.Healthy())
	dead := serve(t, scrapetest.Healthy())
	dead.e.Die()
	var diedAt, servedAlive atomic.Int64
	diedAt.Store(-1)
	var diedTime atomic.Pointer[time.Time]
	ev, ss := runCollector(t, Config{Engine: []string{good.url, dying.url, dead.url}}, func() bool {
		if diedAt.Load() < 0 && dying.pages.Load() >= 3 {
			now := time.Now()
			diedTime.Store(&now)
			dying.e.Die()
			servedAlive.Store(dying.pages.Load())
			diedAt.Store(good.pages.Load())
		}
		return diedAt.Load() >= 0 && good.pages.Load() >= diedAt.Load()+10
	})
	count := map[string][2]int{}
	for _, s := range ss {
		c := count[s.Endpoint]
		if s.OK {
			c[0]++
			if s.Endpoint == dying.url && !s.T.Before(*diedTime.Load()) {
				t.Errorf("dying endpoint answered a request sent %v after it hung", s.T.Sub(*diedTime.Load()))
			}
		} else {
			c[1]++
			if !strings.Contains(s.Err, "timeout") {
				t.Errorf("failure %q, want a timeout", s.Err)
			}
		}
		count[s.Endpoint] = c
	}
	// The healthy endpoint kept being sampled after the other one hung (the until condition
	// above waited for 10 of its pages after the death). Its own requests are bounded by a
	// 20 ms timeout, which a loaded -race machine can miss once in a while, so an odd
	// failure is tolerated; a stall caused by the hung endpoint would fail most of them.
	if c := count[good.url]; c[0] < 12 || 4*c[1] > c[0] {
		t.Errorf("healthy endpoint ok/failed %v", c)
	}
	// The dying endpoint served at least 3 pages before it hung, but the collector may have
	// given up on some of them: a page the server answered can still miss the 20 ms client
	// timeout on a loaded machine (seen under -race on a busy box: "ok/failed [2 13]"), and
	// a request already being served when it hung still completes. So: at least one
	// success, none for a request sent after it hung (checked above), failures after it.
	if c := count[dying.url]; c[0] < 1 || c[1] < 5 {
		t.Errorf("dying endpoint ok/failed %v (it had served %d pages when it hung)", c, servedAlive.Load())
	}
	if c := count[dead.url]; c[0] != 0 || c[1] < 5 {
		t.Errorf("dead endpoint ok/failed %v", c)
	}
	g := must(t, ev, evidence.SigScrapeGaps)
	if g.Value < 10 || !strings.Contains(g.Note, dying.url) || !strings.Contains(g.Note, dead.url) {
		t.Errorf("gaps %g note %q", g.Value, g.Note)
	}
	notes := strings.Join(ev.Stage(evidence.StageServingCache).Notes, "\n")
	if !strings.Contains(notes, "no successful sample") {
		t.Errorf("notes %q", notes)
	}
	if st := ev.Stage(evidence.StageServingCache).Status; st != evidence.StatusPartial {
		t.Errorf("status %s", st)
	}
}

// TestRestartOverHTTP: the engine restarts mid-run; the rate stays positive and the
// reset is noted.
func TestRestartOverHTTP(t *testing.T) {
	sv := serve(t, scrapetest.Healthy())
	restarted := false
	ev, _ := runCollector(t, Config{Engine: []string{sv.url}}, func() bool {
		if !restarted && sv.pages.Load() >= 5 {
			sv.e.Restart()
			restarted = true
		}
		return sv.pages.Load() >= 10
	})
	if g := must(t, ev, evidence.SigGenTokensRate); g.Value <= 0 {
		t.Errorf("gen rate %g after restart", g.Value)
	}
	if notes := strings.Join(ev.Stage(evidence.StageServingCache).Notes, "\n"); !strings.Contains(notes, "counter reset") {
		t.Errorf("notes %q", notes)
	}
}

func TestNewCollectorErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "nothing to sample"},
		{Config{Engine: []string{"127.0.0.1:8000/metrics"}}, "--metrics"},
		{Config{DCGM: []string{"ftp://x/metrics"}}, "--dcgm"},
		{Config{Engine: []string{"http://x/metrics"}, EngineOverride: "nope"}, "--engine"},
		{Config{Engine: []string{"http://x/metrics"}, Selector: `job="x"`}, "--selector needs --prometheus"},
	} {
		_, err := NewCollector(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
