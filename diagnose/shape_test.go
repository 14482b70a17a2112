package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// fromRecords builds evidence the way a run does: stage-1 signals computed from the records
// by package stats, plus the given engine signals.
func fromRecords(engine string, rs []record.Record, slo []contract.Objective, extra ...sig) *evidence.Evidence {
	res := stats.Compute(rs, stats.Options{Start: t0})
	ev := evidence.New()
	ev.Run.StartedAt = t0
	ev.Run.Engine = engine
	res.Apply(ev)
	for _, s := range extra {
		st, src := stageOf(s.name)
		ev.Add(evidence.Signal{Name: s.name, Value: s.v, Stage: st, Source: src, Phase: evidence.PhaseWarm})
	}
	return Diagnose(ev, rs, Options{Objectives: slo, Resamples: 50})
}

// task is one warm task sent at sec seconds: first token after ttft, n one-token events gap
// apart.
func task(i int, sec float64, ttft, gap time.Duration, n int) record.Record {
	r := record.Record{Seq: i, Task: "chat", Phase: record.PhaseWarm, Status: record.StatusOK, Accepted: true, Attempts: 1,
		PromptTokens: 100, OutputTokens: n, TokenSource: record.TokensUsage}
	r.ScheduledAt = t0.Add(time.Duration(sec * float64(time.Second)))
	r.SentAt = r.ScheduledAt
	r.HeadersAt = r.SentAt.Add(2 * time.Millisecond)
	for k := 0; k < n; k++ {
		r.ChunkUS = append(r.ChunkUS, (ttft + time.Duration(k)*gap).Microseconds())
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.FirstTokenAt = r.SentAt.Add(ttft)
	r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[n-1]) * time.Microsecond)
	r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
	return r
}

func reject(r *record.Record, why string) { r.Accepted, r.Reasons = false, append(r.Reasons, why) }

func fail(r *record.Record, status, class, msg string) {
	r.Status, r.ErrorClass, r.Error = status, class, msg
	r.FirstTokenAt, r.LastTokenAt, r.ChunkUS, r.ChunkTokens, r.OutputTokens = time.Time{}, time.Time{}, nil, nil, 0
	reject(r, "error: "+status)
}

// TestEvidenceEveryServerGives: each case injects one cause into the records (and only
// what that engine would expose); the expectation is written from the cause.
func TestEvidenceEveryServerGives(t *testing.T) {
	ttftSLO := []contract.Objective{{Metric: contract.MetricTTFT, Quantile: 0.99, Limit: 1000 * time.Millisecond}}
	tests := []struct {
		name      string
		ev        func() *evidence.Evidence
		wantOwner evidence.Layer // "" = none
		wantID    string         // a finding that must be present ("" = none required)
		verdict   []string       // substrings of the verdict
		notID     []string       // findings that must not be warn or above
	}{
		{
			// llama.cpp with one slot, four tasks always in flight: each waits ~3 services.
			name: "too few slots",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 60; i++ {
					r := task(i, float64(i), 1800*time.Millisecond, 30*time.Millisecond, 20)
					r.InFlight = 3
					r.Server = &record.ServerTimings{PrefillUS: 150_000, DecodeUS: 570_000, PromptN: 100}
					if i%2 == 0 {
						reject(&r, "slo ttft max")
					}
					rs = append(rs, r)
				}
				return fromRecords("llamacpp", rs, ttftSLO, sig{evidence.SigRunningMean, 1}, sig{evidence.SigRunningMax, 1}, sig{evidence.SigWaitingMean, 0.2})
			},
			wantOwner: evidence.LayerScheduling, wantID: "admission-queue",
			verdict: []string{"queue"},
		},
		{
			// The same waits seen from the client alone (no timings, no /metrics): tasks sent
			// to an idle server start in 150 ms, the rest in 1.8 s. A wait in front of the
			// first token, but the client cannot say it is for admission: no owner.
			name: "a wait only the client saw",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 60; i++ {
					ttft, inf := 1800*time.Millisecond, 3
					if i%6 == 0 {
						ttft, inf = 150*time.Millisecond, 0
					}
					r := task(i, float64(i), ttft, 30*time.Millisecond, 20)
					r.InFlight = inf
					if i%2 == 1 {
						reject(&r, "slo ttft max")
					}
					rs = append(rs, r)
				}
				return fromRecords("", rs, ttftSLO)
			},
			wantID: "admission-queue",
		},
		{
			// A proxy buffers each response whole: every event arrives within microseconds.
			name: "buffering proxy, no /metrics",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 60; i++ {
					r := task(i, float64(i), 1200*time.Millisecond, 3*time.Microsecond, 32)
					if i%3 == 0 {
						reject(&r, "slo ttft max")
					}
					rs = append(rs, r)
				}
				return fromRecords("", rs, ttftSLO)
			},
			wantOwner: evidence.LayerApplication, wantID: "client-server-gap",
		},
		{
			// Every prompt is longer than a slot: llama.cpp refuses each in-stream.
			name: "every prompt longer than a slot",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 40; i++ {
					r := task(i, float64(i)/4, 5*time.Millisecond, time.Millisecond, 1)
					fail(&r, record.StatusStreamError, record.ErrStreamEvent, `error event: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"invalid_request_error"}`)
					rs = append(rs, r)
				}
				return fromRecords("llamacpp", rs, ttftSLO)
			},
			wantOwner: evidence.LayerMemory, wantID: "context-exhausted",
			verdict: []string{"Every warm task failed", "context exhausted ×40", "exceeds the available context size", "-c"},
		},
		{
			// 22% of tasks lost to connections the server closed; everything else healthy.
			name: "connection errors",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 100; i++ {
					r := task(i, float64(i)/2, 80*time.Millisecond, 10*time.Millisecond, 20)
					if i%9 == 0 || i%10 == 3 {
						fail(&r, record.StatusConnError, record.ErrConn, "EOF")
					}
					rs = append(rs, r)
				}
				return fromRecords("llamacpp", rs, ttftSLO)
			},
			wantOwner: evidence.LayerApplication, wantID: "errors-connection",
			verdict: []string{"Most rejected tasks were errors", "connection ×"},
		},
		{
			// The example contract's JSON checks reject a third of a healthy run's outputs.
			name: "rejections are output checks",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 90; i++ {
					r := task(i, float64(i)/3, 80*time.Millisecond, 10*time.Millisecond, 20)
					if i%3 == 0 {
						reject(&r, "check json")
					}
					rs = append(rs, r)
				}
				return fromRecords("vllm", rs, ttftSLO, sig{evidence.SigWaitingMean, 0}, sig{evidence.SigRunningMean, 2}, sig{evidence.SigKVUsageMax, 0.2})
			},
			verdict: []string{"Most rejected tasks failed output checks", "check json ×30", "Nothing limits accepted tasks"},
		},
		{
			// Each new task's prefill runs inside the running streams' decode steps.
			name: "decode stalled by prefills",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for s := 0; s < 6; s++ { // six long streams, staggered, each 200 events
					r := task(s, float64(s)*0.3, 60*time.Millisecond, 25*time.Millisecond, 200)
					rs = append(rs, r)
				}
				// every 0.5 s a task arrives; its 150 ms prefill stalls every running stream
				var firsts []time.Duration
				for k := 1; k < 20; k++ {
					sent := time.Duration(k) * 500 * time.Millisecond
					o := task(100+k, sent.Seconds(), 150*time.Millisecond, 25*time.Millisecond, 8)
					rs = append(rs, o)
					firsts = append(firsts, sent+150*time.Millisecond)
				}
				for s := 0; s < 6; s++ {
					r := &rs[s]
					r.ChunkUS = r.ChunkUS[:0]
					at := time.Duration(float64(s)*0.3*float64(time.Second)) + 60*time.Millisecond
					fi := 0
					for k := 0; k < 200; k++ {
						next := at + 25*time.Millisecond
						if fi < len(firsts) && firsts[fi] > at && firsts[fi] <= next+150*time.Millisecond {
							next = firsts[fi] // this step held the prefill
							fi++
						}
						if k > 0 {
							at = next
						}
						for fi < len(firsts) && firsts[fi] <= at {
							fi++
						}
						r.ChunkUS = append(r.ChunkUS, (at - time.Duration(float64(s)*0.3*float64(time.Second))).Microseconds())
					}
					r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[199]) * time.Microsecond)
					r.DoneAt = r.LastTokenAt
					reject(r, "slo itl p99")
				}
				return fromRecords("llamacpp", rs, []contract.Objective{{Metric: contract.MetricITL, Quantile: 0.99, Limit: 100 * time.Millisecond}}, sig{evidence.SigRunningMean, 3}, sig{evidence.SigInServiceMean, 3})
			},
			wantOwner: evidence.LayerScheduling, wantID: "prefill-stall",
		},
		{
			// Long prompts on an idle server: TTFT is the prefill itself, 2 ms per token.
			name: "compute-bound prefill",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 40; i++ {
					n := 1000 + 100*(i%10)
					r := task(i, float64(i)*5, time.Duration(30+2*n)*time.Millisecond, 20*time.Millisecond, 10)
					r.PromptTokens = n
					reject(&r, "slo ttft max")
					rs = append(rs, r)
				}
				return fromRecords("vllm", rs, ttftSLO)
			},
			wantOwner: evidence.LayerKernel, wantID: "prefill-compute",
		},
		{
			// A closed loop starts 16 tasks at once: the first served are as fast as warm
			// ones, the rest queue behind them. No warm-up on the request path.
			name: "start burst is not a cold start",
			ev: func() *evidence.Evidence {
				var rs []record.Record
				for i := 0; i < 16; i++ {
					r := task(i, 0, time.Duration(100+150*i)*time.Millisecond, 20*time.Millisecond, 20)
					r.Phase, r.InFlight = record.PhaseCold, i
					if i > 6 {
						reject(&r, "slo ttft max")
					}
					rs = append(rs, r)
				}
				for i := 0; i < 80; i++ {
					r := task(16+i, 3+float64(i)/4, 100*time.Millisecond, 20*time.Millisecond, 20)
					r.InFlight = 15
					rs = append(rs, r)
				}
				ev := fromRecords("vllm", rs, ttftSLO, sig{evidence.SigServerTTFTP50, 95})
				return ev
			},
			notID: []string{"cold-start"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev()
			for _, f := range ev.Findings {
				t.Logf("  %s %s %s conf %.2f: %s", f.Severity, f.ID, f.Layer, f.Confidence, f.Symptom)
			}
			got := evidence.Layer("")
			if ev.OwnerLayer != nil {
				got = *ev.OwnerLayer
			}
			if got != tc.wantOwner {
				t.Errorf("owner %q, want %q: %s", got, tc.wantOwner, ev.Verdict)
			}
			if tc.wantID != "" {
				found := false
				for _, f := range ev.Findings {
					if f.ID == tc.wantID {
						found = true
						checkFinding(t, f)
						if tc.wantOwner != "" && ev.OwnerLayer != nil && f.Layer == *ev.OwnerLayer && ev.Findings[0].ID != f.ID {
							t.Errorf("top finding %s, want %s", ev.Findings[0].ID, f.ID)
						}
					}
				}
				if !found {
					t.Errorf("no %s finding", tc.wantID)
				}
			}
			for _, id := range tc.notID {
				for _, f := range ev.Findings {
					if f.ID == id && f.Severity != evidence.SeverityInfo {
						t.Errorf("finding %s at %s: %s", id, f.Severity, f.Symptom)
					}
				}
			}
			for _, s := range tc.verdict {
				if !strings.Contains(ev.Verdict+" "+strings.Join(predictions(ev), " "), s) {
					t.Errorf("verdict lacks %q: %s", s, ev.Verdict)
				}
			}
			// llama.cpp is never asked for a vLLM flag.
			if ev.Run.Engine == "llamacpp" {
				for _, f := range ev.Findings {
					if strings.Contains(f.Prediction+f.NextProbe, "vllm") || strings.Contains(f.Prediction+f.NextProbe, "--max-num-seqs") {
						t.Errorf("%s speaks vLLM to a llama.cpp user: %s / %s", f.ID, f.Prediction, f.NextProbe)
					}
				}
			}
		})
	}
}

func predictions(ev *evidence.Evidence) []string {
	var out []string
	for _, f := range ev.Findings {
		out = append(out, f.Prediction)
	}
	return out
}

// TestSecondFaultStillReported: a slow scheduler next to a full KV cache: the memory layer
// owns the queue, and the idle device between steps is still reported on its own.
func TestSecondFaultStillReported(t *testing.T) {
	ev := build(sig{evidence.SigKVUsageMax, 1}, sig{evidence.SigKVUsageMean, 0.97}, sig{evidence.SigPreemptionRate, 2},
		sig{evidence.SigWaitingMean, 15}, sig{evidence.SigRunningMean, 40}, sig{evidence.SigGPUUtil, 0.5}, sig{evidence.SigSMActive, 0.35},
		sig{evidence.SigTTFTP99, 3000}, sig{evidence.SigAcceptanceRate, 0.6})
	Diagnose(ev, recs(200, rejectEvery(3, "slo ttft max")), Options{Objectives: slo})
	if ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerMemory {
		t.Fatalf("owner %v: %s", ev.OwnerLayer, ev.Verdict)
	}
	for _, f := range ev.Findings {
		if f.ID == "scheduler-bound" {
			if f.Severity == evidence.SeverityInfo {
				t.Errorf("scheduler finding dropped to info: %+v", f)
			}
			return
		}
	}
	t.Errorf("slow scheduler not reported next to the full cache: %+v", ev.Findings)
}
