package canary_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/report"
)

const canaryContract = `name: synth-canary
version: 1
arrival: {process: constant, rate: 20}
requests: 2400
warmup: 2s
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 8}
canary: {share: 0.5}
`

// interleaved writes an interleaved canary run directory: n arrivals 50 ms apart, each to
// the candidate by the seeded draw; the candidate's TTFT is the baseline's times slow on
// the share of tasks slowShare (0: the same distribution). log completes canary.json.
func interleaved(t testing.TB, dir string, n int, slow, slowShare float64, trig []evidence.Trigger, log func(*canary.Log)) string {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 5))
	var recs []record.Record
	routed := 0
	for i := range n {
		at := time.Duration(i) * 50 * time.Millisecond
		sched := start.Add(at)
		phase, target := record.PhaseWarm, "http://base:8000"
		if at < 2*time.Second {
			phase = record.PhaseCold
		}
		cand := canary.Draw(1, i) < 0.5
		ttft := 100 * math.Exp(0.25*rng.NormFloat64())
		if cand {
			phase, target = record.PhaseCanary, "http://cand:8000"
			routed++
			if rng.Float64() < slowShare {
				ttft *= slow
			}
		}
		d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
		r := record.Record{Seq: i, ID: "t", Task: "chat", Phase: phase, Target: target, ScheduledAt: sched, SentAt: sched, FirstSentAt: sched,
			FirstTokenAt: sched.Add(d(ttft)), PromptTokens: 16, OutputTokens: 8, TokenSource: record.TokensUsage, Attempts: 1,
			Status: record.StatusOK, FinishReason: "length", Accepted: true, PromptHash: "h" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))}
		at2 := d(ttft)
		for k := 0; k < 8; k++ {
			if k > 0 {
				at2 += d(10 * math.Exp(0.2*rng.NormFloat64()))
			}
			r.ChunkUS = append(r.ChunkUS, at2.Microseconds())
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.LastTokenAt = sched.Add(at2)
		r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
		recs = append(recs, r)
	}
	if err := comparetest.WriteRun(dir, canaryContract, recs, trig); err != nil {
		t.Fatal(err)
	}
	l := &canary.Log{Baseline: "http://base:8000", Candidate: "http://cand:8000", Share: 0.5, EarlyStop: true, Alpha: 0.05, Seed: 1,
		Routing: canary.Routing(0.5), StartedAt: start, WarmupS: 2, Arrivals: n, CanaryTasks: routed, TriggerSource: canary.SourceBaselineSide,
		Frozen: true, FrozenAfter: 368, FrozenAtS: 38.5, Method: canary.Method, Tests: []canary.Test{}}
	if log != nil {
		log(l)
	}
	if err := l.WriteFile(filepath.Join(dir, canary.LogFile)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestJudgeDir(t *testing.T) {
	ttft := evidence.Trigger{Signal: evidence.SigTTFTP99, Op: ">", Bound: 230, Unit: "ms", Basis: "test"}
	acc := evidence.Trigger{Signal: evidence.SigAcceptanceRate, Op: "<", Bound: 0.98, Unit: "ratio", Basis: "test"}
	cases := []struct {
		name            string
		n               int
		slow, slowShare float64
		log             func(*canary.Log)
		want            compare.Verdict
		check           func(t *testing.T, r *canary.Result)
	}{{
		// Identical sides, 1200 arrivals: enough candidate tasks to bound a p99 both ways.
		name: "identical", n: 1600, want: compare.Accept,
		log: func(l *canary.Log) {
			l.Tests = []canary.Test{{Trigger: ttft, Tested: true, Breach: "TTFT > 230 ms", P0: 0.01, Alpha: 0.025, Tasks: 740, Breaches: 1, LogLR: -6.1, Threshold: 3.69,
				BaseTasks: 760, BaseBreaches: 2, Share: 0.5, VsBaselineLogLR: -1.1},
				{Trigger: acc, Tested: true, Breach: "task not accepted", P0: 0.02, Alpha: 0.025, Tasks: 740, LogLR: -11.5, Threshold: 3.69, BaseTasks: 760, Share: 0.5}}
		},
		check: func(t *testing.T, r *canary.Result) {
			p := r.Phases[0]
			if p.BasePhase != record.PhaseWarm || p.CandidatePhase != record.PhaseWarm || p.CandidateTasks < 368 {
				t.Errorf("primary phase %s/%s with %d candidate tasks", p.BasePhase, p.CandidatePhase, p.CandidateTasks)
			}
			// Each side got about half the arrivals: scaled, both goodputs read as the
			// whole arrival rate (20/s).
			m := metric(t, p, "goodput_rps")
			if math.Abs(*m.Base-20) > 1 || math.Abs(*m.Candidate-20) > 1 {
				t.Errorf("scaled goodput %v / %v, want about 20/s each", *m.Base, *m.Candidate)
			}
		},
	}, {
		// A third of the candidate's tasks 3× slower; the run stopped at its 9th task.
		name: "stopped early", n: 400, slow: 3, slowShare: 1.0 / 3, want: compare.Reject,
		log: func(l *canary.Log) {
			l.TriggerSource, l.RollbackFrom, l.Frozen, l.FrozenAfter, l.FrozenAtS = canary.SourceRollbackFrom, "base-run", true, 0, 0
			l.Tests = []canary.Test{{Trigger: ttft, Tested: true, Breach: "TTFT > 230 ms", P0: 0.01, Alpha: 0.025, Tasks: 60, Breaches: 19, LogLR: 48.2, Threshold: 3.69,
				BaseTasks: 64, Share: 0.5, VsBaselineLogLR: 11.2, Crossed: true, CrossedTask: 9, CrossedAtS: 3.1},
				{Trigger: acc, Tested: true, Breach: "task not accepted", P0: 0.02, Alpha: 0.025, Tasks: 60, LogLR: -1.2, Threshold: 3.69, BaseTasks: 64, Share: 0.5}}
			l.Stop = &canary.Stop{Kind: canary.StopTrigger, Signal: ttft.Signal, AtS: 3.1, CanaryTasks: 9, AfterSeq: 63,
				Reason: "rollback trigger client.ttft_p99_ms > 230 ms breached with confidence: 4 of 9 candidate tasks had TTFT > 230 ms against 0 of 8 baseline tasks beside them"}
		},
		check: func(t *testing.T, r *canary.Result) {
			if !strings.HasPrefix(r.Reasons[0], "early stop: rollback trigger client.ttft_p99_ms > 230 ms breached with confidence") {
				t.Errorf("first reason does not name the trigger: %q", r.Reasons)
			}
			if r.Triggers[0].Source != "rollback trigger (--rollback-from base-run)" {
				t.Errorf("trigger source %q", r.Triggers[0].Source)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := interleaved(t, filepath.Join(tmp, "run"), c.n, c.slow, c.slowShare, []evidence.Trigger{ttft, acc}, c.log)
			if !canary.IsDir(dir) || canary.IsDir(tmp) {
				t.Fatal("IsDir")
			}
			r, err := canary.JudgeDir(dir, compare.Options{Resamples: 500})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != c.want {
				t.Errorf("verdict %s, want %s: %q", r.Verdict, c.want, r.Reasons)
			}
			c.check(t, r)
			var buf bytes.Buffer
			if err := report.InterleavedText(&buf, r); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(buf.String(), tmp, "TMP")
			golden.Check(t, filepath.Join("testdata", "canary-"+strings.ReplaceAll(c.name, " ", "-")+".golden"), []byte(got))
		})
	}
}

func metric(t *testing.T, p compare.PhaseResult, name string) compare.Metric {
	t.Helper()
	for _, m := range p.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s in phase %s", name, p.Phase)
	return compare.Metric{}
}
