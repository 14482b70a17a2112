package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// hourRun is a finished run directory whose metrics.jsonl is a one-hour, 3,000-series run
// (scrapetest.Hour: 3,600 samples of a vLLM page with 8 data-parallel engines, ~450 MB)
// starting at the run's start, and its task count.
func hourRun(t *testing.T) (string, int) {
	t.Helper()
	dir := runDir(t)
	recs := records(t, dir)
	ev, err := evidence.ReadFile(filepath.Join(dir, rundir.EvidenceFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rundir.MetricsFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	shape := scrapetest.Hour()
	if shape.Series() < 3000 {
		t.Fatalf("the shape has %d series per page", shape.Series())
	}
	if err := shape.WriteJSONL(f, "http://127.0.0.1:8000/metrics", ev.Run.StartedAt); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, len(recs)
}

// pel analyze and pel report --html on a one-hour, 3,000-series metrics.jsonl (analyze: 2,086 MB
// and killed in scrape.ReadSamples when every sample was held): the file is streamed, the
// stage-4 signals are there (the injected running count: 40+e on engine e, so 47 on the worst
// of 8), each chart holds a bounded number of points, and every task record is kept.
func TestAnalyzeHourOfMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a ~450 MB metrics.jsonl")
	}
	dir, tasks := hourRun(t)
	res := pel(t, 10*time.Minute, nil, "analyze", dir)
	if res.code != 0 {
		t.Fatalf("analyze: exit %d: %s", res.code, tail(res.stderr))
	}
	if got := len(records(t, dir)); got != tasks {
		t.Errorf("%d records after analyze, %d before", got, tasks)
	}
	ev, err := evidence.ReadFile(filepath.Join(dir, rundir.EvidenceFile))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Workload.Requests != tasks {
		t.Errorf("evidence counts %d requests of %d records", ev.Workload.Requests, tasks)
	}
	st := ev.Stage(evidence.StageServingCache)
	running := false
	for _, s := range st.Signals {
		if s.Name == evidence.SigRunningMax && s.Labels == nil {
			running = true
			if s.Value != 47 {
				t.Errorf("%s = %g, want 47 (the worst of 8 engines)", s.Name, s.Value)
			}
		}
	}
	if !running || ev.Run.Engine != "vllm" {
		t.Errorf("engine %q, %s found: %v", ev.Run.Engine, evidence.SigRunningMax, running)
	}
	if len(st.Series) == 0 {
		t.Fatal("no stage-4 series")
	}
	for _, s := range st.Series {
		if len(s.T) > 600 || len(s.T) < 100 || len(s.Min) != len(s.T) {
			t.Errorf("%s%v: %d points, %d min", s.Name, s.Labels, len(s.T), len(s.Min))
		}
	}
	page := filepath.Join(t.TempDir(), "report.html")
	res = pel(t, 5*time.Minute, nil, "report", dir, "--html", page)
	if res.code != 0 || strings.TrimSpace(res.stdout) != page {
		t.Fatalf("report --html: exit %d: %s%s", res.code, res.stdout, tail(res.stderr))
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "downsampled") {
		t.Errorf("report.html (%d bytes, %v) does not say its lines are downsampled", len(b), err)
	}
}

// pel report --html over an evidence.json whose TTFT histogram has 5 M buckets (unbounded
// before: decoding and drawing every bucket): a file pel never writes is refused, naming the
// file and the bound, before it is decoded whole (exit 2); one of 5,000 buckets is drawn as
// at most 64 bars and says so.
func TestReportHTMLManyBuckets(t *testing.T) {
	dir := runDir(t)
	p := filepath.Join(dir, rundir.EvidenceFile)
	ev, err := evidence.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int
		code int
		want string
	}{
		{5_000_000, 2, rundir.EvidenceFile + ": larger than 32 MiB (MaxEvidenceBytes)"},
		{5_000, 0, "5000 buckets drawn as 64 bars"},
	} {
		h := evidence.Histogram{Unit: "ms", Bounds: make([]float64, c.n), Counts: make([]int64, c.n)}
		for i := range h.Bounds {
			h.Bounds[i], h.Counts[i] = float64(i+1)/1000, int64(i%3)
		}
		ev.Workload.Histograms = map[string]evidence.Histogram{"ttft_ms": h}
		if err := ev.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(t.TempDir(), "report.html")
		res := pel(t, 5*time.Minute, nil, "report", dir, "--html", page)
		if res.code != c.code {
			t.Fatalf("%d buckets: exit %d, want %d: %s", c.n, res.code, c.code, tail(res.stderr))
		}
		if c.code != 0 {
			if !strings.Contains(res.stderr, c.want) {
				t.Errorf("%d buckets: stderr does not say %q: %s", c.n, c.want, tail(res.stderr))
			}
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) || len(b) > 1<<20 {
			t.Errorf("%d buckets: page of %d bytes, saying %q: %v", c.n, len(b), c.want, strings.Contains(string(b), c.want))
		}
	}
}

// A 3 GiB line in metrics.jsonl (a sparse file: no newline for 3 GiB) is refused naming the
// file and line once it passes the line bound, never read whole (exit 2, bad input).
func TestMetricsHugeLine(t *testing.T) {
	dir := runDir(t)
	p := filepath.Join(dir, rundir.MetricsFile)
	first := `{"t":"2026-01-01T00:00:00Z","ep":"http://127.0.0.1:8000/metrics","kind":"engine","ok":false,"err":"x"}` + "\n"
	if err := os.WriteFile(p, []byte(first+`{"t":"2026-01-01T00:00:01Z","err":"`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 3<<30); err != nil {
		t.Fatal(err)
	}
	res := pel(t, 5*time.Minute, nil, "analyze", dir)
	if res.code != 2 || !strings.Contains(res.stderr, rundir.MetricsFile+":2: line longer than") {
		t.Errorf("exit %d, want 2 naming %s:2: %s", res.code, rundir.MetricsFile, tail(res.stderr))
	}
}
