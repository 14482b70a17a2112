// Package shard runs a contract as one process and as four shards (four pel processes)
// against one pel sim, merges the shards with pel merge, and holds the merged run to the
// single one. Both ran the same seeded schedule, so the task counts are equal; the
// timings agree within sampling error; and the merged p99 is exactly the p99 of the union
// of the shards' records (HDR histograms merge exactly), never an average of the shards'.
package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

var pelBin string

func TestMain(m *testing.M) { pelbin.Main(m, "shard", &pelBin) }

func pel(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	code, out, err := pelbin.Run(ctx, pelBin, args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	return out, err
}

// startSim runs pel sim on loopback until the test ends.
func startSim(t *testing.T) string {
	t.Helper()
	return pelbin.StartSim(t, pelBin, "--scenario", "healthy")
}

func readEvidence(t *testing.T, dir string) *evidence.Evidence {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev evidence.Evidence
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

func TestFourShardsMergeToOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five pel processes against pel sim (~1 min)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	target := startSim(t)
	dir := t.TempDir()
	c, err := pel(ctx, t, "sim", "--scenario", "healthy", "--contract")
	if err != nil {
		t.Fatal(err, c)
	}
	c = regexp.MustCompile(`(?m)^duration: .*$`).ReplaceAllString(c, "duration: 15s")
	c = regexp.MustCompile(`(?m)^warmup: .*$`).ReplaceAllString(c, "warmup: 3s")
	contractFile := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(contractFile, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}

	single := filepath.Join(dir, "single")
	if out, err := pel(ctx, t, "run", "--target", target, "--contract", contractFile, "-o", single); err != nil {
		t.Fatalf("single run: %v\n%s", err, out)
	}

	const n = 4
	start := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339Nano)
	errs := make(chan error, n)
	var shards []string
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		shards = append(shards, d)
		go func() {
			out, err := pel(ctx, t, "run", "--target", target, "--contract", contractFile,
				"--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start, "-o", d)
			if err != nil {
				err = fmt.Errorf("shard %d: %v\n%s", i, err, out)
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(dir, "merged")
	out, err := pel(ctx, t, append(append([]string{"merge"}, shards...), "-o", merged)...)
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	if !strings.Contains(out, "0/4") || !strings.Contains(out, "3/4") {
		t.Errorf("merge printed no shard table:\n%s", out)
	}

	// Each shard holds part of the schedule: its evidence says so, and its verdict opens
	// with it.
	for i, d := range shards {
		ev := readEvidence(t, d)
		if !ev.Run.Partial() || len(ev.Run.Completeness.Gaps) != 1 || ev.Run.Completeness.Gaps[0].Kind != evidence.GapShard {
			t.Errorf("shard %d: completeness %+v, want partial: one shard gap", i, ev.Run.Completeness)
		}
		if want := fmt.Sprintf("PARTIAL RUN (shard: %d/%d, one part", i, n); !strings.HasPrefix(ev.Verdict, want) {
			t.Errorf("shard %d: verdict %q does not open with %q", i, ev.Verdict, want)
		}
	}
	one, m := readEvidence(t, single), readEvidence(t, merged)
	// The same seeded schedule: the same tasks, phase for phase.
	for _, p := range []string{"cold", "warm"} {
		if a, b := one.Workload.ByPhase[p].Requests, m.Workload.ByPhase[p].Requests; a != b || a == 0 {
			t.Errorf("%s phase: single run %d tasks, merged shards %d", p, a, b)
		}
	}
	if len(m.Run.Shards) != n {
		t.Fatalf("merged run lists %d shards", len(m.Run.Shards))
	}
	for _, s := range m.Run.Shards {
		if s.Clock == nil || s.Clock.BoundMs >= 1000 || s.Tasks == 0 {
			t.Errorf("shard %d: %+v", s.Index, s)
		}
	}

	// Exactly the union: the merged p99 is the p99 of every shard's warm tasks together,
	// whether read from the union or merged from each shard's own histogram.
	union := stats.NewDist()
	var parts []*stats.Dist
	for i, d := range shards {
		recs, err := record.ReadFile(filepath.Join(d, "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		part := stats.NewDist()
		for _, r := range recs {
			if r.Shard != fmt.Sprintf("%d/%d", i, n) {
				t.Fatalf("shard %d holds a record tagged %q", i, r.Shard)
			}
			if v, ok := r.TTFT(); ok && r.OK() && r.Phase == record.PhaseWarm {
				union.Add(v)
				part.Add(v)
			}
		}
		parts = append(parts, part)
	}
	fromParts := stats.NewDist()
	for _, p := range parts {
		fromParts.Merge(p)
	}
	got := m.Workload.Latency.TTFTms
	if got.P99 != union.Quantiles().P99 || got.P99 != fromParts.Quantiles().P99 || got.N != union.N() {
		t.Errorf("merged TTFT p99 %.3f ms over %d, union %.3f over %d, shards' histograms merged %.3f",
			got.P99, got.N, union.Quantiles().P99, union.N(), fromParts.Quantiles().P99)
	}

	// Within sampling error of the single run (the same schedule, timed by another run of
	// a simulated server on a shared machine).
	near := func(what string, a, b, rel, abs float64) {
		if math.Abs(a-b) > math.Max(rel*math.Max(math.Abs(a), math.Abs(b)), abs) {
			t.Errorf("%s: single %.3f, merged %.3f", what, a, b)
		}
	}
	ow, mw := one.Workload, m.Workload
	near("acceptance rate", ow.AcceptanceRate, mw.AcceptanceRate, 0, 0.05)
	near("goodput /s", ow.GoodputRPS, mw.GoodputRPS, 0.15, 0.5)
	near("TTFT p50 ms", ow.Latency.TTFTms.P50, mw.Latency.TTFTms.P50, 0.5, 30)
	near("ITL p50 ms", ow.Latency.ITLms.P50, mw.Latency.ITLms.P50, 0.5, 10)
	near("E2E p50 ms", ow.Latency.E2Ems.P50, mw.Latency.E2Ems.P50, 0.5, 100)
	t.Logf("single: %d tasks, goodput %.2f/s, TTFT p50 %.1f p99 %.1f ms; merged: %d tasks, goodput %.2f/s, TTFT p50 %.1f p99 %.1f ms",
		ow.Requests, ow.GoodputRPS, ow.Latency.TTFTms.P50, ow.Latency.TTFTms.P99, mw.Requests, mw.GoodputRPS, mw.Latency.TTFTms.P50, mw.Latency.TTFTms.P99)
}
