// Package objectives holds the table test that every objective a contract can state — each
// metric (TTFT, ITL, TPOT, E2E) in each form (p50, p90, p95, p99, max), in the global slo
// block or in a task type's own — reaches the verdict when a run misses it, and that pel's
// readers of a run (the diagnosis and its report, pel compare, pel sweep) show the same value
// and limit for it.
package objectives

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sweep"
)

// The injected run: every task's TTFT is about 100 ms, each of its 15 token gaps about
// 10 ms (lognormal, σ 0.3), so TPOT is about 10 ms and E2E about 250 ms. The objective
// under test is set at half its metric's median: every form of it is missed by most tasks,
// far past what sampling explains. Every other objective the contract states is set a
// hundred times above the same median: met by every task.
var median = map[contract.Metric]time.Duration{
	contract.MetricTTFT: 100 * time.Millisecond,
	contract.MetricITL:  10 * time.Millisecond,
	contract.MetricTPOT: 10 * time.Millisecond,
	contract.MetricE2E:  250 * time.Millisecond,
}

// slo is one metric's bound in a contract's slo block.
func slo(m contract.Metric, form string, limit time.Duration) string {
	return fmt.Sprintf("%s: {%s: %dms}", m, form, limit.Milliseconds())
}

// contractFor writes the contract: the objective under test (metric m, form, in task docs'
// own block when perType), and a met objective on every other metric.
func contractFor(m contract.Metric, form string, perType bool) string {
	var global, docs []string
	for _, x := range contract.Metrics {
		if x == m {
			continue
		}
		global = append(global, slo(x, "p99", 100*median[x]))
	}
	tested := slo(m, form, median[m]/2)
	docsBlock := ""
	if perType {
		// The global block bounds m loosely; docs replaces it with the bound under test.
		global = append(global, slo(m, form, 100*median[m]))
		docs = append(docs, tested)
		docsBlock = "\n    slo: {" + strings.Join(docs, ", ") + "}"
	} else {
		global = append(global, tested)
	}
	return `name: objectives
version: 1
arrival: {process: constant, rate: 10}
requests: 800
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 16}
  - name: docs
    prompt_tokens: 16
    output_tokens: 16` + docsBlock + `
slo: {` + strings.Join(global, ", ") + `}
`
}

// runFor writes a judged run: 400 chat and 400 docs tasks, each judged by the contract
// (a task over a max is rejected, as a run's judge rejects it).
func runFor(t *testing.T, yaml string) string {
	t.Helper()
	c, err := contract.Parse([]byte(yaml), "objectives.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := append(comparetest.Records(comparetest.Spec{N: 400, Seed: 1, Task: "chat", Start: t0, Interval: 50 * time.Millisecond}),
		comparetest.Records(comparetest.Spec{N: 400, Seed: 2, Task: "docs", FirstSeq: 400, Start: t0.Add(25 * time.Millisecond), Interval: 50 * time.Millisecond})...)
	for i := range recs {
		c.Judge(&recs[i], "")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := comparetest.WriteRun(dir, yaml, recs, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEveryObjectiveReachesTheVerdict(t *testing.T) {
	forms := []string{"p50", "p90", "p95", "p99", "max"}
	for _, m := range contract.Metrics {
		for _, form := range forms {
			for _, perType := range []bool{false, true} {
				scope := "global"
				if perType {
					scope = "task docs"
				}
				t.Run(fmt.Sprintf("%s_%s_%s", m, form, strings.ReplaceAll(scope, " ", "_")), func(t *testing.T) {
					t.Parallel()
					checkObjective(t, m, form, perType)
				})
			}
		}
	}
}

func checkObjective(t *testing.T, m contract.Metric, form string, perType bool) {
	yaml := contractFor(m, form, perType)
	dir := runFor(t, yaml)
	name := strings.ToUpper(string(m)) + " " + form
	if perType {
		name += " (task docs)"
	}
	ev, _, err := ladder.Analyze(dir, ladder.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The diagnosis: only the objective under test is missed, and the verdict names it.
	var tested *evidence.Objective
	for i := range ev.Workload.Objectives {
		o := &ev.Workload.Objectives[i]
		if o.Name == name {
			tested = o
			continue
		}
		if o.Status != evidence.ObjectiveMet {
			t.Errorf("%s is %s (value %v, limit %v): only %s is missed", o.Name, o.Status, deref(o.ValueMs), o.LimitMs, name)
		}
	}
	if tested == nil {
		t.Fatalf("no objective %q among %+v", name, ev.Workload.Objectives)
	}
	if !tested.Missed() || tested.ValueMs == nil {
		t.Fatalf("%s: %s, want missed (%+v)", name, tested.Status, *tested)
	}
	if strings.Contains(ev.Verdict, "Nothing limits") || !strings.Contains(ev.Verdict, name) {
		t.Errorf("verdict does not name %s as missed: %s", name, ev.Verdict)
	}
	if ev.Decision == nil || len(ev.Decision.Missed) != 1 || ev.Decision.Missed[0] != name {
		t.Errorf("decision %+v: want %s its one missed objective", ev.Decision, name)
	}
	t.Logf("verdict: %s", ev.Verdict)
	value, limit := *tested.ValueMs, tested.LimitMs
	if want := float64(median[m].Milliseconds()) / 2; limit != want {
		t.Errorf("%s limit %v ms, want %v", name, limit, want)
	}

	// pel report: the strip's line for the objective shows the same value and limit.
	var text bytes.Buffer
	if err := report.Text(&text, ev); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), name+"  ") {
			line = l
			break
		}
	}
	if !strings.Contains(line, fmt.Sprintf(" %s ms", report.Num(value))) || !strings.Contains(line, fmt.Sprintf("limit of %s ms", report.Num(limit))) || !strings.Contains(line, "missed") {
		t.Errorf("report line %q: want %s ms missed against its limit of %s ms", line, report.Num(value), report.Num(limit))
	}

	// pel compare (the run against itself) and pel sweep (the run as a point): the same
	// value and limit for the objective, from their own summaries of the records.
	run, err := compare.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := compare.Options{Resamples: 100}
	res, err := compare.Compare(run, run, o)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := sweep.CheckSLO(run, o)
	if err != nil {
		t.Fatal(err)
	}
	wantScope := "all tasks"
	if perType {
		wantScope = "task docs"
	}
	// With a task type's own bound, the global objective of the same metric holds the other
	// types' tasks alone: every reader shows the same value for it over them.
	if perType {
		global := strings.ToUpper(string(m)) + " " + form
		var g *evidence.Objective
		for i := range ev.Workload.Objectives {
			if ev.Workload.Objectives[i].Name == global {
				g = &ev.Workload.Objectives[i]
			}
		}
		if g == nil || g.ValueMs == nil || g.Status != evidence.ObjectiveMet {
			t.Fatalf("global %s over the tasks it holds: %+v, want met", global, g)
		}
		scope := "tasks held to the global " + string(m) + " bounds"
		for _, src := range []struct {
			name   string
			checks []compare.Check
		}{{"pel compare", res.SLO}, {"pel sweep", pt.Checks}} {
			found := false
			for _, c := range src.checks {
				if c.Signal == g.Signal && c.Scope == scope {
					found = true
					if c.Candidate == nil || *c.Candidate != *g.ValueMs || c.Bound != g.LimitMs {
						t.Errorf("%s: global %s over the other types' tasks %v (limit %v), the diagnosis %v (limit %v)", src.name, global, deref(c.Candidate), c.Bound, *g.ValueMs, g.LimitMs)
					}
				}
			}
			if !found {
				t.Errorf("%s: no check of the global %s scoped to %q", src.name, global, scope)
			}
		}
	}
	for _, src := range []struct {
		name   string
		checks []compare.Check
	}{{"pel compare", res.SLO}, {"pel sweep", pt.Checks}} {
		var ch *compare.Check
		for i := range src.checks {
			c := &src.checks[i]
			if c.Signal == tested.Signal && c.Scope == wantScope && c.Bound == limit {
				ch = c
			}
		}
		if ch == nil {
			t.Errorf("%s: no check of %s (%s, scope %s) among %+v", src.name, name, tested.Signal, wantScope, src.checks)
			continue
		}
		if ch.Candidate == nil || *ch.Candidate != value {
			t.Errorf("%s: %s value %v, the diagnosis %v", src.name, name, deref(ch.Candidate), value)
		}
		wantStatus := compare.StatusFail
		switch {
		case form == "max":
			wantStatus = compare.StatusPerRequest
		case src.name == "pel compare":
			wantStatus = compare.StatusBaselineFails // the run against itself breaks it on both sides
		}
		if ch.Status != wantStatus {
			t.Errorf("%s: %s status %s, want %s (%s)", src.name, name, ch.Status, wantStatus, ch.Note)
		}
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// The injected values are what the test says they are: the medians the objectives are set
// against hold in the records (within 10%), so a limit at half of one is missed by most
// tasks and one at a hundred times is met by all.
func TestInjectedMedians(t *testing.T) {
	recs := comparetest.Records(comparetest.Spec{N: 400, Seed: 1})
	vals := map[contract.Metric][]float64{}
	for i := range recs {
		for _, m := range contract.Metrics {
			m.Each(&recs[i], func(d time.Duration, n int) {
				for k := 0; k < n; k++ {
					vals[m] = append(vals[m], float64(d)/float64(time.Millisecond))
				}
			})
		}
	}
	for _, m := range contract.Metrics {
		v := vals[m]
		if len(v) == 0 {
			t.Fatalf("%s: no values", m)
		}
		med := medianOf(v)
		want := float64(median[m].Milliseconds())
		if math.Abs(med-want) > 0.1*want {
			t.Errorf("%s median %.1f ms, the test assumes %.0f", m, med, want)
		}
	}
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
