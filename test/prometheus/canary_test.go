package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/internal/pelbin"
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

var (
	pelOnce sync.Once
	pelBin  string
	pelErr  error
)

// buildPel builds the pel binary once, without -race whatever this test binary is: the two
// sides of an A/A canary must be alike, and the race detector slows processes several times
// over and unevenly.
func buildPel(t *testing.T) string {
	t.Helper()
	pelOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pel-prom-canary-")
		if err != nil {
			pelErr = err
			return
		}
		pelBin = filepath.Join(dir, "pel")
		out, err := exec.Command("go", "build", "-o", pelBin, "github.com/pel-ladder/pel/cmd/pel").CombinedOutput()
		if err != nil {
			pelErr = fmt.Errorf("building pel: %v: %s", err, out)
		}
	})
	if pelErr != nil {
		t.Fatal(pelErr)
	}
	return pelBin
}

// pelCmd runs the pel binary; it returns the exit code and the output.
func pelCmd(ctx context.Context, t *testing.T, args ...string) (int, string) {
	code, out, err := pelbin.Run(ctx, buildPel(t), args...)
	if err != nil {
		t.Errorf("pel %v: %v", args, err)
	}
	return code, out
}

// simProc runs pel sim on loopback until the test ends and returns its address.
func simProc(t *testing.T, scenario string, speed int) string {
	t.Helper()
	return strings.TrimPrefix(pelbin.StartSim(t, buildPel(t), "--scenario", scenario, "--speed", fmt.Sprint(speed)), "http://")
}

// TestCanaryThroughPrometheus: a real Prometheus scrapes four pel sim processes, two pairs
// driven at once by interleaved canary runs (pel run --canary, early stop off so both sides
// serve the whole window): healthy vs kv-thrash, and two healthy twins. pel canary reads each
// pair from Prometheus alone and rejects kv-thrash and accepts the twin, as pel compare of
// the interleaved runs does (healthy vs kv-thrash here; both pairs, early stop included, in
// test/canary's TestInterleavedCanaryAgainstSim).
func TestCanaryThroughPrometheus(t *testing.T) {
	t.Parallel()
	bin := prometheusBinary(t)
	if testing.Short() {
		t.Skip("starts a Prometheus server and four pel sim processes (about 40 s)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h1, k := simProc(t, "healthy", 2), simProc(t, "kv-thrash", 2)
	h2, h3 := simProc(t, "healthy", 1), simProc(t, "healthy", 1)
	promURL := startPrometheus(t, bin, t.TempDir(), h1, k, h2, h3)

	type pair struct {
		name, src, base, cand string
		dir                   string
		start, end            time.Time
		want                  string // pel canary's verdict line
		wantCompare           string // pel compare's ("" not checked here)
	}
	pairs := []*pair{
		{name: "healthy vs kv-thrash", src: canaryThrash, base: h1, cand: k, want: "verdict: REJECT", wantCompare: "verdict: REJECT"},
		{name: "healthy twins", src: canaryTwins, base: h2, cand: h3, want: "verdict: ACCEPT"},
	}
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tmp := t.TempDir()
			cf := filepath.Join(tmp, "c.yaml")
			os.WriteFile(cf, []byte(p.src), 0o600)
			p.dir = filepath.Join(tmp, fmt.Sprint("run", i))
			if code, out := pelCmd(ctx, t, "run", "--target", "http://"+p.base, "--canary", "http://"+p.cand, "--contract", cf, "-o", p.dir); code != 0 {
				t.Errorf("%s: pel run: exit %d: %s", p.name, code, out)
				return
			}
			l, err := canary.ReadFile(filepath.Join(p.dir, canary.LogFile))
			if err != nil {
				t.Error(err)
				return
			}
			// The window pel canary reads: past the warm-up, up to the last arrival.
			p.start, p.end = l.StartedAt.Add(time.Duration(l.WarmupS*float64(time.Second))+time.Second), l.StartedAt.Add(20*time.Second)
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
		code, out := pelCmd(ctx, t, "canary", "--prometheus", promURL, "--baseline", fmt.Sprintf("instance=%q", p.base), "--candidate", fmt.Sprintf("instance=%q", p.cand),
			"--window", p.end.Sub(p.start).String(), "--end", p.end.UTC().Format(time.RFC3339Nano), "--interval", "1s", "--step", interval.String(), "--resamples", "500")
		t.Logf("%s, pel canary through Prometheus (exit %d):\n%s", p.name, code, out)
		if !strings.Contains(out, p.want) || (code == 0) != (p.want == "verdict: ACCEPT") {
			t.Errorf("%s: pel canary exit %d, want %q", p.name, code, p.want)
		}
		if p.wantCompare != "" {
			code, out := pelCmd(ctx, t, "compare", p.dir)
			if !strings.Contains(out, p.wantCompare) || code != 1 {
				t.Errorf("%s: pel compare of the interleaved run: exit %d, want %q:\n%s", p.name, code, p.wantCompare, out)
			}
		}
	}
}

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
