package compare

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/record"
)

func pre(t *testing.T, r *Result, name string) Precondition {
	t.Helper()
	for _, p := range r.Preconditions {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no precondition %s in %+v", name, r.Preconditions)
	return Precondition{}
}

func f64(v float64) *float64 { return &v }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestPreconditions: each case injects one difference between two runs whose task
// latencies come from the same distribution, and states, from the injected cause alone,
// whether the runs are comparable and which check says why.
func TestPreconditions(t *testing.T) {
	engine := func(hit float64) *comparetest.Engine {
		return &comparetest.Engine{Name: "vllm", Model: "m", HitRate: f64(hit), Config: map[string]string{"block_size": "16", "num_gpu_blocks": "1000"},
			From: t0.Add(-time.Second), To: t0.Add(41 * time.Second)}
	}
	cases := []struct {
		name         string
		base, cand   comparetest.Spec
		bEng, cEng   *comparetest.Engine
		comparable   bool
		check        string // the precondition that decides
		status       string // its status word
		reasonHas    []string
		verdictIfCmp []Verdict // verdicts allowed when comparable
	}{{
		// The case: the same contract run twice; the second run re-sent the first
		// run's prompts and found them cached (hit rate 0.989 vs 0.21).
		name: "same prompts, the candidate found them cached",
		base: comparetest.Spec{N: 400, Seed: 1, Prompts: "seed 1"}, cand: comparetest.Spec{N: 400, Seed: 2, Prompts: "seed 1", Scale: 0.3},
		bEng: engine(0.21), cEng: engine(0.989),
		comparable: false, check: PrePromptCach, status: "MISMATCH",
		reasonHas: []string{"400 of 400 distinct prompts", "21.0%", "98.9%", "The candidate ran later"},
	}, {
		// Per-run prompts (the nonce): nothing carries over, whatever the hit rates.
		name: "own prompts per run, hit rates differ",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2},
		bEng: engine(0.21), cEng: engine(0.5),
		comparable: true, check: PrePromptCach, status: "ok", reasonHas: []string{"each run sent its own prompts"},
		verdictIfCmp: []Verdict{Accept, Inconclusive},
	}, {
		// The same prompts and the same cache state: the uncached share 0.79 vs 0.788
		// differs 0.25%, under the 2% tolerance.
		name: "same prompts, same cache state",
		base: comparetest.Spec{N: 400, Seed: 1, Prompts: "p"}, cand: comparetest.Spec{N: 400, Seed: 2, Prompts: "p"},
		bEng: engine(0.21), cEng: engine(0.212),
		comparable: true, check: PrePromptCach, status: "ok", reasonHas: []string{"the same prefill work"},
		verdictIfCmp: []Verdict{Accept, Inconclusive},
	}, {
		// The same prompts but no cache signal: a warm cache cannot be ruled out nor shown.
		name: "same prompts, no cache signal",
		base: comparetest.Spec{N: 400, Seed: 1, Prompts: "p"}, cand: comparetest.Spec{N: 400, Seed: 2, Prompts: "p"},
		comparable: true, check: PrePromptCach, status: "unknown", reasonHas: []string{"cannot be ruled out"},
		verdictIfCmp: []Verdict{Accept, Inconclusive},
	}, {
		// The candidate's engine restarted 20 s into its window: its counters went down.
		name: "a restart inside the candidate's window",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2},
		bEng: engine(0.2), cEng: func() *comparetest.Engine { e := engine(0.2); e.RestartAt = t0.Add(20 * time.Second); return e }(),
		comparable: false, check: PreRestarts, status: "MISMATCH", reasonHas: []string{"0 time(s) on the base and 1 on the candidate"},
	}, {
		// A configuration change is what a candidate usually is: stated, never blocking.
		name: "the engine's configuration differs",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2},
		bEng: engine(0.2), cEng: func() *comparetest.Engine {
			e := engine(0.2)
			e.Config = map[string]string{"block_size": "16", "num_gpu_blocks": "2000"}
			return e
		}(),
		comparable: true, check: PreConfig, status: "differs", reasonHas: []string{"vllm:cache_config_info num_gpu_blocks 1000 → 2000"},
		verdictIfCmp: []Verdict{Accept, Inconclusive},
	}, {
		// Half the candidate's tasks had no usage block: its ITL is per estimated token.
		name: "token counts estimated on one side",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2, EstimatedShare: 0.5},
		comparable: false, check: PreTokens, status: "MISMATCH", reasonHas: []string{"0.0% of completed tasks on the base and 50.0% on the candidate"},
	}, {
		// The candidate's client sent every request 30 ms late; TTFT (from the schedule)
		// carries those 30 ms, far more than the ~±5 ms a 400-task median resolves.
		name: "the load generator was late on one side",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2, Lag: 30 * time.Millisecond},
		comparable: false, check: PreLateness, status: "MISMATCH", reasonHas: []string{"0.00 ms on the base and 30.00 ms on the candidate", "makes the change of TTFT p50"},
	}, {
		// The base's client was 30 ms late and the candidate's server 30% slower: the
		// median TTFTs agree, and only the lag hides the slowdown.
		name: "lateness hides a slowdown",
		base: comparetest.Spec{N: 400, Seed: 1, Lag: 30 * time.Millisecond}, cand: comparetest.Spec{N: 400, Seed: 2, Scale: 1.3},
		comparable: false, check: PreLateness, status: "MISMATCH", reasonHas: []string{"30.00 ms on the base and 0.00 ms on the candidate", "hides the change"},
	}, {
		// 0.2 ms of lateness is far below what the comparison resolves.
		name: "a little lateness is within the resolution",
		base: comparetest.Spec{N: 400, Seed: 1}, cand: comparetest.Spec{N: 400, Seed: 2, Lag: 200 * time.Microsecond},
		comparable: true, check: PreLateness, status: "ok", reasonHas: []string{"leaves every judgement as it was"},
		verdictIfCmp: []Verdict{Accept, Inconclusive},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			// The candidate ran an hour after the base, against the same engine.
			tc.cand.Start = t0.Add(time.Hour)
			b := write(t, filepath.Join(tmp, "base"), "", comparetest.Records(tc.base), nil)
			c := write(t, filepath.Join(tmp, "cand"), "", comparetest.Records(tc.cand), nil)
			for _, x := range []struct {
				dir string
				e   *comparetest.Engine
			}{{b, tc.bEng}, {c, tc.cEng}} {
				if x.e != nil {
					e := *x.e
					if x.dir == c {
						e.From, e.To = e.From.Add(time.Hour), e.To.Add(time.Hour)
						if !e.RestartAt.IsZero() {
							e.RestartAt = e.RestartAt.Add(time.Hour)
						}
					}
					if err := comparetest.WriteEngine(x.dir, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			r, err := Dirs(b, c, Options{Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			p := pre(t, r, tc.check)
			if r.Comparable != tc.comparable || p.Status() != tc.status {
				t.Fatalf("comparable %v (want %v), %s %s (want %s): %s\n%s", r.Comparable, tc.comparable, tc.check, p.Status(), tc.status, p.Reason, dump(r))
			}
			for _, s := range tc.reasonHas {
				if !strings.Contains(p.Reason, s) {
					t.Errorf("%s reason lacks %q: %s", tc.check, s, p.Reason)
				}
			}
			if !tc.comparable {
				if r.Verdict != NotComparable || r.Comparable {
					t.Errorf("verdict %s, comparable %v\n%s", r.Verdict, r.Comparable, dump(r))
				}
				if !strings.HasPrefix(r.Reasons[0], "not comparable ("+tc.check+")") {
					t.Errorf("reasons %q", r.Reasons)
				}
				return
			}
			ok := false
			for _, v := range tc.verdictIfCmp {
				ok = ok || r.Verdict == v
			}
			if !ok {
				t.Errorf("verdict %s, want one of %v\n%s", r.Verdict, tc.verdictIfCmp, dump(r))
			}
		})
	}
}

// An INCONCLUSIVE message must not ask to "rerun both sides with at least 368 tasks" when
// each side has 392: the check that needs 368 values sees only one task type's share. The
// advice is in tasks of the compared phase: 368 values of a task type that is 92 of
// 392 tasks need ceil(368 × 392 / 92) = 1568 tasks.
func TestNeededTasksMatchCounts(t *testing.T) {
	const ctr = `name: two
version: 1
arrival: {process: constant, rate: 10}
requests: 1000
tasks:
  - {name: chat, weight: 3, prompt_tokens: 16, output_tokens: 16}
  - name: doc
    prompt_tokens: 16
    output_tokens: 16
    slo: {ttft: {p99: 250ms}}
`
	mk := func(seed uint64) []record.Record {
		chat := comparetest.Records(comparetest.Spec{N: 300, Seed: seed})
		doc := comparetest.Records(comparetest.Spec{N: 92, Seed: seed + 100, Task: "doc", FirstSeq: 300, Start: t0.Add(30 * time.Second)})
		return append(chat, doc...)
	}
	tmp := t.TempDir()
	b := write(t, filepath.Join(tmp, "b"), ctr, mk(1), nil)
	c := write(t, filepath.Join(tmp, "c"), ctr, mk(2), nil)
	r, err := Dirs(b, c, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Inconclusive || r.NeededTasks != 1568 {
		t.Fatalf("verdict %s, needed %d (want inconclusive, 1568)\n%s", r.Verdict, r.NeededTasks, dump(r))
	}
	// The advice printed is "rerun both sides with at least NeededTasks tasks in the
	// primary phase (now base and candidate tasks): NeededFor" (report's test prints it).
	p := r.Phases[0]
	want := "client.ttft_p99_ms (task doc) rests on 92 values of the candidate's 392 tasks and needs about 368"
	if p.Phase != "warm" || p.BaseTasks != 392 || p.CandidateTasks != 392 || !strings.HasPrefix(r.NeededFor, want) {
		t.Errorf("advice does not match the counts: %s phase, %d and %d tasks, %q; want warm, 392 and 392, %q", p.Phase, p.BaseTasks, p.CandidateTasks, r.NeededFor, want)
	}
}
