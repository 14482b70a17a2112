package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// TestKVFullQueueWithoutPreemption: requests wait while the block pool stays full and the
// engine never preempts. Sequences hold 40 tokens (30 of prompt, half of 20 generated). In
// blocks of 16 they hold 48 slots: the pool is full of tokens, the memory layer. In blocks
// of 128 each holds 128 slots, 69% of them empty: still memory, and the finding says the
// block size wastes it. With the pool at 50% and every allowed sequence running, the queue
// is the scheduler's cap: no memory finding.
func TestKVFullQueueWithoutPreemption(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kvMean    float64
		runMax    float64
		blockSize string
		want      bool
		waste     bool
	}{
		{"full pool, small blocks", 0.97, 40, "16", true, false},
		{"full pool, blocks much larger than sequences", 0.98, 40, "128", true, true},
		{"half-full pool, sequence cap reached", 0.5, 256, "16", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(sig{evidence.SigKVUsageMean, tc.kvMean}, sig{evidence.SigKVUsageMax, tc.kvMean}, sig{evidence.SigWaitingMean, 8},
				sig{evidence.SigRunningMean, tc.runMax * 0.9}, sig{evidence.SigRunningMax, tc.runMax}, sig{evidence.SigPreemptionRate, 0},
				sig{evidence.SigTTFTP99, 2500}, sig{evidence.SigAcceptanceRate, 0.7})
			ev.Run.Engine = "vllm"
			ev.Run.EngineConfig = map[string]string{evidence.ConfigMaxNumSeqs: "256", evidence.ConfigBlockSize: tc.blockSize}
			rs := recs(200, func(i int, t float64, r *record.Record) {
				r.PromptTokens = 30
				if i%3 == 0 {
					r.Accepted, r.Reasons = false, []string{"slo ttft max"}
				}
			})
			Diagnose(ev, rs, Options{Objectives: slo, Resamples: 20})
			var f *evidence.Finding
			for i := range ev.Findings {
				if ev.Findings[i].ID == kvFullQueue.id {
					f = &ev.Findings[i]
				}
			}
			if (f != nil) != tc.want {
				t.Fatalf("kv-full-queue finding %v, want %v: %s", f != nil, tc.want, ev.Verdict)
			}
			if !tc.want {
				return
			}
			if ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerMemory {
				t.Errorf("owner %v, want memory: %s", ev.OwnerLayer, ev.Verdict)
			}
			if got := strings.Contains(f.Symptom, "empty slots"); got != tc.waste {
				t.Errorf("block waste named %v, want %v: %s", got, tc.waste, f.Symptom)
			}
		})
	}
}

// TestKVFullQueueOutranksAdmission: with the pool full and no sequence cap reported, the
// queue the client sees (70% of TTFT) is the pool's: the admission rule, which would raise
// the sequence cap, defers to the memory finding, and the verdict names one layer.
func TestKVFullQueueOutranksAdmission(t *testing.T) {
	ev := build(sig{evidence.SigKVUsageMean, 0.9}, sig{evidence.SigKVUsageMax, 1}, sig{evidence.SigWaitingMean, 8},
		sig{evidence.SigRunningMean, 50}, sig{evidence.SigRunningMax, 60}, sig{evidence.SigPreemptionRate, 0},
		sig{evidence.SigQueueShare, 0.7}, sig{evidence.SigTTFTP99, 2500}, sig{evidence.SigAcceptanceRate, 0.7})
	ev.Run.Engine = "vllm"
	Diagnose(ev, recs(200, rejectEvery(3, "slo ttft max")), Options{Objectives: slo, Resamples: 20})
	if ev.OwnerLayer == nil || *ev.OwnerLayer != evidence.LayerMemory {
		t.Fatalf("owner %v, want memory: %s", ev.OwnerLayer, ev.Verdict)
	}
	for _, f := range ev.Findings {
		if f.ID == admissionQueue.id && f.Severity != evidence.SeverityInfo {
			t.Errorf("admission-queue at %s beside the full pool: %s", f.Severity, f.Symptom)
		}
	}
}

// TestEngineQueueOutsideItsTTFT: an engine (or an emulator serving vLLM's metric names)
// whose TTFT histogram starts at scheduling leaves its own queue out of it. The client's
// TTFT is then the engine's queue plus its TTFT: the wait is inside the engine, and no
// time is outside it. Without the queue's own figure the same gap is time outside, and
// where the engine's TTFT holds its queue (vLLM), the queue is not added twice.
func TestEngineQueueOutsideItsTTFT(t *testing.T) {
	base := []sig{{evidence.SigTTFTP50, 2000}, {evidence.SigTTFTP99, 2600}, {evidence.SigITLP50, 20}, {evidence.SigITLP99, 30},
		{evidence.SigAcceptanceRate, 1}, {evidence.SigTTFTFromSentP50, 2000}, {evidence.SigTokensPerChunk, 1},
		{evidence.SigServerTTFTP50, 140}, {evidence.SigWaitingMean, 12}, {evidence.SigKVUsageMax, 0.4}}
	for _, tc := range []struct {
		name    string
		extra   []sig
		gapRule bool
	}{
		// The engine's means say where its TTFT starts (engineTTFTClock): at scheduling,
		// TTFT mean = prefill mean, far under queue + prefill.
		{"the engine's queue closes the gap", []sig{{evidence.SigServerQueueP50, 1861},
			{evidence.SigServerTTFTMean, 140}, {evidence.SigServerPrefillMean, 140}, {evidence.SigServerQueueMean, 1861}}, false},
		{"no queue figure: the gap stands", nil, true},
		{"a queue too short to close it", []sig{{evidence.SigServerQueueP50, 200},
			{evidence.SigServerTTFTMean, 140}, {evidence.SigServerPrefillMean, 140}, {evidence.SigServerQueueMean, 200}}, true},
		// vLLM's TTFT starts at arrival and holds its queue already: adding the queue again
		// would hide a hold in front of the engine.
		{"a TTFT that holds the queue: the gap beyond it stands", []sig{{evidence.SigServerTTFTP50, 1000}, {evidence.SigServerQueueP50, 860},
			{evidence.SigServerTTFTMean, 1000}, {evidence.SigServerPrefillMean, 140}, {evidence.SigServerQueueMean, 860}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := Diagnose(build(append(append([]sig{}, base...), tc.extra...)...), recs(200, rejectEvery(4, "slo ttft p99")), Options{Objectives: slo, Resamples: 100})
			found := false
			for _, f := range ev.Findings {
				if f.ID == clientServerGap.id {
					found = true
				}
			}
			if found != tc.gapRule {
				t.Errorf("client-server gap finding: %v, want %v (verdict %q)", found, tc.gapRule, ev.Verdict)
			}
			if !tc.gapRule && ev.OwnerLayer != nil && *ev.OwnerLayer == evidence.LayerApplication {
				t.Errorf("the engine's own queue named application: %q", ev.Verdict)
			}
		})
	}
}

// TestShedBeforeTheEngine: a quarter of the tasks answered 503. When the engine, by its own
// metrics, never queued a request and ran under its limit, its admission refused nothing:
// something in front of it shed them (application). When the engine queued, the 503s are
// its admission's (scheduling).
func TestShedBeforeTheEngine(t *testing.T) {
	shed := func(i int, _ float64, r *record.Record) {
		if i%4 == 0 {
			r.Status, r.ErrorClass, r.HTTPStatus, r.Error = record.StatusHTTPError, record.ErrOverloaded, 503, "http 503"
			r.FirstTokenAt, r.LastTokenAt, r.ChunkUS, r.ChunkTokens, r.OutputTokens = time.Time{}, time.Time{}, nil, nil, 0
			r.Accepted, r.Reasons = false, []string{"error: http_error"}
		}
	}
	base := []sig{{evidence.SigTTFTP50, 90}, {evidence.SigTTFTP99, 200}, {evidence.SigITLP50, 20}, {evidence.SigITLP99, 30},
		{evidence.SigAcceptanceRate, 0.75}, {evidence.SigTTFTFromSentP50, 90}, {evidence.SigTokensPerChunk, 1},
		{evidence.SigErrorClassRate(record.ErrOverloaded), 0.25}, {evidence.SigKVUsageMax, 0.2}, {evidence.SigServerTTFTP50, 85}}
	for _, tc := range []struct {
		name          string
		engine        string
		waiting, runs float64
		want          string
		layer         evidence.Layer
	}{
		{"the engine had room", "vllm", 0, 2, shedBeforeEngine.id, evidence.LayerApplication},
		{"the engine queued", "vllm", 6, 8, "errors-overloaded", evidence.LayerScheduling},
		// Every slot ran at once, but an engine that queues when full never queued: it
		// cannot have refused.
		{"slots full, nothing queued, an engine that queues", "llamacpp", 0, 8, shedBeforeEngine.id, evidence.LayerApplication},
		// An engine that refuses at its concurrency cap could have.
		{"slots full, nothing queued, an engine that refuses", "tgi", 0, 8, "errors-overloaded", evidence.LayerScheduling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(append(append([]sig{}, base...), sig{evidence.SigWaitingMax, tc.waiting}, sig{evidence.SigRunningMax, tc.runs})...)
			ev.Run.Engine = tc.engine
			ev.Run.EngineConfig = map[string]string{evidence.ConfigMaxNumSeqs: "8"}
			ev = Diagnose(ev, recs(200, shed), Options{Objectives: slo, Resamples: 100})
			var got *evidence.Finding
			for i := range ev.Findings {
				if ev.Findings[i].ID == tc.want {
					got = &ev.Findings[i]
				}
				if tc.layer == evidence.LayerApplication && ev.Findings[i].ID == "errors-overloaded" {
					t.Errorf("the engine's admission blamed although it had room: %s", ev.Findings[i].Symptom)
				}
			}
			if got == nil {
				t.Fatalf("no %s finding; verdict %q", tc.want, ev.Verdict)
			}
			if ev.OwnerLayer != nil && *ev.OwnerLayer != tc.layer {
				t.Errorf("owner %s, want %s or none: %q", *ev.OwnerLayer, tc.layer, ev.Verdict)
			}
		})
	}
}

// TestWaitBeforeTheEngine: 84% of the time to first token passes before the engine starts
// the task (its per-request timings). When its own gauges say it never queued and had a
// free slot, the wait was in front of it (application), and the admission queue, which
// claims the engine ran at its ceiling, stays silent; when it queued, the queue is its
// admission's (scheduling).
func TestWaitBeforeTheEngine(t *testing.T) {
	late := func(_ int, _ float64, r *record.Record) {
		r.FirstTokenAt = r.SentAt.Add(800 * time.Millisecond)
		r.LastTokenAt = r.FirstTokenAt.Add(400 * time.Millisecond)
		r.DoneAt = r.LastTokenAt
		r.Accepted, r.Reasons = false, []string{"slo ttft p99"}
	}
	base := []sig{{evidence.SigTTFTP50, 800}, {evidence.SigTTFTP99, 900}, {evidence.SigITLP50, 20}, {evidence.SigITLP99, 30},
		{evidence.SigAcceptanceRate, 0}, {evidence.SigTTFTFromSentP50, 800}, {evidence.SigTokensPerChunk, 1},
		{evidence.SigQueueShare, 0.84}, {evidence.SigServiceTTFT, 120}, {evidence.SigKVUsageMax, 0.2},
		{evidence.SigInFlightMean, 1.2}, {evidence.SigRunningMean, 0.3}}
	for _, tc := range []struct {
		name          string
		waiting, runs float64
		want, not     string
		layer         evidence.Layer
	}{
		{"the engine had room", 0, 2, waitBeforeEngine.id, admissionQueue.id, evidence.LayerApplication},
		{"the engine queued", 3, 4, admissionQueue.id, waitBeforeEngine.id, evidence.LayerScheduling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(append(append([]sig{}, base...), sig{evidence.SigWaitingMax, tc.waiting}, sig{evidence.SigRunningMax, tc.runs})...)
			ev.Run.Engine = "llamacpp"
			ev.Run.EngineConfig = map[string]string{"slots": "4"}
			ev = Diagnose(ev, recs(200, late), Options{Objectives: slo, Resamples: 100})
			var got *evidence.Finding
			for i := range ev.Findings {
				f := &ev.Findings[i]
				if f.ID == tc.want {
					got = f
				}
				if f.ID == tc.not && f.Severity != evidence.SeverityInfo {
					t.Errorf("%s fired: %s", f.ID, f.Symptom)
				}
			}
			if got == nil {
				t.Fatalf("no %s finding; verdict %q", tc.want, ev.Verdict)
			}
			if tc.want == waitBeforeEngine.id && (!strings.Contains(got.Symptom, "800 ms") || !strings.Contains(got.Symptom, "120 ms")) {
				t.Errorf("the symptom does not set the client's 800 ms beside the engine's 120 ms: %s", got.Symptom)
			}
			if ev.OwnerLayer == nil || *ev.OwnerLayer != tc.layer {
				t.Errorf("owner %v, want %s: %q", ev.OwnerLayer, tc.layer, ev.Verdict)
			}
		})
	}
}

// TestRefusalsWhileTheQueueWasEmpty: the engine queued one request for a moment (waiting
// max 1), but the 503s came all through the run: an admission refuses only while its
// queue is at its bound, so refusals while it held nothing were made in front of it. When
// the queue held requests all the while, they may be its admission's.
func TestRefusalsWhileTheQueueWasEmpty(t *testing.T) {
	shed := func(i int, _ float64, r *record.Record) {
		if i%4 == 0 {
			r.Status, r.ErrorClass, r.HTTPStatus, r.Error = record.StatusHTTPError, record.ErrOverloaded, 503, "http 503"
			r.FirstTokenAt, r.LastTokenAt, r.ChunkUS, r.ChunkTokens, r.OutputTokens = time.Time{}, time.Time{}, nil, nil, 0
			r.DoneAt = r.SentAt.Add(2 * time.Millisecond)
			r.Accepted, r.Reasons = false, []string{"error: http_error"}
		}
	}
	base := []sig{{evidence.SigTTFTP50, 90}, {evidence.SigTTFTP99, 200}, {evidence.SigITLP50, 20}, {evidence.SigITLP99, 30},
		{evidence.SigAcceptanceRate, 0.75}, {evidence.SigTTFTFromSentP50, 90}, {evidence.SigTokensPerChunk, 1},
		{evidence.SigErrorClassRate(record.ErrOverloaded), 0.25}, {evidence.SigKVUsageMax, 0.2}, {evidence.SigServerTTFTP50, 85},
		{evidence.SigWaitingMax, 1}, {evidence.SigRunningMax, 4}}
	for _, tc := range []struct {
		name    string
		waiting func(t float64) float64
		want    string
	}{
		{"one request queued for a moment", func(t float64) float64 {
			if t == 30 {
				return 1
			}
			return 0
		}, shedBeforeEngine.id},
		{"the queue held requests all along", func(float64) float64 { return 1 }, "errors-overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := build(base...)
			ev.Run.Engine = "tgi" // refuses at its limit: only the queue's timing can clear it
			ev.Run.EngineConfig = map[string]string{evidence.ConfigMaxNumSeqs: "8"}
			st := ev.Stage(evidence.StageServingCache)
			ser := evidence.Series{Name: "engine.requests_waiting", Source: "tgi /metrics"}
			for x := 1.0; x <= 60; x++ {
				ser.T, ser.V = append(ser.T, x), append(ser.V, tc.waiting(x))
			}
			kept := st.Series[:0]
			for _, s := range st.Series {
				if s.Name != evidence.SigWaitingMax {
					kept = append(kept, s)
				}
			}
			st.Series = append(kept, ser)
			ev = Diagnose(ev, recs(200, shed), Options{Objectives: slo, Resamples: 100})
			found := false
			for _, f := range ev.Findings {
				if f.ID == tc.want {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s finding; verdict %q", tc.want, ev.Verdict)
			}
		})
	}
}
