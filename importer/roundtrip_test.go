package importer

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/rundir"
)

// TestVLLMBenchRoundTrip: a run written as vllm bench serve JSON (pel report --format
// vllm-bench) imports back to the same latency figures: the exporter and the vllm-bench
// reader agree on every field they share.
func TestVLLMBenchRoundTrip(t *testing.T) {
	_, ev, _ := importRun(t, "aiperf", "testdata/aiperf-run1/profile_export.jsonl")
	dir := filepath.Join(t.TempDir(), "aiperf")
	if _, err := Import("aiperf", "testdata/aiperf-run1/profile_export.jsonl", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "vllm.json")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.VLLMBench(f, ev, d.Contract, d.Each, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, back, _ := importRun(t, "vllm-bench", out)
	if res.Requests != 100 || res.OK != 89 || back.Workload.Cancelled != 11 {
		t.Errorf("back: %d requests, %d ok, %d cancelled; want 100, 89, 11", res.Requests, res.OK, back.Workload.Cancelled)
	}
	a, b := ev.Workload.Latency, back.Workload.Latency
	for _, m := range []struct {
		name string
		x, y evidence.Quantiles
	}{{"TTFT", a.TTFTFromSentMs, b.TTFTFromSentMs}, {"ITL", a.ITLms, b.ITLms}, {"TPOT", a.TPOTms, b.TPOTms}, {"E2E", a.E2Ems, b.E2Ems}} {
		// Seconds as float64 in the file and back lose at most a µs per value.
		if m.x.N != m.y.N || math.Abs(m.x.P50-m.y.P50) > 0.002 || math.Abs(m.x.P99-m.y.P99) > 0.002 || math.Abs(m.x.Mean-m.y.Mean) > 0.002 {
			t.Errorf("%s: %+v exported, %+v imported back", m.name, m.x, m.y)
		}
	}
}

// TestPercentileTableIsStageOne: the report's percentile table (--percentiles) counts the
// tasks stage 1 counts with stage 1's definitions: its p50, p95 and p99 are evidence.json's.
func TestPercentileTableIsStageOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Import("aiperf", "testdata/aiperf-run1/profile_export.jsonl", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	ev, err := rundir.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := report.Percentiles(d.Each, []float64{50, 95, 99, 99.9})
	if err != nil {
		t.Fatal(err)
	}
	l := ev.Workload.Latency
	for i, q := range []evidence.Quantiles{l.TTFTms, l.TTFTFromSentMs, l.ITLms, l.TPOTms, l.E2Ems} {
		r := tab.Rows[i]
		if r.N != q.N || math.Abs(r.Ms[0]-q.P50) > 0.001 || math.Abs(r.Ms[1]-q.P95) > 0.001 || math.Abs(r.Ms[2]-q.P99) > 0.001 {
			t.Errorf("%s: table n %d %v, evidence %+v", r.Metric, r.N, r.Ms, q)
		}
		if r.Ms[3] < r.Ms[2] || r.Ms[3] > q.Max+0.001*q.Max {
			t.Errorf("%s: p99.9 %.3f outside [p99 %.3f, max %.3f]", r.Metric, r.Ms[3], r.Ms[2], q.Max)
		}
	}
}
