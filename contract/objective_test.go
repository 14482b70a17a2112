package contract

import (
	"slices"
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

const objectivesContract = `
name: o
version: 1
arrival: {process: poisson, rate: 1}
requests: 1
tasks:
  - name: chat
    prompt_tokens: 5
  - name: docs
    prompt_tokens: 5
    slo:
      ttft: {p90: 4s, max: 8s}
      tpot: {p95: 30ms}
slo:
  ttft: {p50: 200ms, p99: 1s, max: 2s}
  itl: {p95: 40ms}
  tpot: {p95: 15ms}
  e2e: {p90: 9s}
`

func TestObjectives(t *testing.T) {
	c, err := Parse([]byte(objectivesContract), "o.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(os []Objective) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.String())
		}
		return out
	}
	want := []string{
		"TTFT p50 ≤ 200ms", "TTFT p99 ≤ 1s", "TTFT max ≤ 2s", "ITL p95 ≤ 40ms", "TPOT p95 ≤ 15ms", "E2E p90 ≤ 9s",
		"TTFT p90 (task docs) ≤ 4s", "TTFT max (task docs) ≤ 8s", "TPOT p95 (task docs) ≤ 30ms",
	}
	if got := names(c.Objectives()); !slices.Equal(got, want) {
		t.Errorf("Objectives:\n got %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		task string
		want []string
	}{
		{"chat", []string{"TTFT p50 ≤ 200ms", "TTFT p99 ≤ 1s", "TTFT max ≤ 2s", "ITL p95 ≤ 40ms", "TPOT p95 ≤ 15ms", "E2E p90 ≤ 9s"}},
		// docs replaces TTFT and TPOT with its own and keeps the global ITL and E2E.
		{"docs", []string{"TTFT p90 (task docs) ≤ 4s", "TTFT max (task docs) ≤ 8s", "ITL p95 ≤ 40ms", "TPOT p95 (task docs) ≤ 30ms", "E2E p90 ≤ 9s"}},
		{"unknown", []string{"TTFT p50 ≤ 200ms", "TTFT p99 ≤ 1s", "TTFT max ≤ 2s", "ITL p95 ≤ 40ms", "TPOT p95 ≤ 15ms", "E2E p90 ≤ 9s"}},
	} {
		if got := names(c.ObjectivesFor(tc.task)); !slices.Equal(got, tc.want) {
			t.Errorf("ObjectivesFor(%s):\n got %q\nwant %q", tc.task, got, tc.want)
		}
		// ObjectivesFor is exactly the objectives that govern the task type.
		var governed []Objective
		for _, o := range c.Objectives() {
			if c.Governs(o, tc.task) {
				governed = append(governed, o)
			}
		}
		if a, b := names(governed), names(c.ObjectivesFor(tc.task)); !sameSet(a, b) {
			t.Errorf("%s: Governs gives %q, ObjectivesFor %q", tc.task, a, b)
		}
		if a, b := names(ObjectivesOf(c.Objectives(), tc.task)), names(c.ObjectivesFor(tc.task)); !sameSet(a, b) {
			t.Errorf("%s: ObjectivesOf gives %q, ObjectivesFor %q", tc.task, a, b)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestObjectiveNames(t *testing.T) {
	for _, tc := range []struct {
		o                    Objective
		form, signal, reason string
	}{
		{Objective{Metric: MetricTTFT, Quantile: 0.99, Limit: time.Second}, "p99", "client.ttft_p99_ms", "slo ttft max 1s"},
		{Objective{Metric: MetricITL, Quantile: 0.9, Limit: 50 * time.Millisecond}, "p90", "client.itl_p90_ms", "slo itl max 50ms"},
		{Objective{Metric: MetricTPOT, Quantile: 0.95, Limit: 15 * time.Millisecond, Task: "x"}, "p95", "client.tpot_p95_ms", "slo tpot max 15ms"},
		{Objective{Metric: MetricE2E, Limit: 30 * time.Second}, "max", "client.e2e_max_ms", "slo e2e max 30s"},
	} {
		if got := tc.o.Form(); got != tc.form {
			t.Errorf("%v: form %q, want %q", tc.o, got, tc.form)
		}
		if got := tc.o.Signal(); got != tc.signal {
			t.Errorf("%v: signal %q, want %q", tc.o, got, tc.signal)
		}
		if got := tc.o.Reason(); got != tc.reason {
			t.Errorf("%v: reason %q, want %q", tc.o, got, tc.reason)
		}
	}
}

func TestObjectiveExceeded(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// TTFT 300 ms, then 4 tokens in events 20, 20 and 90 ms apart: TPOT (130/4), worst gap 90.
	r := record.Record{Status: record.StatusOK, ScheduledAt: t0, SentAt: t0, FirstTokenAt: t0.Add(ms(300)),
		LastTokenAt: t0.Add(ms(430)), DoneAt: t0.Add(ms(440)), OutputTokens: 5,
		ChunkUS: []int64{300000, 320000, 340000, 430000}, ChunkTokens: []int{1, 1, 1, 2}}
	failed := r
	failed.Status = record.StatusHTTPError
	for _, tc := range []struct {
		o    Objective
		r    *record.Record
		want bool
	}{
		{Objective{Metric: MetricTTFT, Limit: ms(299)}, &r, true},
		{Objective{Metric: MetricTTFT, Limit: ms(300)}, &r, false},
		{Objective{Metric: MetricITL, Limit: ms(44)}, &r, true}, // 90 ms over 2 tokens
		{Objective{Metric: MetricITL, Limit: ms(45)}, &r, false},
		{Objective{Metric: MetricTPOT, Limit: ms(32)}, &r, true}, // 130/4 = 32.5
		{Objective{Metric: MetricTPOT, Limit: ms(33)}, &r, false},
		{Objective{Metric: MetricE2E, Limit: ms(439)}, &r, true},
		{Objective{Metric: MetricE2E, Quantile: 0.5, Limit: ms(1)}, &r, false}, // a percentile holds over many
		{Objective{Metric: MetricTTFT, Limit: ms(1)}, &failed, false},          // no meaningful timing
	} {
		if got := tc.o.Exceeded(tc.r); got != tc.want {
			t.Errorf("%v on %s: %v, want %v", tc.o, tc.r.Status, got, tc.want)
		}
	}
}

// TestObjectiveMultiStep: a multi-step task is held to TTFT and TPOT call by call (each from
// its own due time), as acceptance judges each call, and to E2E as a whole.
func TestObjectiveMultiStep(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	call := func(i int, due time.Time, ttft time.Duration) record.Record {
		return record.Record{Status: record.StatusOK, ScheduledAt: due, SentAt: due, FirstTokenAt: due.Add(ttft),
			LastTokenAt: due.Add(ttft + ms(100)), DoneAt: due.Add(ttft + ms(100)), OutputTokens: 11, Step: &record.StepRef{Index: i}}
	}
	steps := []record.Record{call(0, t0, ms(100)), call(1, t0.Add(ms(500)), ms(5000))}
	task := record.Record{Status: record.StatusOK, Steps: 2, ScheduledAt: t0, SentAt: t0, FirstTokenAt: t0.Add(ms(100)),
		LastTokenAt: t0.Add(ms(5600)), DoneAt: t0.Add(ms(5600)), OutputTokens: 22}
	task.AttachSteps(steps)
	var ttfts []time.Duration
	MetricTTFT.Each(&task, func(d time.Duration, _ int) { ttfts = append(ttfts, d) })
	if len(ttfts) != 2 || ttfts[1] != ms(5000) {
		t.Errorf("TTFTs %v, want each call's: [100ms 5s]", ttfts)
	}
	for _, tc := range []struct {
		o    Objective
		want bool
	}{
		{Objective{Metric: MetricTTFT, Limit: 2 * time.Second}, true}, // the second call's 5 s
		{Objective{Metric: MetricTTFT, Limit: 6 * time.Second}, false},
		{Objective{Metric: MetricE2E, Limit: 5 * time.Second}, true}, // the whole task, 5.6 s
	} {
		if got := tc.o.Exceeded(&task); got != tc.want {
			t.Errorf("%v: exceeded %v, want %v", tc.o, got, tc.want)
		}
	}
}
