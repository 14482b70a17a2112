package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/sweep"
)

// TestSweepCSVGolden renders every testdata/*.sweep.json to its golden *.sweep.csv, once
// as the sweep wrote it and once with a point whose ITL has no sample (an empty cell, not
// 0) and whose error and SLO miss carry a comma, a quote and a leading '=' (cells a
// spreadsheet must read as text).
func TestSweepCSVGolden(t *testing.T) {
	for f, r := range sweepResults(t) {
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		var b bytes.Buffer
		if err := SweepCSV(&b, r); err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Count(b.String(), "\n"), len(r.Points)+1; got != want {
			t.Errorf("%s: %d lines, want a header and one per point (%d)", base, got, want)
		}
		golden.Check(t, filepath.Join("testdata", base+".csv"), b.Bytes())
		// The knee and capacity columns mark the points the result names.
		rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		for i, row := range rows[1:] {
			knee := r.Knee != nil && r.Knee.Name == r.Points[i].Name
			capa := r.Capacity != nil && r.Capacity.Found && r.Capacity.Point == r.Points[i].Name
			if row[col["knee"]] != fmt.Sprint(knee) || row[col["capacity_at_slo"]] != fmt.Sprint(capa) {
				t.Errorf("%s: point %s knee %s capacity %s, want %v %v", base, r.Points[i].Name, row[col["knee"]], row[col["capacity_at_slo"]], knee, capa)
			}
		}
		if len(r.Points) == 0 {
			continue
		}
		p := &r.Points[0]
		p.NotMeasured = append(p.NotMeasured, sweep.QITL)
		p.Error, p.SLOMiss = `=HYPERLINK("x"), then`, `-1+1, "quoted"`
		b.Reset()
		if err := SweepCSV(&b, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", base+".hostile.csv"), b.Bytes())
	}
}

// TestSweepCSVUnmeasured: a point whose tasks gave no ITL sample has empty ITL cells, not
// 0, beside the latencies it did measure.
func TestSweepCSVUnmeasured(t *testing.T) {
	p := sweep.Point{Name: "c4", Concurrency: 4, Load: 4, Requests: 40, TTFTP50: 12, TTFTP99: 30, E2EP99: 30, NotMeasured: []string{sweep.QITL}}
	var b bytes.Buffer
	if err := SweepCSV(&b, &sweep.Result{Mode: "concurrency", Points: []sweep.Point{p}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v: %d rows", err, len(rows))
	}
	for i, h := range rows[0] {
		if strings.HasPrefix(h, "itl_") && rows[1][i] != "" {
			t.Errorf("sweep.csv %s = %q, want empty", h, rows[1][i])
		}
		if h == "ttft_p99_ms" && rows[1][i] != "30" {
			t.Errorf("sweep.csv ttft_p99_ms = %q, want 30", rows[1][i])
		}
	}
}
