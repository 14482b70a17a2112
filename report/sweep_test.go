package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/sweep"
)

// TestSweepHTMLGolden renders every testdata/*.sweep.json (results of real pel sim sweeps)
// to its golden *.sweep.html; test/browser opens those pages in Chromium.
func TestSweepHTMLGolden(t *testing.T) {
	for f, r := range sweepResults(t) {
		var b bytes.Buffer
		if err := SweepHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		name := strings.TrimSuffix(filepath.Base(f), ".json") + ".html"
		for _, bad := range []string{"<script", "<link", " src=", "url(", "@import"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s: page contains %q", name, bad)
			}
		}
		// What the page must show follows from the result: the capacity sentence, a mark for
		// the knee and the capacity on the curves, and a line per SLO bound it draws against.
		if r.Capacity != nil && !strings.Contains(page, `<p id="capacity"`) {
			t.Errorf("%s: no capacity summary", name)
		}
		if r.Knee != nil && !strings.Contains(page, "knee "+r.Knee.Name) {
			t.Errorf("%s: knee %s not marked", name, r.Knee.Name)
		}
		if c := r.Capacity; c != nil && c.Found && !strings.Contains(page, "capacity at SLO "+c.Point) {
			t.Errorf("%s: capacity %s not marked", name, c.Point)
		}
		for _, l := range r.SLO {
			if (l.Metric == "ttft" || l.Metric == "itl" || l.Metric == "e2e") && !strings.Contains(page, "SLO "+strings.ToUpper(l.Metric)) {
				t.Errorf("%s: no line for the %s bound", name, l.Signal)
			}
		}
		golden.Check(t, filepath.Join("testdata", name), b.Bytes())
	}
}

// sweepResults reads every testdata/*.sweep.json (results of real pel sim sweeps), by file.
func sweepResults(t *testing.T) map[string]*sweep.Result {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.sweep.json")
	if len(files) == 0 {
		t.Fatal("no testdata/*.sweep.json")
	}
	out := map[string]*sweep.Result{}
	for _, f := range files {
		r, err := sweep.ReadResult(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = r
	}
	return out
}
