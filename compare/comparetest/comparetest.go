package comparetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Contract is a small valid contract for synthetic runs.
const Contract = `name: synth
version: 1
arrival: {process: constant, rate: 10}
requests: 1000
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 16}
`

// Spec describes a synthetic run's tasks. TTFT is lognormal around TTFTMedian; each task's
// tokens arrive one per chunk with gaps lognormal around ITLMedian; Scale multiplies both.
type Spec struct {
	N          int
	Seed       uint64
	Phase      string        // default warm
	Task       string        // default "chat"
	TTFTMedian time.Duration // default 100ms
	ITLMedian  time.Duration // default 10ms
	Sigma      float64       // lognormal shape (default 0.3)
	Scale      float64       // latency multiplier (default 1)
	Tokens     int           // output tokens per task (default 16)
	AcceptP    float64       // probability a task is accepted (default 1)
	Interval   time.Duration // scheduled_at spacing (default 100ms)
	Start      time.Time     // first scheduled_at (default 2026-01-01T00:00:00Z)
	FirstSeq   int
}

func (s *Spec) defaults() {
	if s.Phase == "" {
		s.Phase = record.PhaseWarm
	}
	if s.Task == "" {
		s.Task = "chat"
	}
	if s.TTFTMedian == 0 {
		s.TTFTMedian = 100 * time.Millisecond
	}
	if s.ITLMedian == 0 {
		s.ITLMedian = 10 * time.Millisecond
	}
	if s.Sigma == 0 {
		s.Sigma = 0.3
	}
	if s.Scale == 0 {
		s.Scale = 1
	}
	if s.Tokens == 0 {
		s.Tokens = 16
	}
	if s.AcceptP == 0 {
		s.AcceptP = 1
	}
	if s.Interval == 0 {
		s.Interval = 100 * time.Millisecond
	}
	if s.Start.IsZero() {
		s.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
}

// Records generates the tasks of a Spec, deterministically from its Seed.
func Records(s Spec) []record.Record {
	s.defaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	logn := func(median time.Duration) time.Duration {
		return time.Duration(float64(median) * s.Scale * math.Exp(s.Sigma*rng.NormFloat64()))
	}
	out := make([]record.Record, s.N)
	for i := range out {
		sched := s.Start.Add(time.Duration(i) * s.Interval)
		ttft := logn(s.TTFTMedian)
		r := record.Record{
			Seq: s.FirstSeq + i, ID: fmt.Sprintf("t-%d", s.FirstSeq+i), Task: s.Task, Phase: s.Phase,
			ScheduledAt: sched, SentAt: sched, FirstSentAt: sched, HeadersAt: sched.Add(ttft / 2),
			FirstTokenAt: sched.Add(ttft), PromptTokens: 16, OutputTokens: s.Tokens, TokenSource: record.TokensUsage,
			Attempts: 1, Status: record.StatusOK, FinishReason: "length",
		}
		at := ttft
		for k := 0; k < s.Tokens; k++ {
			if k > 0 {
				at += logn(s.ITLMedian)
			}
			r.ChunkUS = append(r.ChunkUS, at.Microseconds())
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.LastTokenAt = sched.Add(at)
		r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
		r.Accepted = rng.Float64() < s.AcceptP
		if !r.Accepted {
			r.Reasons = []string{"check regex"}
		}
		out[i] = r
	}
	return out
}

// WriteRun writes a run directory: contractYAML (Contract when empty), the records, and an
// evidence.json naming the contract and carrying triggers as its rollback triggers (no
// evidence.json at all when triggers is nil).
func WriteRun(dir, contractYAML string, recs []record.Record, triggers []evidence.Trigger) error {
	if contractYAML == "" {
		contractYAML = Contract
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cf := filepath.Join(dir, "contract.yaml")
	if err := os.WriteFile(cf, []byte(contractYAML), 0o600); err != nil {
		return err
	}
	c, err := contract.Load(cf)
	if err != nil {
		return err
	}
	w, err := record.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return err
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if triggers == nil {
		return nil
	}
	ev := evidence.New()
	ev.Contract = evidence.ContractRef{Name: c.Name, SHA256: c.SHA256()}
	ev.Rollback.Triggers = triggers
	return ev.WriteFile(filepath.Join(dir, "evidence.json"))
}
