package sweep

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
)

// TestCheckSLOStreamed: a point judged from the records the runner streams (NewRun, Add),
// from its directory streamed (compare.Open) and from its records held (compare.Load) is
// one judgement, and it is the one the injected run calls for: the warm phase's tasks and
// acceptance, a TTFT p99 bound far below every TTFT (median 100 ms) failed on the tasks it
// governs (chat's: doc's slo block replaces the global TTFT bounds), a per-task TTFT p50
// bound far above passed, judged on that task's tasks only.
func TestCheckSLOStreamed(t *testing.T) {
	const yaml = `name: synth
version: 1
arrival: {process: constant, rate: 10}
requests: 1000
slo:
  ttft: {p99: 1ms}
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 16}
  - name: doc
    prompt_tokens: 16
    output_tokens: 16
    slo: {ttft: {p50: 60s}}
`
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := append(comparetest.Records(comparetest.Spec{N: 30, Seed: 1, Phase: record.PhaseCold}),
		comparetest.Records(comparetest.Spec{N: 200, Seed: 2, FirstSeq: 30, AcceptP: 0.9, Start: t0.Add(3 * time.Second)})...)
	recs = append(recs, comparetest.Records(comparetest.Spec{N: 80, Seed: 3, FirstSeq: 230, Task: "doc", Start: t0.Add(40 * time.Second)})...)
	dir := filepath.Join(t.TempDir(), "run")
	if err := comparetest.WriteRun(dir, yaml, recs, nil); err != nil {
		t.Fatal(err)
	}
	var warm, accepted int
	for _, r := range recs {
		if r.Phase == record.PhaseWarm {
			warm++
			if r.Accepted {
				accepted++
			}
		}
	}
	held, err := compare.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := compare.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fed := compare.NewRun(dir, held.Contract, nil)
	for i := range recs {
		if err := fed.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	o := compare.Options{Resamples: 200}
	var first []byte
	for _, tc := range []struct {
		name string
		run  *compare.Run
	}{{"held", held}, {"opened", opened}, {"fed", fed}} {
		res, err := CheckSLO(tc.run, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Phase != record.PhaseWarm || res.Tasks != warm || res.AcceptanceRate != float64(accepted)/float64(warm) {
			t.Errorf("%s: phase %s, %d tasks, acceptance %v; want warm, %d, %d/%d", tc.name, res.Phase, res.Tasks, res.AcceptanceRate, warm, accepted, warm)
		}
		const global = "tasks held to the global ttft bounds"
		want := map[string]string{global: compare.StatusFail, "task doc": compare.StatusPass}
		if len(res.Checks) != len(want) {
			t.Errorf("%s: %d checks, want %d: %+v", tc.name, len(res.Checks), len(want), res.Checks)
		}
		for _, ch := range res.Checks {
			if ch.Status != want[ch.Scope] {
				t.Errorf("%s: %s (%s) %s, want %s", tc.name, ch.Signal, ch.Scope, ch.Status, want[ch.Scope])
			}
			if ch.Scope == "task doc" && ch.Values != 80 {
				t.Errorf("%s: the doc bound read %d values, want its 80 tasks", tc.name, ch.Values)
			}
			if ch.Scope == global && ch.Values > 200 {
				t.Errorf("%s: the global bound read %d values, more than chat's 200 warm tasks", tc.name, ch.Values)
			}
		}
		b, _ := json.Marshal(res)
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Errorf("%s judges otherwise than held:\n%s\n%s", tc.name, b, first)
		}
	}
}

// TestSLOLines: the lines drawn across a sweep's curves are the contract's global
// percentile bounds, per metric in ascending quantile, named as the checks name them.
func TestSLOLines(t *testing.T) {
	c, err := contract.Parse([]byte(comparetest.Contract+"slo:\n  ttft: {p99: 400ms, p50: 100ms}\n  e2e: {p99: 2s}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []SLOLine{
		{Signal: "client.ttft_p50_ms", Metric: "ttft", Quantile: 0.5, BoundMs: 100},
		{Signal: "client.ttft_p99_ms", Metric: "ttft", Quantile: 0.99, BoundMs: 400},
		{Signal: "client.e2e_p99_ms", Metric: "e2e", Quantile: 0.99, BoundMs: 2000},
	}
	got := sloLines(c)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
