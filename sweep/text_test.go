package sweep_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sweep"
)

// TestTextGolden: a sweep's table as report.SweepText prints it, with the knee, the
// capacity at the SLO (as the sweep reads it off its points), a failed point and a cost.
func TestTextGolden(t *testing.T) {
	pt := func(name string, load, goodput, e2e99 float64) sweep.Point {
		return sweep.Point{Name: name, Load: load, Requests: 100, GoodputRPS: goodput, E2EP99: e2e99, TTFTP99: e2e99 / 4, ITLP99: e2e99 / 40}
	}
	pts := []sweep.Point{pt("c1", 1, 10, 200), pt("c2", 2, 20, 208), pt("c4", 4, 39, 220), pt("c8", 8, 40, 480),
		{Name: "c16", Load: 16, Concurrency: 16, Error: "every request failed"}}
	yes, no := true, false
	for i := range pts[:4] {
		pts[i].Concurrency = int(pts[i].Load)
		pts[i].Accepted, pts[i].AcceptanceRate, pts[i].InFlightMean, pts[i].WarmTasks = 100, 1, pts[i].Load*0.9, 100
		pts[i].TTFTP50, pts[i].ITLP50 = pts[i].TTFTP99/2, pts[i].ITLP99/2
		pts[i].MeetsSLO = &yes
	}
	pts[3].MeetsSLO, pts[3].SLOMiss = &no, "client.ttft_p99_ms (all tasks) 120 ms > 100 ms"
	cost := 0.0000471
	pts[2].CostPerAcceptedTask, pts[2].Replicas = &cost, 1
	r := &sweep.Result{Mode: "concurrency", Target: "http://127.0.0.1:8000", Points: pts, KneeRule: sweep.KneeRule, Knee: sweep.FindKnee(pts),
		SLO: []sweep.SLOLine{{Signal: "client.ttft_p99_ms", Metric: "ttft", Quantile: 0.99, BoundMs: 100}}, MinAcceptance: sweep.DefaultMinAcceptance}
	r.Capacity = sweep.CapacityOf(r, sweep.Config{TargetRate: 100})
	r.Contract.Name, r.Contract.Version, r.Contract.SHA256 = "chat", 2, "0123456789abcdef"
	var buf bytes.Buffer
	if err := report.SweepText(&buf, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "text.golden"), buf.Bytes())
}
