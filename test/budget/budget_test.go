// Package budget holds the time budget's acceptance scenarios: simulated deployments on
// GPUs, models and mixes nothing in pel was tuned on, each with its injected cause and
// expected owner written in the file before pel first ran on it, and each with a negative
// control (NAME-control.yaml, owner none).
package budget

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/demo"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/sim"
)

func scenarioFiles(t *testing.T) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join("scenarios", "*.yaml"))
	if err != nil || len(fs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	return fs
}

// shippedScenarioFiles are the demo's scenarios (sim/scenarios), each beside its contract.
func shippedScenarioFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("..", "..", "sim", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fs []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".contract.yaml") {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		t.Fatal("no shipped scenarios")
	}
	return fs
}

// TestScenariosWellFormed: every scenario loads, states its cause, and has a control. A
// scenario that injects nothing (owner none, a name without -control: a healthy deployment
// near its capacity) is its own negative control and needs no other.
func TestScenariosWellFormed(t *testing.T) {
	files := scenarioFiles(t)
	faults := 0
	for _, f := range files {
		s, err := sim.LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Description == "" || s.Symptom == "" || s.Why == "" || len(s.Evidence) == 0 {
			t.Errorf("%s: description, symptom, why and evidence are required", f)
		}
		c, err := contract.Parse(s.Contract, f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.System.IsZero() {
			t.Errorf("%s: the contract states no system block", f)
		}
		if _, err := sim.NewServer(s, sim.Options{}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if strings.HasSuffix(s.Name, "-control") {
			if s.OwnerLayer != "none" {
				t.Errorf("%s: a control expects no owner", f)
			}
			continue
		}
		if s.OwnerLayer == "none" {
			continue // its own control
		}
		faults++
		if !slices.Contains(files, strings.TrimSuffix(f, ".yaml")+"-control.yaml") {
			t.Errorf("%s: no negative control", f)
		}
	}
	if faults < 22 {
		t.Errorf("%d fault scenarios, want at least 22", faults)
	}
}

// TestScenarioOwners runs every scenario with three seeds and checks the owner layer each
// names. The runs are timed in real time (~16 s each), so they run only with
// PEL_BUDGET_SCENARIOS=1 (PEL_BUDGET_ONLY=NAME,... narrows them; PEL_BUDGET_SEEDS=1,2
// chooses seeds; PEL_BUDGET_KEEP=DIR keeps each run directory for pel analyze;
// PEL_BUDGET_SHIPPED=1 runs the demo's shipped scenarios instead, which ./demo runs in one
// seed with their prediction checks).
func TestScenarioOwners(t *testing.T) {
	if os.Getenv("PEL_BUDGET_SCENARIOS") == "" {
		t.Skip("set PEL_BUDGET_SCENARIOS=1 to run the budget scenarios (timed, ~16 s each)")
	}
	seeds := []uint64{1, 2, 3}
	if s := os.Getenv("PEL_BUDGET_SEEDS"); s != "" {
		seeds = nil
		for _, x := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, n)
		}
	}
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("PEL_BUDGET_ONLY"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	par := 4
	if p, err := strconv.Atoi(os.Getenv("PEL_BUDGET_PARALLEL")); err == nil && p > 0 {
		par = p
	}
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	summary := map[string][]string{}
	t.Cleanup(func() {
		var names []string
		for n := range summary {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			t.Logf("%-36s %s", n, strings.Join(summary[n], " | "))
		}
	})
	files := scenarioFiles(t)
	if os.Getenv("PEL_BUDGET_SHIPPED") != "" {
		files = shippedScenarioFiles(t)
	}
	for _, f := range files {
		s, err := sim.LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(only) > 0 && !only[s.Name] {
			continue
		}
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", s.Name, seed), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				dir := filepath.Join(t.TempDir(), "run")
				if keep := os.Getenv("PEL_BUDGET_KEEP"); keep != "" {
					dir = filepath.Join(keep, fmt.Sprintf("%s-seed%d", s.Name, seed))
					os.RemoveAll(dir)
				}
				res, err := demo.Run(context.Background(), demo.Options{Scenario: f, OutDir: dir, Seed: seed,
					NoMetrics: !slices.Contains(s.Evidence, "metrics"), NoDCGM: !slices.Contains(s.Evidence, "dcgm")})
				if err != nil {
					t.Fatal(err)
				}
				ev := res.Evidence
				got := "none"
				if ev.OwnerLayer != nil {
					got = string(*ev.OwnerLayer)
				}
				mu.Lock()
				summary[s.Name] = append(summary[s.Name], fmt.Sprintf("seed %d: %s%s", seed, got, excessLine(ev)))
				mu.Unlock()
				t.Logf("verdict: %s", ev.Verdict)
				for _, fd := range ev.Findings {
					t.Logf("  %s %s %s conf %.2f: %s", fd.Severity, fd.ID, fd.Layer, fd.Confidence, fd.Symptom)
				}
				if got != s.OwnerLayer {
					t.Errorf("owner %s, want %s (%s)", got, s.OwnerLayer, s.Why)
				}
				if s.OwnerLayer == "none" {
					for _, fd := range ev.Findings {
						if fd.Severity != evidence.SeverityInfo {
							t.Errorf("control: finding %s at %s", fd.ID, fd.Severity)
						}
					}
				}
				if ev.Budget == nil || len(ev.Budget.TaskTypes) == 0 {
					t.Error("no time budget")
				}
			})
		}
	}
}

// excessLine summarises the budget's attribution for the test log.
func excessLine(ev *evidence.Evidence) string {
	b := ev.Budget
	if b == nil {
		return ""
	}
	s := ""
	if x := b.Excess; x != nil {
		var parts []string
		for i, sh := range x.Shares {
			if i < 3 {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", sh.What, sh.Share*100))
			}
		}
		s += " [" + strings.Join(parts, ", ") + "]"
	}
	if f := b.Floors; f != nil {
		s += fmt.Sprintf(" decode %.2fx prefill %.2fx load %.2f", f.DecodeRatio, f.PrefillRatio, f.FloorLoad)
	}
	return s
}
