package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/pelbin"
)

// TestUnmeasuredBound: answers of one token have no inter-token gap, so a contract's ITL
// bound has nothing to judge. The bound is neither met nor given headroom: the verdict, the
// text report, the HTML, evidence.json and summary.csv all say the ITL was not measured.
func TestUnmeasuredBound(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	cf := writeContract(t, `name: one-token
version: 1
arrival: {process: constant, rate: 20}
requests: 20
tasks:
  - {name: short, prompt_tokens: {dist: fixed, value: 16}, output_tokens: 1}
slo:
  itl: {p99: 50ms}
  ttft: {p99: 5s}
`)
	dir := filepath.Join(t.TempDir(), "run")
	code, out := pel(t, "run", "--target", url, "--contract", cf, "-o", dir)
	if code != 0 {
		t.Fatalf("pel run: exit %d\n%s", code, out)
	}
	ev := evidenceOf(t, dir)
	if got := at(ev, "workload", "latency", "itl_ms", "not_measured"); got != true {
		t.Errorf("evidence.json workload.latency.itl_ms: not_measured %v, want true (%v)", got, at(ev, "workload", "latency", "itl_ms"))
	}
	verdict, _ := ev["verdict"].(string)
	if !strings.HasPrefix(verdict, "Not measured: ITL p99") {
		t.Errorf("verdict does not open with the unmeasured bound: %q", verdict)
	}
	if strings.Contains(verdict, "itl_p99_ms at 0") {
		t.Errorf("verdict states headroom on an unmeasured figure: %q", verdict)
	}
	hr, _ := ev["headroom"].([]any)
	for _, h := range hr {
		if at(h, "signal") == "client.itl_p99_ms" {
			t.Errorf("headroom lists the unmeasured ITL: %v", h)
		}
	}
	code, text := pel(t, "report", dir, "--full")
	if code != 0 {
		t.Fatalf("pel report: exit %d\n%s", code, text)
	}
	// Every ITL line (the summary's p99, the latency table's row) says not measured.
	itl := 0
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "ITL" {
			itl++
			if !strings.Contains(l, "not measured") {
				t.Errorf("text report's ITL line gives a value: %q", l)
			}
		}
	}
	if itl < 2 {
		t.Errorf("text report has %d ITL line(s), want the summary's and the latency table's:\n%s", itl, text)
	}
	// A comparison of the run with itself: the ITL rows have no values on either side.
	_, cmp := pel(t, "compare", dir, dir)
	rows := 0
	for _, l := range strings.Split(cmp, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "ITL" {
			rows++
			if strings.Count(l, "not measured") != 2 {
				t.Errorf("pel compare's ITL row does not say not measured on both sides: %q", l)
			}
		}
	}
	if rows == 0 {
		t.Errorf("pel compare printed no ITL row:\n%s", cmp)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if code, out := pel(t, "report", dir, "--html", html); code != 0 {
		t.Fatalf("pel report --html: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(html)
	contains(t, "report.html", string(b), `<div class="k">ITL p99</div><div class="v">not measured</div>`)
	csvDir := t.TempDir()
	if code, out := pel(t, "report", dir, "--csv", csvDir); code != 0 {
		t.Fatalf("pel report --csv: exit %d\n%s", code, out)
	}
	sum, _ := os.ReadFile(filepath.Join(csvDir, "summary.csv"))
	lines := strings.Split(string(sum), "\n")
	head, all := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	for i, h := range head {
		if h == "itl_p99_ms" && all[i] != "" {
			t.Errorf("summary.csv itl_p99_ms = %q, want empty (not measured)", all[i])
		}
	}
}
