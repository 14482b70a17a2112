package browser

import (
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds a Chromium binary: $PEL_CHROMIUM, then the usual names.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PEL_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	const how = "install it (Debian: apt-get install -y chromium) or set PEL_CHROMIUM"
	if os.Getenv("PEL_REQUIRE_CHROMIUM") != "" {
		t.Fatal("PEL_REQUIRE_CHROMIUM is set but no Chromium was found: " + how)
	}
	t.Skip("no Chromium found: " + how + " to run the HTML report browser test")
	return ""
}

// flags are the headless, offline, throwaway-profile flags every invocation uses.
func flags(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--window-size=1200,2000"}
}

func fileURL(t *testing.T, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + abs
}

// load opens a local file headless with no network and returns the rendered DOM and the
// browser's log (console messages land there with --enable-logging=stderr).
func load(t *testing.T, bin, path string) (dom, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a hung browser, not a threshold
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(flags(t), "--dump-dom", fileURL(t, path))...)
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", path, err, stderr.String())
	}
	return out.String(), stderr.String()
}

// screenshot renders the page to a PNG and returns its size in bytes.
func screenshot(t *testing.T, bin, path string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shot := filepath.Join(t.TempDir(), "shot.png")
	cmd := exec.CommandContext(ctx, bin, append(flags(t), "--screenshot="+shot, fileURL(t, path))...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --screenshot %s: %v\n%s", path, err, stderr.String())
	}
	st, err := os.Stat(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	return st.Size()
}

// consoleErrors picks the console messages and page errors out of Chromium's log.
var consoleLine = regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught|Failed to load resource|net::ERR_).*$`)

func consoleErrors(log string) []string { return consoleLine.FindAllString(log, -1) }

var verdictRe = regexp.MustCompile(`(?s)<p id="verdict"[^>]*>(.*?)</p>`)

// svgRe is one chart; yTickRe one y-axis tick's text in it.
var (
	svgRe   = regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`)
	yTickRe = regexp.MustCompile(`<text class="tick"[^>]*text-anchor="end"[^>]*>([0-9.]+)</text>`)
)

func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	all, _ := filepath.Glob("../../report/testdata/*.html")
	var pages []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".sweep.html") {
			pages = append(pages, p)
		}
	}
	if len(pages) == 0 {
		t.Fatal("no report pages under report/testdata")
	}
	for _, p := range pages {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			m := verdictRe.FindSubmatch(src)
			if m == nil {
				t.Fatal("page has no verdict element")
			}
			verdict := html.UnescapeString(string(m[1]))
			dom, log := load(t, bin, p)
			if errs := consoleErrors(log); len(errs) > 0 {
				t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
			}
			dm := verdictRe.FindStringSubmatch(dom)
			if dm == nil || html.UnescapeString(dm[1]) != verdict {
				t.Errorf("rendered DOM does not show the verdict %q", verdict)
			}
			if !strings.Contains(dom, "<svg") {
				t.Error("no SVG chart in the rendered DOM")
			}
			// The summary strip is on the first screen: accepted share, goodput, the p99s
			// against their bounds and the cost per accepted task, right after the verdict.
			if i, j := strings.Index(dom, `id="verdict"`), strings.Index(dom, `id="summary"`); j < 0 || j < i || j > strings.Index(dom, "<h2>") {
				t.Error("no summary strip between the verdict and the first section")
			}
			for _, want := range []string{"accepted (warm phase)", "goodput", "TTFT p99", "ITL p99", "E2E p99", "cost per accepted task"} {
				if !strings.Contains(dom, want) {
					t.Errorf("summary strip lacks %q", want)
				}
			}
			// The latency histograms carry the run's p50 and p99 as marks, and the page
			// holds the run over time (client symptoms above the engine's state).
			if !strings.Contains(dom, `stroke-dasharray="4 3"><title>p99 `) {
				t.Error("no p99 mark on a latency histogram")
			}
			if !strings.Contains(dom, `id="over-time"`) || !strings.Contains(dom, "Client latency per window") {
				t.Error("no view of the run over time")
			}
			// The y ticks of one chart share one precision: no "50.0" beside "100".
			for _, svg := range svgRe.FindAllString(dom, -1) {
				decimals := map[int][]string{}
				for _, m := range yTickRe.FindAllStringSubmatch(svg, -1) {
					d := 0
					if i := strings.IndexByte(m[1], '.'); i >= 0 {
						d = len(m[1]) - i - 1
					}
					decimals[d] = append(decimals[d], m[1])
				}
				if len(decimals) > 1 {
					t.Errorf("one axis's ticks are written at several precisions: %v", decimals)
					break
				}
			}
			// Stage tables start collapsed: the page opens on the summary, not on 7,000 px.
			if strings.Contains(dom, "<details open") {
				t.Error("a stage table starts expanded")
			}
			// A laid-out page with charts compresses to far more than a blank one (~5 KB).
			if n := screenshot(t, bin, p); n < 20_000 {
				t.Errorf("screenshot is %d bytes: the page looks blank", n)
			}
		})
	}
}

// TestConsoleErrorsAreCaught is the control: a page that logs an error must be flagged, so
// the check above can fail.
func TestConsoleErrorsAreCaught(t *testing.T) {
	bin := chromium(t)
	p := filepath.Join(t.TempDir(), "bad.html")
	page := `<!DOCTYPE html><html><body><p id="verdict">x</p><script>console.error("pel-control-error"); undefinedFn();</script></body></html>`
	if err := os.WriteFile(p, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	_, log := load(t, bin, p)
	if len(consoleErrors(log)) == 0 {
		t.Fatalf("a page with console errors passed the check; log:\n%s", log)
	}
}

var capacityRe = regexp.MustCompile(`(?s)<p id="capacity"[^>]*>(.*?)</p>`)

// TestSweepRendersInChromium: each golden sweep page (report/testdata/*.sweep.html, drawn
// from a sweep.json of a real pel sim sweep) renders headless without console errors, shows
// the capacity at the SLO, draws its four curves with the knee and the capacity marked, and
// screenshots to a page with content.
func TestSweepRendersInChromium(t *testing.T) {
	bin := chromium(t)
	pages, _ := filepath.Glob("../../report/testdata/*.sweep.html")
	if len(pages) == 0 {
		t.Fatal("no sweep pages under report/testdata")
	}
	for _, p := range pages {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			m := capacityRe.FindSubmatch(src)
			if m == nil {
				t.Fatal("page has no capacity element")
			}
			dom, log := load(t, bin, p)
			if errs := consoleErrors(log); len(errs) > 0 {
				t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
			}
			dm := capacityRe.FindStringSubmatch(dom)
			if dm == nil || html.UnescapeString(dm[1]) != html.UnescapeString(string(m[1])) {
				t.Errorf("rendered DOM does not show the capacity %q", m[1])
			}
			if n := strings.Count(dom, `<svg class="chart"`); n != 4 {
				t.Errorf("%d charts, want 4 (goodput/throughput, throughput–latency, TTFT, ITL vs load)", n)
			}
			for _, want := range []string{"capacity at SLO ", "knee ", "SLO TTFT p99"} {
				if !strings.Contains(dom, want) {
					t.Errorf("no %q mark on the charts", want)
				}
			}
			if n := screenshot(t, bin, p); n < 20_000 {
				t.Errorf("screenshot is %d bytes: the page looks blank", n)
			}
		})
	}
}
