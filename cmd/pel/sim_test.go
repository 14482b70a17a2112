package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

func runPel(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestSimList(t *testing.T) {
	out, _, err := runPel(t, context.Background(), "sim", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kv-thrash", "memory", "tp-comm", "parallelism", "healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list output lacks %q:\n%s", want, out)
		}
	}
	// The columns line up whatever the names' lengths: the owner layer starts at one offset.
	col := -1
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.Index(l, "  ")
		j := i + len(l[i:]) - len(strings.TrimLeft(l[i:], " "))
		if col < 0 {
			col = j
		}
		if i < 0 || j != col {
			t.Errorf("--list line %q: second column at %d, want %d", l, j, col)
		}
	}
	out, _, err = runPel(t, context.Background(), "sim", "--scenario", "kv-thrash", "--contract")
	if err != nil || !strings.Contains(out, "name: kv-thrash-long-answers") {
		t.Errorf("--contract: %v\n%s", err, out)
	}
}

func TestSimBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--scenario", "no-such-scenario"},
		{"sim", "--addr", "0.0.0.0:8000"},
		{"sim", "--addr", "not-an-address"},
		{"sim", "--dcgm-addr", "10.0.0.1:9400"},
		{"sim", "--speed", "5000", "--addr", "127.0.0.1:0"},
		{"sim", "--speed", "-1", "--addr", "127.0.0.1:0"},
		{"sim", "--otlp-endpoint", "localhost:4318", "--addr", "127.0.0.1:0"},
	} {
		_, _, err := runPel(t, context.Background(), args...)
		var ee *exitErr
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: error %v, want exit 2", args, err)
		}
	}
}

func TestSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, stderr, err := runPel(t, ctx, "sim", "--addr", "127.0.0.1:0", "--dcgm-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "serving llama-3-8b on http://127.0.0.1:") || !strings.Contains(stderr, "DCGM exporter page") {
		t.Errorf("startup message: %s", stderr)
	}
}

// TestRunAgainstSim is the outside-in path a user takes: `pel run --metrics` against pel
// sim. kv-thrash must show KV usage near 1 and a positive preemption rate in stage 4 of
// evidence.json; healthy under a light load, zero preemptions. Runs are bounded by request
// counts, not durations.
func TestRunAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim with pel run")
	}
	run := func(t *testing.T, scenario string, speed float64, concurrency, requests, outTokens int) *evidence.Evidence {
		srv := simtest.Start(t, scenario, sim.Options{Speed: speed, Seed: 1, Hostname: "sim"}, false)
		tmp := t.TempDir()
		cf := filepath.Join(tmp, "c.yaml")
		contract := fmt.Sprintf(`name: sim-%s
version: 1
api: chat
arrival: {process: closed, concurrency: %d}
requests: %d
tasks:
  - name: answer
    prompt_tokens: {dist: uniform, min: 400, max: 800}
    output_tokens: {dist: fixed, value: %d}
    ignore_eos: true
`, scenario, concurrency, requests, outTokens)
		os.WriteFile(cf, []byte(contract), 0o600)
		dir := filepath.Join(tmp, "run")
		if code, _, errs := runCLI(t, "run", "--target", srv.URL(), "--contract", cf, "-o", dir, "--metrics", srv.URL()+"/metrics", "--metrics-interval", "200ms"); code == 2 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	headline := func(t *testing.T, ev *evidence.Evidence, name string) float64 {
		t.Helper()
		s, ok := ev.Signal(name)
		if !ok {
			t.Fatalf("evidence.json lacks %s; stage 4: %+v", name, ev.Stage(evidence.StageServingCache))
		}
		return s.Value
	}
	t.Run("kv-thrash", func(t *testing.T) {
		// Speed 5: the load lasts a few wall seconds, so pel run's 1 s sampling sees the KV
		// cache while it is full (its first and last samples are taken outside the load).
		ev := run(t, "kv-thrash", 5, 64, 128, 512)
		kv, pr := headline(t, ev, evidence.SigKVUsageMax), headline(t, ev, evidence.SigPreemptionRate)
		t.Logf("kv max %g, preemptions/s %g, step lag %g ms", kv, pr, headline(t, ev, evidence.SigEngineStepLagMs))
		if kv < 0.9 || pr <= 0 {
			t.Errorf("kv-thrash: KV usage max %g, preemptions/s %g; want near 1 and > 0", kv, pr)
		}
	})
	t.Run("healthy", func(t *testing.T) {
		ev := run(t, "healthy", 20, 8, 32, 64)
		if pr, n := headline(t, ev, evidence.SigPreemptionRate), headline(t, ev, evidence.SigPreemptions); pr != 0 || n != 0 {
			t.Errorf("healthy: %g preemptions (%g/s), want 0", n, pr)
		}
		if gen := headline(t, ev, evidence.SigGenTokensRate); gen <= 0 {
			t.Errorf("healthy: generation tokens/s %g: stage 4 saw no work", gen)
		}
	})
}
