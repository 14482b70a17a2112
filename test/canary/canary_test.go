// Package canary_test checks the interleaved canary end to end through the pel binary against
// pel sim processes: an interleaved run of healthy vs kv-thrash stops early with the trigger
// named and pel compare rejects; two healthy twins run to the end and pel compare accepts.
//
// pel is built without -race whatever this test binary is (as test/shard does): the sides
// of an A/A run must be alike, and the race detector slows processes several times over and
// unevenly; the figures judged are pel's own.
package canary_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/internal/pelbin"
)

var pelBin string

func TestMain(m *testing.M) { pelbin.Main(m, "canary", &pelBin) }

// pel runs the binary and returns its exit code and its output (stdout and stderr).
func pel(ctx context.Context, t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, out, err := pelbin.Run(ctx, pelBin, args...)
	if err != nil {
		t.Fatalf("pel %v: %v", args, err)
	}
	return code, out
}

// startSim runs pel sim on loopback until the test ends.
func startSim(t *testing.T, scenario string, speed int) string {
	t.Helper()
	return pelbin.StartSim(t, pelBin, "--scenario", scenario, "--speed", fmt.Sprint(speed))
}

// thrashContract: long answers at a rate the healthy H100 serves easily and kv-thrash's
// 24k-token cache cannot hold at half the share (about 25 sequences of ~1.3k tokens). Its
// sims run at twice real time, so the rate is twice the load the engines see.
const thrashContract = `name: canary-long
version: 1
arrival: {process: poisson, rate: 20}
requests: 160
warmup: 1s
tasks:
  - name: answer
    prompt_tokens: {dist: uniform, min: 600, max: 1000}
    output_tokens: {dist: fixed, value: 512}
    ignore_eos: true
slo:
  ttft: {p99: 2s}
canary: {share: 0.5}
`

// twinContract: identical tasks at constant arrivals, in real time (an observed latency of
// a few hundred ms, so a test machine's scheduling hiccups stay small beside it). The run
// derives its own p99 triggers after 368 warm baseline tasks; pel compare passes a p99
// trigger only when the candidate's 95% upper bound, its sample's largest values at this
// size, is under it.
const twinContract = `name: canary-twin
version: 1
arrival: {process: constant, rate: 50}
duration: 24s
warmup: 1s
tasks:
  - name: chat
    prompt_tokens: {dist: fixed, value: 1024}
    output_tokens: {dist: fixed, value: 32}
    ignore_eos: true
slo:
  ttft: {p99: 1s}
canary: {share: 0.5}
`

func TestInterleavedCanaryAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four pel sim processes and three pel runs (about 50 s)")
	}
	// The twins are judged on their tails: a suite loading the machine beside them slows
	// one side's processes more than the other's, so CI runs this alone first.
	if os.Getenv("PEL_CANARY_RAN") != "" {
		t.Skip("PEL_CANARY_RAN is set: this ran alone earlier in this CI run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	healthy, thrash := startSim(t, "healthy", 2), startSim(t, "kv-thrash", 2)
	healthy1, twin := startSim(t, "healthy", 1), startSim(t, "healthy", 1)
	tmp := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(src), 0o600)
		return p
	}
	long, short := write("long.yaml", thrashContract), write("short.yaml", twinContract)

	// The rollback triggers come from a baseline run of the same contract: fixed before
	// the canary starts, so the early stop can act from the candidate's first warm tasks.
	base := filepath.Join(tmp, "base")
	if code, out := pel(ctx, t, "run", "--target", healthy, "--contract", long, "-o", base); code != 0 {
		t.Fatalf("baseline run: exit %d: %s", code, out)
	}
	k := filepath.Join(tmp, "thrash")
	code, out := pel(ctx, t, "run", "--target", healthy, "--canary", thrash, "--canary-metrics", thrash+"/metrics",
		"--metrics", healthy+"/metrics", "--rollback-from", base, "--contract", long, "-o", k)
	if code != 0 {
		t.Fatalf("canary run: exit %d: %s", code, out)
	}
	t.Logf("healthy vs kv-thrash:\n%s", out[strings.Index(out, "canary:"):])
	l, err := canary.ReadFile(filepath.Join(k, canary.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if l.Stop == nil || l.Stop.Kind != canary.StopTrigger || l.Stop.Signal == "" || !strings.Contains(out, "STOPPED at") {
		t.Fatalf("healthy vs kv-thrash did not stop early on a trigger: %+v", l.Stop)
	}
	// The stop ended the run's schedule: the run is partial, and its verdict says so first.
	if b, err := os.ReadFile(filepath.Join(k, "evidence.json")); err != nil || !strings.Contains(string(b), `"kind": "stopped_early"`) || !strings.Contains(string(b), `"verdict": "PARTIAL RUN (stopped early: `) {
		t.Errorf("evidence.json of a canary stopped early does not say the run is partial (%v)", err)
	}
	if l.Arrivals >= 160 {
		t.Errorf("the run went on after the stop: %d arrivals, %d to the candidate", l.Arrivals, l.CanaryTasks)
	}
	for _, f := range []string{canary.MetricsFile, canary.EvidenceFile, "metrics.jsonl", "evidence.json"} {
		if _, err := os.Stat(filepath.Join(k, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, out = pel(ctx, t, "compare", k)
	if code != 1 || !strings.Contains(out, "verdict: REJECT") || !strings.Contains(out, "early stop: rollback trigger "+l.Stop.Signal) {
		t.Errorf("pel compare of healthy vs kv-thrash: exit %d\n%s", code, out)
	}
	if code, out := pel(ctx, t, "report", k); code != 0 || !strings.Contains(out, "STOPPED at") {
		t.Errorf("pel report of healthy vs kv-thrash does not say when and why it stopped: exit %d\n%s", code, out)
	}

	aa := filepath.Join(tmp, "twins")
	code, out = pel(ctx, t, "run", "--target", healthy1, "--canary", twin, "--contract", short, "-o", aa)
	if code != 0 {
		t.Fatalf("twin run: exit %d: %s", code, out)
	}
	t.Logf("healthy vs healthy:\n%s", out[strings.Index(out, "canary:"):])
	if l, err := canary.ReadFile(filepath.Join(aa, canary.LogFile)); err != nil || l.Stop != nil || !l.Frozen {
		t.Fatalf("identical twins: stop %+v, triggers derived %v (%v)", l.Stop, l.Frozen, err)
	}
	code, out = pel(ctx, t, "compare", aa)
	if code != 0 || !strings.Contains(out, "verdict: ACCEPT") {
		t.Errorf("pel compare of identical twins: exit %d\n%s", code, out)
	}
}
