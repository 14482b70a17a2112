package diagnose

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// TestBudgetPerTaskSpans: half the tasks wait 1.5 s for their first token. Their engine
// spans say where: in the engine's queue (scheduling), or before the engine saw them (its
// span's TTFT is 150 ms: application). The run-level means are the same in both runs, so
// only the per-task join tells them apart.
func TestBudgetPerTaskSpans(t *testing.T) {
	var rs []record.Record
	for i := 0; i < 80; i++ {
		ttft := 150 * time.Millisecond
		if i%2 == 0 {
			ttft = 1500 * time.Millisecond
		}
		r := task(i, float64(i)/4, ttft, 10*time.Millisecond, 20)
		if i%2 == 0 {
			reject(&r, "slo ttft max 1s")
		}
		rs = append(rs, r)
	}
	o := Options{Objectives: []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}, Resamples: 50}
	for _, tc := range []struct {
		name string
		slow record.EngineSpan
		want evidence.Layer
	}{
		{"queued in the engine", record.EngineSpan{QueueUS: 1300e3, PrefillUS: 50e3, TTFTUS: 1350e3}, evidence.LayerScheduling},
		{"held before the engine", record.EngineSpan{QueueUS: 100e3, PrefillUS: 50e3, TTFTUS: 150e3}, evidence.LayerApplication},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := map[*record.Record]record.EngineSpan{}
			for i := range rs {
				spans[&rs[i]] = record.EngineSpan{QueueUS: 90e3, PrefillUS: 50e3, TTFTUS: 140e3}
				if i%2 == 0 {
					spans[&rs[i]] = tc.slow
				}
			}
			res := stats.Compute(rs, stats.Options{Start: t0})
			ev := evidence.New()
			ev.Run.StartedAt = t0
			ev.Run.Engine = "vllm"
			res.Apply(ev)
			for _, s := range []sig{{evidence.SigServerTTFTMean, 745}, {evidence.SigServerQueueMean, 700}, {evidence.SigServerPrefillMean, 50}} {
				st, src := stageOf(s.name)
				ev.Add(evidence.Signal{Name: s.name, Value: s.v, Stage: st, Source: src, Phase: evidence.PhaseWarm})
			}
			ev = DiagnoseTasks(ev, Tasks{All: rs, Spans: spans}, o)
			x := ev.Budget.Excess
			if x == nil || x.Owner != tc.want {
				t.Fatalf("excess %+v, want owner %s", x, tc.want)
			}
		})
	}
}
