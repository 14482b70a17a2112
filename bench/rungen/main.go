// Command rungen writes a synthetic run directory (contract.yaml and requests.jsonl) of n
// short tasks, for measuring `pel analyze` on runs far longer than a test can make:
//
//	go run ./bench/rungen -n 3600000 -rate 1000 -o /tmp/run-3.6m
//
// Tasks follow a Poisson schedule at -rate (a one-hour soak at 1,000 requests/s is 3.6 M
// tasks), two task types (short chats of 16 tokens, long documents of 32), a cold phase,
// about 1% of tasks rejected on an SLO and 0.2% failed with HTTP 503; lines are written in
// the order tasks end, as pel run writes them. The output is a function of the flags alone
// (seeded), so a figure measured on it can be reproduced.
package main

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"flag"
	"fmt"

	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

func main() {
	n := flag.Int("n", 100000, "tasks")
	rate := flag.Float64("rate", 1000, "arrivals per second (poisson)")
	out := flag.String("o", "", "output run directory (created; must not exist)")
	seed := flag.Uint64("seed", 1, "seed")
	warmup := flag.Duration("warmup", 30*time.Second, "cold phase length")
	series := flag.Int("metrics-series", 0, "also write metrics.jsonl: one sample a second over the run, of a page with this many series (0: none)")
	flag.Parse()
	if *out == "" || *n <= 0 || *rate <= 0 {
		fmt.Fprintln(os.Stderr, "usage: rungen -n TASKS -rate R -o DIR")
		os.Exit(2)
	}
	if err := write(*out, *n, *rate, *seed, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "rungen:", err)
		os.Exit(1)
	}
	if *series > 0 {
		dur := time.Duration(float64(*n) / *rate * float64(time.Second))
		if err := writeMetrics(*out, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), dur, *series); err != nil {
			fmt.Fprintln(os.Stderr, "rungen:", err)
			os.Exit(1)
		}
	}
}

const contractYAML = `name: rungen-soak
version: 1
description: synthetic soak written by bench/rungen
api: chat
model: synthetic
arrival: {process: poisson, rate: %g}
duration: %s
requests: %d
warmup: %s
seed: %d
tasks:
  - name: short-chat
    weight: 3
    prompt_tokens: {dist: lognormal, mean: 200, sd: 80, min: 8, max: 2000}
    output_tokens: 16
  - name: long-doc
    weight: 1
    prompt_tokens: {dist: uniform, min: 2000, max: 4000}
    output_tokens: 32
slo:
  ttft: {p99: 500ms, max: 2s}
  e2e: {max: 30s}
cost:
  accelerator_hour_usd: 2.5
`

func write(dir string, n int, rate float64, seed uint64, warmup time.Duration) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dur := time.Duration(float64(n)/rate*float64(time.Second)) + time.Minute
	c := fmt.Sprintf(contractYAML, rate, dur.Round(time.Second), n, warmup, seed)
	if err := os.WriteFile(filepath.Join(dir, rundir.ContractFile), []byte(c), 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, rundir.RequestsFile), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var pending byDone
	flush := func(upTo time.Time) error {
		for len(pending) > 0 && (upTo.IsZero() || pending[0].DoneAt.Before(upTo)) {
			if err := enc.Encode(heap.Pop(&pending).(*record.Record)); err != nil {
				return err
			}
		}
		return nil
	}
	at := time.Duration(0)
	for i := 0; i < n; i++ {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		r := task(rng, i, t0, at, rate, warmup)
		// Every later task is scheduled after this one and ends after its schedule.
		if err := flush(r.ScheduledAt); err != nil {
			return err
		}
		heap.Push(&pending, r)
	}
	if err := flush(time.Time{}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func task(rng *rand.Rand, i int, t0 time.Time, at time.Duration, rate float64, warmup time.Duration) *record.Record {
	r := &record.Record{Seq: i, Task: "short-chat", Attempts: 1, Status: record.StatusOK, TokenSource: record.TokensUsage, FinishReason: "stop"}
	id := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
	r.ID, r.TraceID = id, id
	r.Phase = record.PhaseWarm
	if at < warmup {
		r.Phase = record.PhaseCold
	}
	out, prefill := 16, 20*time.Millisecond
	r.PromptTokens = max(8, int(200+80*rng.NormFloat64()))
	if rng.IntN(4) == 0 {
		r.Task, out = "long-doc", 32
		r.PromptTokens = 2000 + rng.IntN(2001)
		prefill = 120 * time.Millisecond
	}
	r.SentPromptTokens = r.PromptTokens
	r.PromptChars, r.PromptHash = 5*r.PromptTokens, id+id
	r.ScheduledAt = t0.Add(at)
	lag := time.Duration(50+rng.IntN(200)) * time.Microsecond
	r.SentAt = r.ScheduledAt.Add(lag)
	r.FirstSentAt = r.SentAt
	r.InFlight = int(rng.ExpFloat64() * rate * 0.4)
	r.HeadersAt = r.SentAt.Add(time.Millisecond)
	// A slow tail: about 1% of tasks wait long enough to miss the 2 s TTFT bound.
	queue := time.Duration(rng.ExpFloat64() * float64(15*time.Millisecond))
	if rng.IntN(100) == 0 {
		queue += 2 * time.Second
	}
	if rng.IntN(500) == 0 {
		r.Status, r.HTTPStatus, r.ErrorClass = record.StatusHTTPError, 503, record.ErrOverloaded
		r.Error = "HTTP 503: server overloaded"
		r.DoneAt = r.HeadersAt.Add(queue)
		r.Reasons = []string{"error: http 503"}
		return r
	}
	ttft := prefill + queue
	r.FirstTokenAt = r.SentAt.Add(ttft)
	step := 10*time.Millisecond + time.Duration(rng.IntN(5000))*time.Microsecond
	for k := 0; k < out; k++ {
		us := (ttft + time.Duration(k)*step).Microseconds() + int64(rng.IntN(500))
		r.ChunkUS = append(r.ChunkUS, us)
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	r.OutputTokens, r.OutputChars = out, 4*out
	r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[out-1]) * time.Microsecond)
	r.DoneAt = r.LastTokenAt.Add(200 * time.Microsecond)
	if tt := r.FirstTokenAt.Sub(r.ScheduledAt); tt > 2*time.Second {
		r.Reasons = []string{"slo ttft max 2s"}
	} else {
		r.Accepted = true
	}
	return r
}

// byDone is a min-heap of records by end time: lines go out in the order tasks end.
type byDone []*record.Record

func (h byDone) Len() int           { return len(h) }
func (h byDone) Less(i, j int) bool { return h[i].DoneAt.Before(h[j].DoneAt) }
func (h byDone) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byDone) Push(x any)        { *h = append(*h, x.(*record.Record)) }
func (h *byDone) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
