package report

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/record"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// synthetic builds a deterministic diagnosed evidence package: a KV-thrashing run of
// durS seconds with scrapes every second and n tasks.
func synthetic(durS float64, n int) *evidence.Evidence {
	ev := evidence.New()
	ev.Contract = evidence.ContractRef{Name: "chat-mix", Version: 1, SHA256: "0123456789abcdef0123456789abcdef"}
	ev.Run = evidence.Run{Target: "http://127.0.0.1:8000", Engine: "sim", StartedAt: t0, DurationS: durS,
		Phases: []evidence.Phase{{Name: "cold", StartS: 0, EndS: durS / 6}, {Name: "warm", StartS: durS / 6, EndS: durS}}}
	ev.Workload.Summary = evidence.Summary{Requests: n, Accepted: n * 3 / 4, Failed: 2, AcceptanceRate: 0.75, ErrorRate: 0.01,
		GoodputRPS: float64(n) * 0.75 / durS, ThroughputRPS: float64(n) / durS, OutputTokensPerS: 1234,
		Latency: evidence.Latency{
			TTFTms: evidence.Quantiles{N: n, P50: 180, P95: 900, P99: 1400, Mean: 260},
			ITLms:  evidence.Quantiles{N: n * 20, P50: 21, P95: 40, P99: 75, Mean: 24},
			E2Ems:  evidence.Quantiles{N: n, P50: 700, P95: 1900, P99: 2600, Mean: 820},
		},
		RejectReasons: map[string]int{"slo ttft max 1s": n / 4, "error: http_error": 2}}
	ev.Workload.ByTaskType = map[string]evidence.Summary{"short-chat": {Requests: n * 3 / 4, AcceptanceRate: 0.8}, "long-doc": {Requests: n / 4, AcceptanceRate: 0.6}}
	ev.Workload.ByBand = []evidence.BandSummary{
		{Band: "1-4", Lo: 1, Hi: 4, Summary: evidence.Summary{Requests: n / 3, Latency: evidence.Latency{TTFTms: evidence.Quantiles{N: n / 3, P50: 90, P99: 300}, ITLms: evidence.Quantiles{N: n * 7, P50: 18, P99: 30}}}},
		{Band: "5-16", Lo: 5, Hi: 16, Summary: evidence.Summary{Requests: n / 3, Latency: evidence.Latency{TTFTms: evidence.Quantiles{N: n / 3, P50: 200, P99: 1200}, ITLms: evidence.Quantiles{N: n * 7, P50: 22, P99: 60}}}},
		{Band: "17-64", Lo: 17, Hi: 64, Summary: evidence.Summary{Requests: n / 3, Latency: evidence.Latency{TTFTms: evidence.Quantiles{N: n / 3, P50: 600, P99: 2100}, ITLms: evidence.Quantiles{N: n * 7, P50: 30, P99: 95}}}},
	}
	ev.Workload.Histograms = map[string]evidence.Histogram{
		"ttft_ms": {Unit: "ms", Bounds: []float64{50, 100, 200, 500, 1000, 2000}, Counts: []int64{10, 120, 300, 90, 40, 12}},
		"itl_ms":  {Unit: "ms", Bounds: []float64{10, 20, 50, 100}, Counts: []int64{100, 4000, 800, 30}},
		"e2e_ms":  {Unit: "ms", Bounds: []float64{500, 1000, 2000, 5000}, Counts: []int64{200, 250, 100, 20}},
	}
	add := func(name string, v float64, unit string, stage int, src string) {
		ev.Add(evidence.Signal{Name: name, Value: v, Unit: unit, Stage: stage, Source: src, Phase: evidence.PhaseWarm})
	}
	add(evidence.SigTTFTP50, 180, "ms", 1, "client")
	add(evidence.SigTTFTP99, 1400, "ms", 1, "client")
	add(evidence.SigITLP99, 75, "ms", 1, "client")
	add(evidence.SigAcceptanceRate, 0.75, "ratio", 1, "client")
	add(evidence.SigKVUsageMax, 1, "ratio", 4, "vllm /metrics")
	add(evidence.SigKVUsageMean, 0.96, "ratio", 4, "vllm /metrics")
	add(evidence.SigPreemptionRate, 1.5, "1/s", 4, "vllm /metrics")
	add(evidence.SigWaitingMean, 9, "count", 4, "vllm /metrics")
	add(evidence.SigRunningMean, 48, "count", 4, "vllm /metrics")
	st := ev.Stage(4)
	st.Status, st.Sources = evidence.StatusCollected, []string{"vllm /metrics"}
	for _, s := range []struct {
		name, unit string
		f          func(t float64) float64
	}{
		{evidence.SeriesKVUsage, "ratio", func(t float64) float64 { return math.Min(1, 0.5+t/durS) }},
		{evidence.SeriesWaiting, "count", func(t float64) float64 { return math.Floor(t / durS * 18) }},
		{evidence.SeriesRunning, "count", func(t float64) float64 { return 48 }},
		{evidence.SigPreemptionRate, "1/s", func(t float64) float64 { return math.Max(0, 3*(t/durS-0.4)) }},
	} {
		ser := evidence.Series{Name: s.name, Unit: s.unit, Source: "vllm /metrics"}
		for t := 1.0; t <= durS; t++ {
			ser.T, ser.V = append(ser.T, t), append(ser.V, s.f(t))
		}
		st.Series = append(st.Series, ser)
	}
	ev.Stage(1).Status = evidence.StatusCollected
	recs := make([]record.Record, n)
	for i := range recs {
		at := durS * float64(i) / float64(n)
		r := record.Record{Seq: i, Task: []string{"short-chat", "short-chat", "short-chat", "long-doc"}[i%4], Phase: "warm",
			PromptTokens: 200, OutputTokens: 20, Status: record.StatusOK, Accepted: true, Attempts: 1}
		if at < durS/6 {
			r.Phase = "cold"
		}
		r.ScheduledAt = t0.Add(time.Duration(at * float64(time.Second)))
		r.SentAt = r.ScheduledAt
		ttft := 100 + 1500*at/durS
		r.FirstTokenAt = r.SentAt.Add(time.Duration(ttft * float64(time.Millisecond)))
		for k := 0; k < 20; k++ {
			r.ChunkUS = append(r.ChunkUS, int64(ttft*1000)+int64(k)*21000)
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[19]) * time.Microsecond)
		r.DoneAt = r.LastTokenAt
		if ttft > 1000 {
			r.Accepted, r.Reasons = false, []string{"slo ttft max 1s"}
		}
		recs[i] = r
	}
	return diagnose.Diagnose(ev, recs, diagnose.Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}, {Metric: contract.MetricITL, Quantile: 0.99, Limit: 100 * time.Millisecond}}, Resamples: 100})
}

// inputs are the evidence packages rendered by the golden tests: the synthetic one, and
// every testdata/*.evidence.json (real runs).
func inputs(t *testing.T) map[string]*evidence.Evidence {
	in := map[string]*evidence.Evidence{"synthetic": synthetic(60, 400)}
	files, _ := filepath.Glob("testdata/*.evidence.json")
	for _, f := range files {
		ev, err := evidence.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in[strings.TrimSuffix(filepath.Base(f), ".evidence.json")] = ev
	}
	return in
}

func TestTextGolden(t *testing.T) {
	for name, ev := range inputs(t) {
		var b bytes.Buffer
		if err := Text(&b, ev); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), "VERDICT: "+ev.Verdict) {
			t.Errorf("%s: text does not start with the verdict", name)
		}
		golden.Check(t, filepath.Join("testdata", name+".txt"), b.Bytes())
	}
}

func TestHTMLGolden(t *testing.T) {
	for name, ev := range inputs(t) {
		var b bytes.Buffer
		if err := HTML(&b, ev); err != nil {
			t.Fatal(err)
		}
		checkSelfContained(t, name, b.String())
		golden.Check(t, filepath.Join("testdata", name+".html"), b.Bytes())
	}
}

// checkSelfContained: nothing in the page can reach the network.
func checkSelfContained(t *testing.T, name, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", " src=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("%s: page contains %q", name, bad)
		}
	}
	// The only URL allowed is the SVG namespace (an identifier, never fetched).
	for _, u := range regexp.MustCompile(`https?://[^\s"'<]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && !strings.HasPrefix(u, "http://127.0.0.1") {
			t.Errorf("%s: page references %s", name, u)
		}
	}
	if !strings.Contains(page, `id="verdict"`) {
		t.Errorf("%s: no verdict element", name)
	}
}

// TestHTMLSizeTenMinutes: a 10-minute run scraped every second, with 6000 tasks, renders
// under 2 MB once diagnose has capped its series.
func TestHTMLSizeTenMinutes(t *testing.T) {
	ev := synthetic(600, 6000)
	var b bytes.Buffer
	if err := HTML(&b, ev); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2<<20 {
		t.Errorf("report is %d bytes, over 2 MB", b.Len())
	}
	t.Logf("10-minute report: %d bytes", b.Len())
}

func TestRenderersTolerateEmptyEvidence(t *testing.T) {
	ev := evidence.New()
	var b bytes.Buffer
	if err := Text(&b, ev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not diagnosed") {
		t.Errorf("empty evidence text: %q", b.String()[:80])
	}
	b.Reset()
	if err := HTML(&b, ev); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, "empty", b.String())
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ span, want float64 }{{1, 0.2}, {7, 2}, {100, 20}, {0, 1}, {0.03, 0.01}} {
		if got := niceStep(c.span); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}

var chartTitle = regexp.MustCompile(`class="title"[^>]*>([^<]*)<`)

// TestOneQuantityPerLatencyAxis: a chart of latencies over time draws one quantity: TTFT
// (seconds under a queue) and ITL (milliseconds) on one axis flatten the ITL to a line at 0.
// The healthy and kv-thrash evidence carry both TTFT p50 and ITL p50 series.
func TestOneQuantityPerLatencyAxis(t *testing.T) {
	for name, ev := range inputs(t) {
		var b bytes.Buffer
		if err := HTML(&b, ev); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, m := range chartTitle.FindAllStringSubmatch(b.String(), -1) {
			title := m[1]
			if !strings.HasSuffix(title, "— ms") {
				continue
			}
			seen++
			if strings.Contains(title, " and ") || strings.Contains(title, ", ") {
				t.Errorf("%s: chart %q puts more than one latency on one axis", name, title)
			}
		}
		if name != "synthetic" && seen < 2 {
			t.Errorf("%s: %d latency-over-time charts, want TTFT's and ITL's", name, seen)
		}
	}
}

// TestChartsLeadThePage: the latency distributions come right after the verdict and the
// summary strip, before the findings (the browser test measures that they are on the first
// screen).
func TestChartsLeadThePage(t *testing.T) {
	for name, ev := range inputs(t) {
		var b bytes.Buffer
		if err := HTML(&b, ev); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		i, j := strings.Index(page, `id="headline-charts"`), strings.Index(page, "<h2>Findings</h2>")
		if i < 0 || i > j || !strings.Contains(page[i:j], "<svg") {
			t.Errorf("%s: no chart between the summary and the findings", name)
		}
	}
}
