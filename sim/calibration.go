package sim

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/quantile"
)

// LoadSpec is a benchmark client's workload, shaped like `vllm bench serve`: a closed loop of
// Concurrency requests in flight (--max-concurrency with --request-rate inf), or, with
// Concurrency 0, Poisson arrivals at QPS. Lengths are drawn from Input and Output (Output is
// what the model generates: max_tokens with ignore_eos, or an EOS distribution capped at
// max_tokens).
type LoadSpec struct {
	Concurrency int
	QPS         float64
	Requests    int // requests per run (--num-prompts)
	// Runs repeats the load on the same engine, back to back, and pools the requests, as
	// tools that report percentiles over several runs do; the duration is the runs' median.
	Runs int
	// Warmup requests (closed loop) complete before a run's measurement window opens, so a
	// sustained run reports steady state rather than its ramp.
	Warmup        int
	Input, Output LengthDist
	// Prompts, when set, is a fixed prompt pool the requests draw from (with replacement),
	// each prompt with its own input and output length: greedy decoding of the same prompt
	// generates the same answer, and with prefix caching on (vLLM V1's default) a prompt seen
	// before is a cache hit. Warm pool prompts were served before the first run (earlier
	// scenarios of the same benchmark session).
	Prompts int
	Warm    int
	Seed    uint64
}

// LoadResult is what the client measured, in the benchmark tools' terms. TPOT is per request
// (last token time − first token time) / (output tokens − 1), as vllm bench serve computes it;
// a run's duration is from its first arrival to its last completion, and throughput is its
// output tokens over that duration.
type LoadResult struct {
	Requests         int
	Duration         float64 // seconds (median over runs)
	OutputTokens     int
	OutputThroughput float64 // tokens/s (total tokens over total duration)
	RequestRate      float64 // completed requests/s (per run, over the median duration)
	TPOTMean         float64 // seconds
	TPOTP50          float64
	TPOTP99          float64
	TTFTP50          float64
	MeanRunning      float64 // time-weighted running batch (sequences)
}

// loadSink records the client-visible times of one request's tokens.
type loadSink struct {
	first, last float64
	tokens      int
	done        bool
	onDone      func(at float64)
}

func (l *loadSink) Emit(_ *Seq, tokens int, at float64, finish string) {
	if tokens > 0 {
		if l.tokens == 0 {
			l.first = at
		}
		l.last = at
		l.tokens += tokens
	}
	if finish != "" && !l.done {
		l.done = true
		if l.onDone != nil {
			l.onDone(at)
		}
	}
}

type loadPrompt struct {
	in, out int
	hashes  []uint64
}

type loadReq struct {
	arrival float64
	seq     *Seq
	hashes  []uint64
	sink    *loadSink
}

// RunLoad drives e with spec on its virtual clock (no wall time involved) and returns what a
// benchmark client would have measured. Token times are those the Sink receives, i.e. after
// the engine's output path (the frontend) has handled them.
func RunLoad(e *Engine, spec LoadSpec) LoadResult {
	rng := rand.New(rand.NewPCG(spec.Seed, spec.Seed^0x9e3779b97f4a7c15))
	pool := make([]loadPrompt, spec.Prompts)
	for i := range pool {
		p := &pool[i]
		p.in, p.out = spec.Input.Sample(rng), spec.Output.Sample(rng)
		ids := make([]uint32, p.in)
		for j := range ids {
			ids[j] = uint32(i)*2654435761 ^ uint32(j)*40503
		}
		p.hashes = HashBlocks(ids, e.Cfg.BlockSize)
	}
	for i := 0; i < min(spec.Warm, len(pool)); i++ {
		e.Submit(&Seq{ID: uint64(i + 1), PromptTokens: pool[i].in, MaxTokens: 1, Target: 1}, pool[i].hashes, e.Now())
	}
	for e.Step() != nil {
	}
	var res LoadResult
	var tpots, ttfts, durations []float64
	var busyRunning, span, totalDur float64
	for run := 0; run < max(1, spec.Runs); run++ {
		reqs, running, dt := runOnce(e, spec, pool, rng)
		busyRunning += running
		span += dt
		measured := reqs
		if spec.Concurrency > 0 && spec.Warmup > 0 && spec.Warmup < len(reqs) {
			measured = reqs[spec.Warmup:]
		}
		start, end := math.Inf(1), 0.0
		for _, r := range measured {
			if r == nil || r.sink.tokens == 0 {
				continue
			}
			res.Requests++
			res.OutputTokens += r.sink.tokens
			start = math.Min(start, r.arrival)
			end = math.Max(end, r.sink.last)
			ttfts = append(ttfts, r.sink.first-r.arrival)
			if r.sink.tokens > 1 {
				tpots = append(tpots, (r.sink.last-r.sink.first)/float64(r.sink.tokens-1))
			}
		}
		if end > start {
			durations = append(durations, end-start)
			totalDur += end - start
		}
	}
	if res.Requests == 0 || totalDur == 0 {
		return res
	}
	res.Duration = percentile(durations, 0.5)
	res.OutputThroughput = float64(res.OutputTokens) / totalDur
	res.RequestRate = float64(res.Requests) / float64(len(durations)) / res.Duration
	res.TPOTMean = figure.Mean(tpots)
	res.TPOTP50 = percentile(tpots, 0.50)
	res.TPOTP99 = percentile(tpots, 0.99)
	res.TTFTP50 = percentile(ttfts, 0.50)
	if span > 0 {
		res.MeanRunning = busyRunning / span
	}
	return res
}

// runOnce runs one pass of spec's load on e from its current time until every request has
// completed; it returns the requests in launch order and the running-batch integral and span.
func runOnce(e *Engine, spec LoadSpec, pool []loadPrompt, rng *rand.Rand) ([]*loadReq, float64, float64) {
	t0 := e.Now()
	reqs := make([]*loadReq, spec.Requests)
	var pending []*loadReq
	next := 0
	var launch func(at float64)
	launch = func(at float64) {
		if next >= len(reqs) {
			return
		}
		r := &loadReq{arrival: at, sink: &loadSink{}}
		if spec.Concurrency > 0 {
			r.sink.onDone = launch // the client sends its next request when this one completes
		}
		in, out := 0, 0
		if len(pool) > 0 {
			p := pool[rng.IntN(len(pool))]
			in, out, r.hashes = p.in, p.out, p.hashes
		} else {
			in, out = spec.Input.Sample(rng), spec.Output.Sample(rng)
		}
		r.seq = &Seq{ID: uint64(1<<32 + next), PromptTokens: in, MaxTokens: out, Target: out, Sink: r.sink}
		reqs[next] = r
		next++
		pending = append(pending, r)
	}
	if spec.Concurrency > 0 {
		for i := 0; i < spec.Concurrency; i++ {
			launch(t0)
		}
	} else {
		t := t0
		for range reqs {
			launch(t)
			t += rng.ExpFloat64() / spec.QPS
		}
	}
	var running, span float64
	for {
		sort.SliceStable(pending, func(a, b int) bool { return pending[a].arrival < pending[b].arrival })
		if e.Idle() && len(pending) > 0 && pending[0].arrival > e.Now() {
			e.AdvanceTo(pending[0].arrival)
		}
		for len(pending) > 0 && pending[0].arrival <= e.Now() {
			e.Submit(pending[0].seq, pending[0].hashes, pending[0].arrival)
			pending = pending[1:]
		}
		if e.Idle() && len(pending) == 0 {
			break
		}
		before := e.Now()
		r := e.Step()
		if r == nil {
			continue
		}
		dt := e.Now() - before
		running += dt * float64(r.Running+len(r.Finished))
		span += dt
	}
	return reqs, running, span
}

// percentile is linear interpolation between closest ranks (numpy's default), as the
// benchmark tools report p50/p99 (package quantile's one exception, quantile.Linear); 0 for
// none.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return quantile.Linear(quantile.SortedCopy(xs), q)
}
