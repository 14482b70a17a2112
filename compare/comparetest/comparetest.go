package comparetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape"
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
	// Prompts names the prompt set: records get prompt_sha256 = sha256(Prompts, seq), so two
	// runs with the same Prompts sent the same prompts. Default "seed <Seed>": distinct runs
	// send distinct prompts, as runs with a per-run nonce do.
	Prompts string
	// Lag is every task's schedule lag (sent − scheduled; default 0).
	Lag time.Duration
	// EstimatedShare is the share of tasks whose token counts are a client estimate
	// (default 0: all from usage).
	EstimatedShare float64
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
	if s.Prompts == "" {
		s.Prompts = fmt.Sprintf("seed %d", s.Seed)
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
		ttft := s.Lag + logn(s.TTFTMedian)
		sent := sched.Add(s.Lag)
		h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", s.Prompts, s.FirstSeq+i)))
		r := record.Record{
			Seq: s.FirstSeq + i, ID: fmt.Sprintf("t-%d", s.FirstSeq+i), Task: s.Task, Phase: s.Phase,
			ScheduledAt: sched, SentAt: sent, FirstSentAt: sent, HeadersAt: sched.Add(ttft / 2),
			FirstTokenAt: sched.Add(ttft), PromptTokens: 16, OutputTokens: s.Tokens, TokenSource: record.TokensUsage,
			Attempts: 1, Status: record.StatusOK, FinishReason: "length", PromptHash: hex.EncodeToString(h[:]),
		}
		if math.Floor(float64(i+1)*s.EstimatedShare) > math.Floor(float64(i)*s.EstimatedShare) {
			r.TokenSource = record.TokensEstimate
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
	cf := filepath.Join(dir, rundir.ContractFile)
	if err := os.WriteFile(cf, []byte(contractYAML), 0o600); err != nil {
		return err
	}
	c, err := contract.Load(cf)
	if err != nil {
		return err
	}
	w, err := record.Create(filepath.Join(dir, rundir.RequestsFile))
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
	return ev.WriteFile(filepath.Join(dir, rundir.EvidenceFile))
}

// Engine is what a synthetic run's engine exposed: WriteEngine adds it to a run directory
// written by WriteRun.
type Engine struct {
	Name, Model string // evidence.json run.engine and run.model
	// HitRate, when not nil, is the warm phase's engine.prefix_cache_hit_rate.
	HitRate *float64
	// Config labels of vllm:cache_config_info; RestartAt, when not zero, makes the engine's
	// counters fall back to 0 at that instant. Without Config no metrics.jsonl is written.
	Config    map[string]string
	RestartAt time.Time
	// From and To bound the sampled window (one sample a second).
	From, To time.Time
}

// WriteEngine adds the engine's side of a run to dir: evidence.json's engine, model and
// prefix-cache hit rate (the file is created if WriteRun wrote none), and a metrics.jsonl
// with an info family and a counter, sampled every second from e.From to e.To.
func WriteEngine(dir string, e Engine) error {
	path := filepath.Join(dir, rundir.EvidenceFile)
	ev, err := evidence.ReadFile(path)
	if err != nil {
		c, lerr := contract.Load(filepath.Join(dir, rundir.ContractFile))
		if lerr != nil {
			return lerr
		}
		ev = evidence.New()
		ev.Contract = evidence.ContractRef{Name: c.Name, SHA256: c.SHA256()}
	}
	ev.Run.Engine, ev.Run.Model = e.Name, e.Model
	if e.HitRate != nil {
		ev.Add(evidence.Signal{Name: evidence.SigPrefixHitRate, Value: *e.HitRate, Unit: "ratio", Stage: evidence.StageServingCache, Source: "vllm /metrics", Phase: record.PhaseWarm})
	}
	if err := ev.WriteFile(path); err != nil {
		return err
	}
	if e.Config == nil {
		return nil
	}
	w, err := scrape.CreateWriter(filepath.Join(dir, rundir.MetricsFile))
	if err != nil {
		return err
	}
	labels := map[string]string{"engine": "0"}
	for k, v := range e.Config {
		labels[k] = v
	}
	one := scrape.Num(1)
	count := 0.0
	for t := e.From; !t.After(e.To); t = t.Add(time.Second) {
		if !e.RestartAt.IsZero() && !t.Before(e.RestartAt) && t.Add(-time.Second).Before(e.RestartAt) {
			count = 0
		}
		count += 10
		v := scrape.Num(count)
		s := scrape.Sample{T: t, Endpoint: "http://127.0.0.1:8000/metrics", Kind: scrape.KindEngine, Origin: scrape.OriginScrape, OK: true,
			Families: []scrape.Family{
				{Name: "vllm:cache_config_info", Type: "gauge", Metrics: []scrape.Metric{{Labels: labels, V: &one}}},
				{Name: "vllm:generation_tokens_total", Type: "counter", Metrics: []scrape.Metric{{Labels: map[string]string{"engine": "0", "model_name": e.Model}, V: &v}}},
				{Name: "vllm:num_requests_running", Type: "gauge", Metrics: []scrape.Metric{{Labels: map[string]string{"engine": "0", "model_name": e.Model}, V: &one}}},
			}}
		if err := w.Write(&s); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
