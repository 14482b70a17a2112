package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fold is the first screen the fold test lays the page out in: a 1280×800 laptop window,
// the smallest common desktop viewport.
const foldW, foldH = 1280, 800

// measure is appended to a copy of the page: once laid out, it writes the top and height of
// the first chart (in CSS pixels from the top of the page) into the body, where --dump-dom
// shows it. The report itself has no script.
const measure = `<script>
const c = document.querySelector("svg.chart");
const r = c ? c.getBoundingClientRect() : null;
document.body.setAttribute("data-first-chart", r ? (r.top + window.scrollY) + " " + r.height : "none");
</script>`

var firstChart = regexp.MustCompile(`data-first-chart="([^"]*)"`)

// TestChartAboveTheFold: in a 1280×800 window, each golden report page shows a chart on its
// first screen — the whole chart's top half at least, below the verdict and the summary.
func TestChartAboveTheFold(t *testing.T) {
	bin := chromium(t)
	all, _ := filepath.Glob("../../report/testdata/*.html")
	n := 0
	for _, p := range all {
		if strings.HasSuffix(p, ".sweep.html") {
			continue
		}
		n++
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			page := strings.Replace(string(src), "</body>", measure+"</body>", 1)
			cp := filepath.Join(t.TempDir(), "page.html")
			if err := os.WriteFile(cp, []byte(page), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a hung browser, not a threshold
			defer cancel()
			args := append(flags(t), "--window-size="+strconv.Itoa(foldW)+","+strconv.Itoa(foldH), "--dump-dom", fileURL(t, cp))
			cmd := exec.CommandContext(ctx, bin, args...)
			var out, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("chromium: %v\n%s", err, stderr.String())
			}
			m := firstChart.FindStringSubmatch(out.String())
			if m == nil || m[1] == "none" {
				t.Fatalf("no chart on the page (measured %v)", m)
			}
			f := strings.Fields(m[1])
			top, _ := strconv.ParseFloat(f[0], 64)
			h, _ := strconv.ParseFloat(f[1], 64)
			if h <= 0 || top+h/2 > foldH {
				t.Errorf("first chart at %.0f px (height %.0f): its middle is below the %d px first screen", top, h, foldH)
			}
		})
	}
	if n == 0 {
		t.Fatal("no report pages under report/testdata")
	}
}
