package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/sim"
)

func TestCanaryUsage(t *testing.T) {
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	plain := filepath.Join(tmp, "plain")
	os.Mkdir(plain, 0o700)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary-share", "0.2"}, "need --canary URL"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary", "http://127.0.0.1:2", "--canary-share", "1.5"}, "--canary-share 1.5"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary", "http://127.0.0.1:2", "--rollback-from", plain}, "--rollback-from"},
		{[]string{"canary", "--prometheus", "http://127.0.0.1:1"}, "canary needs --prometheus URL, --baseline SELECTOR and --candidate SELECTOR"},
		{[]string{"canary", "--prometheus", "http://127.0.0.1:1", "--baseline", "a", "--candidate", "b", "--end", "yesterday"}, `--end "yesterday"`},
		{[]string{"compare", plain}, "not an interleaved canary run"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
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

func startSim(t *testing.T, scenario string, speed float64) string {
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
	return srv.URL()
}

// TestInterleavedCanaryAgainstSim is issue 16's own check, end to end through the command
// line against pel sim: healthy vs kv-thrash stops early with the trigger named and pel
// compare rejects; two healthy twins run to the end and pel compare accepts.
func TestInterleavedCanaryAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("drives four pel sim instances for three runs (about 50 s)")
	}
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
	if code, _, errs := runCLI(t, "run", "--target", healthy, "--contract", long, "-o", base); code != 0 {
		t.Fatalf("baseline run: exit %d: %s", code, errs)
	}
	k := filepath.Join(tmp, "thrash")
	code, out, errs := runCLI(t, "run", "--target", healthy, "--canary", thrash, "--canary-metrics", thrash+"/metrics",
		"--metrics", healthy+"/metrics", "--rollback-from", base, "--contract", long, "-o", k)
	if code != 0 {
		t.Fatalf("canary run: exit %d: %s", code, errs)
	}
	t.Logf("healthy vs kv-thrash:\n%s", out[strings.Index(out, "canary:"):])
	l, err := canary.ReadFile(filepath.Join(k, canary.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if l.Stop == nil || l.Stop.Kind != canary.StopTrigger || l.Stop.Signal == "" || !strings.Contains(out, "STOPPED at") {
		t.Fatalf("healthy vs kv-thrash did not stop early on a trigger: %+v", l.Stop)
	}
	if l.Arrivals >= 160 {
		t.Errorf("the run went on after the stop: %d arrivals, %d to the candidate", l.Arrivals, l.CanaryTasks)
	}
	for _, f := range []string{canary.MetricsFile, canary.EvidenceFile, "metrics.jsonl", "evidence.json"} {
		if _, err := os.Stat(filepath.Join(k, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, out, _ = runCLI(t, "compare", k)
	if code != 1 || !strings.Contains(out, "verdict: REJECT") || !strings.Contains(out, "early stop: rollback trigger "+l.Stop.Signal) {
		t.Errorf("pel compare of healthy vs kv-thrash: exit %d\n%s", code, out)
	}

	aa := filepath.Join(tmp, "twins")
	code, out, errs = runCLI(t, "run", "--target", healthy1, "--canary", twin, "--contract", short, "-o", aa)
	if code != 0 {
		t.Fatalf("twin run: exit %d: %s", code, errs)
	}
	t.Logf("healthy vs healthy:\n%s", out[strings.Index(out, "canary:"):])
	if l, err := canary.ReadFile(filepath.Join(aa, canary.LogFile)); err != nil || l.Stop != nil || !l.Frozen {
		t.Fatalf("identical twins: stop %+v, triggers derived %v (%v)", l.Stop, l.Frozen, err)
	}
	code, out, _ = runCLI(t, "compare", aa)
	if code != 0 || !strings.Contains(out, "verdict: ACCEPT") {
		t.Errorf("pel compare of identical twins: exit %d\n%s", code, out)
	}
}
