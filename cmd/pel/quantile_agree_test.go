package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// TestReportAndCompareAgree: one run of pel run against pel sim, read by `pel report --json`
// and by `pel compare --json` (the run against itself): the warm TTFT, ITL and E2E p99 are one
// number in both, to the bit. Both read package quantile's estimator over the values as
// recorded; 60 to 99 warm tasks is where a rounded rank (⌊0.99·n + ½⌋, the HDR library's)
// picks the second-slowest task while the nearest rank ⌈0.99·n⌉ picks the slowest, and the
// ITL p99 of thousands of gaps is where an HDR bucket's upper end and an exact value differ.
func TestReportAndCompareAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim with pel run")
	}
	srv := simtest.Start(t, "healthy", sim.Options{Speed: 20, Seed: 1, Hostname: "sim"}, false)
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	const contractYAML = `name: agree
version: 1
api: chat
arrival: {process: closed, concurrency: 8}
requests: 90
tasks:
  - name: answer
    prompt_tokens: {dist: uniform, min: 100, max: 800}
    output_tokens: {dist: uniform, min: 16, max: 64}
    ignore_eos: true
`
	if err := os.WriteFile(cf, []byte(contractYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	if code, _, errs := runCLI(t, "run", "--target", srv.URL(), "--contract", cf, "-o", dir); code != 0 {
		t.Fatalf("pel run: exit %d: %s", code, errs)
	}

	code, out, errs := runCLI(t, "report", "--json", dir)
	if code != 0 {
		t.Fatalf("pel report --json: exit %d: %s", code, errs)
	}
	var ev evidence.Evidence
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("pel report --json: %v", err)
	}
	lat := ev.Workload.Latency
	n := lat.TTFTms.N
	if n < 60 || n > 99 {
		t.Fatalf("%d warm completed tasks; the test needs 60 to 99 (see its comment)", n)
	}
	report := map[string]float64{
		evidence.SigTTFTP99: lat.TTFTms.P99, evidence.SigITLP99: lat.ITLms.P99, evidence.SigE2EP99: lat.E2Ems.P99,
	}

	code, out, errs = runCLI(t, "compare", "--json", "--resamples", "100", dir, dir)
	if code == 2 { // 90 tasks are too few to conclude (exit 1): the figures are what is read
		t.Fatalf("pel compare --json of a run against itself: exit %d: %s", code, errs)
	}
	var res struct {
		Phases []struct {
			Primary bool `json:"primary"`
			Metrics []struct {
				Signal string   `json:"signal"`
				Base   *float64 `json:"base"`
			} `json:"metrics"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("pel compare --json: %v", err)
	}
	seen := 0
	for _, p := range res.Phases {
		if !p.Primary {
			continue
		}
		for _, m := range p.Metrics {
			want, ok := report[m.Signal]
			if !ok {
				continue
			}
			seen++
			if m.Base == nil || *m.Base != want {
				got := "null"
				if m.Base != nil {
					got = fmt.Sprint(*m.Base)
				}
				t.Errorf("%s: pel report %v ms, pel compare %s ms", m.Signal, want, got)
			}
		}
	}
	if seen != len(report) {
		t.Errorf("pel compare's primary phase has %d of the %d p99 rows", seen, len(report))
	}
}
