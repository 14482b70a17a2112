package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// TestRunWithMetrics: pel run --metrics samples a vLLM-shaped endpoint during the load and
// fills stage 4; a bad --metrics URL is bad usage (exit 2).
func TestRunWithMetrics(t *testing.T) {
	api := httptest.NewServer(&loadgentest.Handler{})
	defer api.Close()
	var pages atomic.Int64 // model time: one second per page served
	eng := &scrapetest.Engine{S: scrapetest.KVThrash(), Clock: func() float64 { return float64(pages.Add(1)) }}
	metrics := httptest.NewServer(http.HandlerFunc(eng.ServeHTTP))
	defer metrics.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	dir := filepath.Join(tmp, "run")
	code, _, errs := runCLI(t, "run", "--target", api.URL, "--contract", cf, "-o", dir, "--metrics", metrics.URL+"/metrics")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Stage(evidence.StageServingCache).Status == evidence.StatusMissing || len(ev.SignalsNamed(evidence.SigKVUsageMean)) == 0 {
		t.Errorf("stage 4 not filled: %+v", ev.Stage(evidence.StageServingCache))
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics.jsonl")); err != nil {
		t.Error(err)
	}
	code, _, errs = runCLI(t, "run", "--target", api.URL, "--contract", cf, "-o", filepath.Join(tmp, "run2"), "--metrics", "localhost:8000/metrics")
	if code != 2 || !strings.Contains(errs, "--metrics") {
		t.Errorf("bad --metrics: exit %d, %q", code, errs)
	}
}
