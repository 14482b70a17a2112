package sim

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/golden"
)

// The exposed metric families (name, type, label names) are a contract with every scraper:
// a golden file makes any change to them deliberate. Update with `go test ./sim -update`.
func TestMetricFamiliesGolden(t *testing.T) {
	srv := startSim(t, "spec-negative", 20, nil)
	load(t, srv.URL(), 2, 2, 20, 4, false)
	var lines []string
	for _, page := range []struct{ name, url string }{{"vllm", srv.URL() + "/metrics"}, {"dcgm", srv.DCGMURL() + "/metrics"}} {
		for name, fam := range scrape(t, page.url) {
			var labels []string
			for _, l := range fam.Metric[0].Label {
				labels = append(labels, l.GetName())
			}
			sort.Strings(labels)
			lines = append(lines, fmt.Sprintf("%s %s %s {%s}", page.name, name, strings.ToLower(fam.GetType().String()), strings.Join(labels, ",")))
		}
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden.Check(t, filepath.Join("testdata", "metric-families.golden"), []byte(got))
}

type keyset map[string]map[string]bool

func eventKeys(events []map[string]any) (top, args keyset) {
	top, args = keyset{}, keyset{}
	for _, e := range events {
		cat, _ := e["cat"].(string)
		if top[cat] == nil {
			top[cat], args[cat] = map[string]bool{}, map[string]bool{}
		}
		for k := range e {
			top[cat][k] = true
		}
		if a, ok := e["args"].(map[string]any); ok {
			for k := range a {
				args[cat][k] = true
			}
		}
	}
	return top, args
}

// The sim's Kineto traces use the same event fields and argument names as a real PyTorch
// profiler trace (testdata/kineto/a100-simple-add.trace.json.gz, from HTA's test data).
func TestTraceMatchesRealKinetoKeys(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "kineto", "a100-simple-add.trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var real struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&real); err != nil {
		t.Fatal(err)
	}
	srv := startSim(t, "launch-bound", 10, nil)
	b := captureDuring(t, srv, func() { load(t, srv.URL(), 2, 2, 20, 4, false) })
	var ours struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(b), &ours); err != nil {
		t.Fatal(err)
	}
	rTop, rArgs := eventKeys(real.TraceEvents)
	oTop, oArgs := eventKeys(ours.TraceEvents)
	for _, cat := range []string{"kernel", "cuda_runtime", "cpu_op", "user_annotation", "ac2g"} {
		if oTop[cat] == nil {
			t.Errorf("no %s events in the sim's trace", cat)
			continue
		}
		for k := range oTop[cat] {
			if !rTop[cat][k] {
				t.Errorf("%s: field %q is not in the real trace", cat, k)
			}
		}
	}
	for k := range rArgs["kernel"] {
		if !oArgs["kernel"][k] {
			t.Errorf("kernel args lack %q (real traces carry it)", k)
		}
	}
	for k := range rArgs["cuda_runtime"] {
		if !oArgs["cuda_runtime"][k] {
			t.Errorf("cuda_runtime args lack %q", k)
		}
	}
}

// captureDuring captures replica 0's steps for exactly as long as fn runs: the capture is
// registered before fn starts and ends when fn returns, so the window holds the load
// whatever the machine's speed (a fixed wall-clock window could miss it under load).
func captureDuring(t *testing.T, srv *Server, fn func()) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var b strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.CaptureTrace(ctx, time.Hour, 0, &b); err != nil {
			t.Error(err)
		}
	}()
	for srv.replicas[0].cap.Load() == nil {
		select {
		case <-done:
			t.Fatal("capture ended before it started")
		case <-time.After(time.Millisecond):
		}
	}
	fn()
	cancel()
	<-done
	return b.String()
}
