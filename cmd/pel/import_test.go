package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/sweep"
)

// TestImportReportCompare: an imported AIPerf run reads like a run of pel's own: pel report
// shows its latency table and notes, pel compare compares two imports of it.
func TestImportReportCompare(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join("..", "..", "importer", "testdata", "aiperf-run1", "profile_export.jsonl")
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, d := range []string{a, b} {
		code, out, errs := runCLI(t, "import", "aiperf", file, "-o", d)
		if code != 0 {
			t.Fatalf("import: exit %d: %s", code, errs)
		}
		if !strings.Contains(out, "100 requests (89 completed)") || !strings.Contains(out, "server metrics") {
			t.Errorf("import output:\n%s", out)
		}
	}
	code, out, errs := runCLI(t, "report", a, "--full")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	// AIPerf printed TTFT p50 2369.3, p95 3825.3, p99 3833.4 ms over the same 89 requests.
	for _, want := range []string{"TTFT     89  2367  3826  3852", "imported by pel import aiperf", "not in the file, not measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The verdict itself is compare's (TestCompareIdenticalImportsWithCancelled judges it);
	// what matters here is that the two imports are compared, TTFT p50 the report's (one
	// estimator: nearest rank over the values as recorded).
	if code, out, errs := runCLI(t, "compare", a, b); code == 2 || !strings.Contains(out, "comparable: yes") || !strings.Contains(out, "TTFT p50 (ms)    2367.5  2367.5") {
		t.Errorf("compare of two imports: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "import", "aiperf", file, "-o", a); code != 2 || !strings.Contains(errs, "not empty") {
		t.Errorf("import into a run: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "import", "nosuch", file, "-o", filepath.Join(tmp, "c")); code != 2 || !strings.Contains(errs, "unknown format") {
		t.Errorf("unknown format: exit %d: %s", code, errs)
	}
}

// TestReportPercentiles: --percentiles (or the contract's percentiles key) adds a table to
// the text report, a "percentiles" key to --json and percentiles.csv to --csv; the summary
// strip keeps its three.
func TestReportPercentiles(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	file := filepath.Join("..", "..", "importer", "testdata", "aiperf-run1", "profile_export.jsonl")
	if code, _, errs := runCLI(t, "import", "aiperf", file, "-o", dir); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	code, out, errs := runCLI(t, "report", dir, "--percentiles", "50,90,99.9")
	if code != 0 || !strings.Contains(out, "PERCENTILES (warm, ms)") || !strings.Contains(out, "p99.9") || !strings.Contains(out, "TTFT p99") {
		t.Errorf("text: exit %d %s\n%s", code, errs, out)
	}
	code, out, _ = runCLI(t, "report", dir, "--percentiles", "99.9", "--json")
	if code != 0 || !strings.Contains(out, `"percentiles": {`) || !strings.Contains(out, `"framework"`) {
		t.Errorf("json: exit %d\n%.300s", code, out)
	}
	code, out, _ = runCLI(t, "report", dir, "--percentiles", "99.9", "--csv", filepath.Join(tmp, "csv"))
	if code != 0 || !strings.Contains(out, "percentiles.csv") {
		t.Errorf("csv: exit %d %s", code, out)
	}
	if code, _, errs := runCLI(t, "report", dir, "--percentiles", "100"); code != 2 || !strings.Contains(errs, "strictly between") {
		t.Errorf("bad percentile: exit %d %s", code, errs)
	}
	if code, _, _ := runCLI(t, "report", dir); code != 0 {
		t.Errorf("plain report: exit %d", code)
	}
}

// TestSweepFromImports: pel sweep --from reads a directory of imports as a sweep's points,
// each at its contract's load (GuideLLM's synchronous benchmark: one in flight; the AIPerf
// run: 100).
func TestSweepFromImports(t *testing.T) {
	tmp := t.TempDir()
	imports := filepath.Join(tmp, "imports")
	for _, im := range []struct{ format, file, dir string }{
		{"guidellm", "guidellm/benchmarks-2025-07.json", "guidellm"},
		{"aiperf", "aiperf-run1/profile_export.jsonl", "aiperf"},
	} {
		file := filepath.Join("..", "..", "importer", "testdata", im.file)
		if code, _, errs := runCLI(t, "import", im.format, file, "-o", filepath.Join(imports, im.dir)); code != 0 {
			t.Fatalf("import %s: %s", im.format, errs)
		}
	}
	out := filepath.Join(tmp, "sweep")
	code, stdout, errs := runCLI(t, "sweep", "--from", imports, "-o", out)
	if code != 0 {
		t.Fatalf("sweep --from: exit %d: %s", code, errs)
	}
	r, err := sweep.ReadResult(filepath.Join(out, sweep.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "concurrency" || len(r.Points) != 2 || r.Points[0].Name != "c1" || r.Points[1].Name != "c100" || r.Points[1].Requests != 100 {
		t.Errorf("points: %+v\n%s", r.Points, stdout)
	}
	if code, _, errs := runCLI(t, "sweep", "--from", filepath.Join(imports, "aiperf"), "-o", filepath.Join(tmp, "one")); code != 2 || !strings.Contains(errs, "at least two runs") {
		t.Errorf("one run: exit %d: %s", code, errs)
	}
}
