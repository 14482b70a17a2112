package scrape

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// bigPage is a text page with n samples of one gauge family.
func bigPage(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range n {
		fmt.Fprintf(&b, "vllm:num_requests_running{s=\"%d\"} 1\n", i)
	}
	return b.Bytes()
}

// A page over the sample or byte bound is an error naming the bound, found
// before the parser holds it (the 1.5M-series case is measured end to end in test/hostile).
func TestPageBounds(t *testing.T) {
	if _, err := ParsePage(bytes.NewReader(bigPage(MaxPageSamples)), ""); err != nil {
		t.Fatalf("a page of exactly MaxPageSamples: %v", err)
	}
	for _, c := range []struct {
		name, ct, want string
		body           []byte
	}{
		{"samples, text", "", "MaxPageSamples", bigPage(MaxPageSamples + 1)},
		{"samples, openmetrics", "application/openmetrics-text; version=1.0.0", "MaxPageSamples", append(bigPage(MaxPageSamples+1), "# EOF\n"...)},
		{"bytes", "", "MaxPageBytes", append([]byte("# "), bytes.Repeat([]byte("x"), MaxPageBytes)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePage(bytes.NewReader(c.body), c.ct)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one naming %s", err, c.want)
			}
		})
	}
}

// An oversized endpoint loses only its own samples (gaps naming the
// bound) while the other endpoint is sampled; no URL credential reaches metrics.jsonl.
func TestCollectorBadEndpointAndCredentials(t *testing.T) {
	huge := bigPage(MaxPageSamples + 1)
	var badPages atomic.Int64
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { badPages.Add(1); w.Write(huge) }))
	defer bad.Close()
	good := serve(t, scrapetest.Healthy())
	goodURL := strings.Replace(good.url, "http://", "http://scraper:hunter2@", 1) + "?token=s3cret&gpu=0"
	dir := t.TempDir()
	// Parsing 20,000 lines under -race on a loaded CI machine can outlast the 20 ms timeout of
	// testInterval, which turns the bound's gap into a timeout gap; half a second leaves room.
	const interval = 500 * time.Millisecond
	c, err := NewCollector(Config{Engine: []string{bad.URL + "/metrics?api_key=k3y", goodURL}, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 120, interval/5, "samples", func() bool { return good.pages.Load() >= 3 && badPages.Load() >= 3 })
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "s3cret", "k3y", "scraper"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("metrics.jsonl holds the credential %q", secret)
		}
	}
	samples, err := ReadSamples(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	// The good endpoint served at least three pages; on a loaded machine a page it served can
	// still miss the client's timeout (recorded as a timeout gap, as TestEndpointDies allows),
	// so one success is required and every miss must be a timeout, never the size bound.
	var okGood, gapBad int
	for _, s := range samples {
		switch {
		case strings.HasPrefix(s.Endpoint, bad.URL) && !s.OK && strings.Contains(s.Err, "MaxPageSamples"):
			gapBad++
		case !strings.HasPrefix(s.Endpoint, bad.URL) && s.OK:
			okGood++
		case !strings.HasPrefix(s.Endpoint, bad.URL) && strings.Contains(s.Err, "MaxPageSamples"):
			t.Errorf("the good endpoint hit the size bound: %s", s.Err)
		}
	}
	if gapBad == 0 || okGood < 1 {
		t.Errorf("%d gaps of the oversized endpoint, %d samples of the good one", gapBad, okGood)
	}
}

// The store holds a bounded number of series per endpoint even when labels change at every
// scrape, and says so.
func TestStoreSeriesBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var samples []Sample
	for i := range 4 {
		var gauges, counters []Metric
		for j := range MaxPageSamples / 2 {
			v := Num(j)
			gauges = append(gauges, Metric{Labels: map[string]string{"engine": fmt.Sprintf("e%d-%d", i, j)}, V: &v})
			counters = append(counters, Metric{Labels: map[string]string{"model_name": fmt.Sprintf("m%d-%d", i, j)}, V: &v})
		}
		samples = append(samples, Sample{T: t0.Add(time.Duration(i) * time.Second), Endpoint: "http://e/metrics", Kind: KindEngine, OK: true, Engine: "vllm",
			Families: []Family{{Name: "vllm:num_requests_running", Type: "gauge", Metrics: gauges}, {Name: "vllm:prompt_tokens_total", Type: "counter", Metrics: counters}}})
	}
	st, err := buildSamples(samples, t0, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ep := st.endpoints[0]
	if ep.series > maxStoreSeries || ep.dropped == 0 || len(ep.replicas) > maxStoreSeries {
		t.Errorf("%d series, %d replicas, %d dropped", ep.series, len(ep.replicas), ep.dropped)
	}
	if !strings.Contains(strings.Join(st.notes[KindEngine], "\n"), "not stored past pel's bound") {
		t.Errorf("no note: %q", st.notes)
	}
}
