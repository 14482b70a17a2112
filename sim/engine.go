package sim

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// EngineConfig are the scheduler knobs of one replica (vLLM's names where they exist).
type EngineConfig struct {
	MaxNumSeqs          int     // max_num_seqs
	MaxBatchedTokens    int     // max_num_batched_tokens: the per-step token budget
	MaxModelLen         int     // max_model_len
	ChunkedPrefill      bool    // enable_chunked_prefill
	BlockSize           int     // block_size (tokens per KV block)
	KVBlocks            int     // KV capacity in blocks (from memory if 0)
	PrefixCaching       bool    // enable_prefix_caching
	GPUMemoryFraction   float64 // gpu_memory_utilization, used to size KV when KVBlocks is 0
	SpecK               int     // num_speculative_tokens (0: off)
	SpecAcceptance      float64 // per-token acceptance probability of a draft
	SpecDraftFrac       float64 // draft pass cost as a fraction of a target decode pass
	ColdStartup         float64 // seconds: one-time warm-up stall on the first step
	ColdCompile         float64 // seconds: compile / graph capture stall per new batch shape
	ColdShapes          int     // how many new shapes pay ColdCompile before all are cached
	ActivationReserveGB float64 // memory held for activations when sizing KV (default 2)
	// LongPrefillThreshold caps the tokens one prefill may take per step (vLLM's
	// long_prefill_token_threshold), leaving budget for other requests; 0: no cap. A prompt
	// with more uncached tokens than this is "long" for MaxLongPartialPrefills.
	LongPrefillThreshold int
	// MaxPartialPrefills bounds the prompts being prefilled across steps at once (vLLM's
	// max_num_partial_prefills, with chunked prefill): a prompt that cannot finish its
	// prefill in the step it is admitted waits while that many are in flight, and when
	// it is above 1 each prefill's chunk is at most max_num_batched_tokens divided among
	// the prefills that could run (vLLM's per-prefill slot budget). 0: no bound, as vLLM
	// V1's scheduler, which chunks any number of prompts within the step's token budget.
	MaxPartialPrefills int
	// MaxLongPartialPrefills bounds how many of those are long (vLLM's
	// max_long_partial_prefills, default 1): a long prompt past the bound waits and
	// shorter prompts behind it go first. 0 means 1.
	MaxLongPartialPrefills int
}

// Sink receives a sequence's output as steps complete (virtual time). It is called on the
// engine's goroutine and must not block.
type Sink interface {
	Emit(s *Seq, tokens int, at float64, finish string)
}

// Seq is one request inside the engine.
type Seq struct {
	ID           uint64
	PromptTokens int
	MaxTokens    int // max_tokens as requested (for the histogram)
	Target       int // tokens the sequence will generate (MaxTokens, or fewer at a sampled EOS)
	blockHashes  []uint64
	Sink         Sink
	aborted      atomic.Bool
	// Structured requests guided decoding (a JSON schema, a grammar): the engine core builds
	// its token bitmask before every sampling (CostParams.GrammarTokenUS).
	Structured bool

	apiServer   int  // which API-server process streams this request (decoupled frontend)
	longPrefill bool // admitted as a long partial prefill

	computed    int // tokens whose KV is in the cache
	generated   int
	blocks      []int32
	running     bool
	Preemptions int

	Arrival, Scheduled, FirstToken, LastToken float64
	scheduledOnce                             bool
}

// Abort asks the engine to drop the sequence at its next step (client went away).
func (s *Seq) Abort() { s.aborted.Store(true) }

// Generated is the number of output tokens produced so far.
func (s *Seq) Generated() int { return s.generated }

func (s *Seq) total() int { return s.PromptTokens + s.generated }

// Finished is what the engine reports about a finished request, in vLLM's
// FinishedRequestStats terms (vllm/v1/metrics/stats.py).
type Finished struct {
	Seq                                            *Seq
	Reason                                         string // stop | length | abort
	E2E, Queue, Prefill, Decode, Inference         float64
	PromptTokens, GenerationTokens, MaxTokensParam int
}

// StepResult is one step's outcome: the timeline plus vLLM's IterationStats and
// SchedulerStats equivalents.
type StepResult struct {
	Batch        Batch
	Timing       StepTiming
	Running      int
	Waiting      int
	KVUsage      float64
	PromptTokens int // prompt tokens computed this step (incl. recompute after preemption)
	GenTokens    int
	Preempted    int
	PrefixQuery  int
	PrefixHits   int
	SpecDrafts   int
	SpecDraftTok int
	SpecAccepted int
	SpecPerPos   []int
	TTFTs        []float64
	ITLs         []float64
	Finished     []Finished
	// DeliverAt is when the frontend has handled this step's tokens and its clients see them
	// (>= Timing.End; with a decoupled frontend, the latest of its API servers): the
	// engine's metrics are stamped at the step's end, as vLLM V1's engine core stamps its
	// outputs, while the client sees frontend time.
	DeliverAt float64
}

// maxKVBlocks bounds the simulated block pool (see NewEngine).
const maxKVBlocks = 1 << 18

// Engine is one replica's scheduler and model executor on a virtual clock. It is not safe
// for concurrent use: the server's driver owns it; tests call Submit and Step directly.
type Engine struct {
	Index int
	Cfg   EngineConfig
	Cost  *CostModel
	// Slow stretches every step's span by this factor when above 1 (a profiler's overhead,
	// see Options.ProfileSlowdown); the driver sets it before each step.
	Slow    float64
	now     float64
	waiting []*Seq // FIFO; preempted sequences return to the front
	running []*Seq
	kv      *kvCache
	rng     *rand.Rand
	shapes  map[int]bool
	started bool
	res     StepResult
	// feDone and fePrev: when the frontend finishes the last step's outputs and the one
	// before's. The engine core runs at most one step ahead of its frontend.
	feDone, fePrev float64
	// apiBusy: when each API-server process of a decoupled frontend is done with what it
	// was handed; apiNext assigns requests to them in turn.
	apiBusy  []float64
	apiNext  int
	apiTok   []int
	apiStart []float64
	emits    []stepOutput
	sched    []SeqWork
	schedOf  []*Seq
	specOf   []bool
}

// NewEngine sizes the KV cache (from memory if cfg.KVBlocks is 0) and returns an idle engine.
func NewEngine(index int, cfg EngineConfig, cost *CostModel, seed uint64) *Engine {
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = 16
	}
	if cfg.MaxModelLen <= 0 {
		cfg.MaxModelLen = cost.Model.MaxModelLen
	}
	if cfg.MaxBatchedTokens <= 0 {
		cfg.MaxBatchedTokens = 8192
	}
	if !cfg.ChunkedPrefill && cfg.MaxBatchedTokens < cfg.MaxModelLen {
		// vLLM requires this without chunked prefill, or a long prompt could never run.
		cfg.MaxBatchedTokens = cfg.MaxModelLen
	}
	if cfg.MaxNumSeqs <= 0 {
		cfg.MaxNumSeqs = 256
	}
	if cfg.KVBlocks <= 0 {
		cfg.KVBlocks = KVBlocksFromMemory(cost, cfg)
	}
	if cfg.MaxPartialPrefills > 1 && cfg.LongPrefillThreshold == 0 {
		// vLLM's SchedulerConfig does the same: concurrent partial prefills need a notion of
		// "long", 4% of the context.
		cfg.LongPrefillThreshold = int(float64(cfg.MaxModelLen) * 0.04)
	}
	if cfg.MaxLongPartialPrefills <= 0 {
		cfg.MaxLongPartialPrefills = 1
	}
	// A small model on a big GPU would get millions of blocks; beyond ~4M tokens capacity
	// never binds in a simulation, and the block pool's memory would.
	cfg.KVBlocks = min(cfg.KVBlocks, maxKVBlocks)
	return &Engine{Index: index, Cfg: cfg, Cost: cost,
		kv:      newKVCache(cfg.KVBlocks, cfg.BlockSize, cfg.PrefixCaching),
		rng:     rand.New(rand.NewPCG(seed, uint64(index)+0x9e3779b97f4a7c15)),
		shapes:  map[int]bool{},
		apiBusy: make([]float64, max(1, cost.P.APIServers))}
}

// KVBlocksFromMemory is vLLM's sizing: (memory × gpu_memory_utilization − weights −
// memory reserved for everything else: activations, CUDA graphs, NCCL buffers, other
// processes) / bytes per block (at the KV cache's own dtype), per tensor-parallel rank.
func KVBlocksFromMemory(cost *CostModel, cfg EngineConfig) int {
	frac := cfg.GPUMemoryFraction
	if frac <= 0 || frac > 1 {
		frac = 0.9
	}
	reserve := cfg.ActivationReserveGB
	if reserve <= 0 {
		reserve = 2
	}
	free := cost.GPU.MemBytes*frac - cost.WeightBytesPerGPU() - reserve*1e9
	perBlock := cost.Model.KVBytesPerToken() / float64(cost.P.TP) * float64(cfg.BlockSize)
	if free < perBlock {
		return 1
	}
	return int(free / perBlock)
}

// Now is the engine's virtual clock (seconds).
func (e *Engine) Now() float64 { return e.now }

// AdvanceTo moves an idle engine's clock forward (the GPU idles until t).
func (e *Engine) AdvanceTo(t float64) {
	if t > e.now {
		e.now = t
	}
}

// KVUsage is the fraction of KV blocks in use.
func (e *Engine) KVUsage() float64 { return e.kv.usage() }

// KVCapacityTokens is the KV cache's capacity in tokens.
func (e *Engine) KVCapacityTokens() int { return e.kv.total * e.Cfg.BlockSize }

// Load is the number of sequences in the engine (running + waiting), for the router.
func (e *Engine) Load() int { return len(e.running) + len(e.waiting) }

// Idle reports whether there is nothing to schedule.
func (e *Engine) Idle() bool { return len(e.running) == 0 && len(e.waiting) == 0 }

// Counts returns the running and waiting queue lengths.
func (e *Engine) Counts() (running, waiting int) { return len(e.running), len(e.waiting) }

// Submit queues a sequence that arrived at virtual time at, with its prompt's block hashes
// (see HashBlocks); an idle engine's clock moves to at.
func (e *Engine) Submit(s *Seq, hashes []uint64, at float64) {
	if e.Idle() {
		e.AdvanceTo(at)
	} else if at > e.now {
		// A busy engine whose clock lags the caller's: the request joins at the engine's now
		// rather than dragging the clock over work still in flight.
		at = e.now
	}
	s.Arrival = at
	s.blockHashes = hashes
	if s.Target <= 0 {
		s.Target = 1
	}
	// Each request goes to one API-server process, in turn (each holds its own HTTP
	// connections).
	s.apiServer = e.apiNext % len(e.apiBusy)
	e.apiNext++
	e.waiting = append(e.waiting, s)
}

// HashBlocks chains token ids into one hash per full block, as vLLM's prefix cache does
// (hash(parent_hash, block_tokens)): equal hashes mean equal whole prefixes.
func HashBlocks(ids []uint32, blockSize int) []uint64 {
	n := len(ids) / blockSize
	out := make([]uint64, n)
	h := uint64(1469598103934665603)
	for b := 0; b < n; b++ {
		for _, id := range ids[b*blockSize : (b+1)*blockSize] {
			h ^= uint64(id)
			h *= 1099511628211
		}
		h ^= h >> 29
		if h == 0 {
			h = 1
		}
		out[b] = h
	}
	return out
}

func (e *Engine) freeSeq(s *Seq) {
	for i := len(s.blocks) - 1; i >= 0; i-- { // tail first, so prefixes stay cached longest
		e.kv.release(s.blocks[i])
	}
	s.blocks = s.blocks[:0]
}

// ensure allocates blocks so the sequence can hold tokens, all or nothing.
func (e *Engine) ensure(s *Seq, tokens int) bool {
	need := (tokens+e.Cfg.BlockSize-1)/e.Cfg.BlockSize - len(s.blocks)
	if need <= 0 {
		return true
	}
	if need > e.kv.nfree {
		return false
	}
	for i := 0; i < need; i++ {
		s.blocks = append(s.blocks, e.kv.alloc())
	}
	return true
}

func (e *Engine) preempt(s *Seq) {
	e.freeSeq(s)
	s.computed = 0
	s.running = false
	s.Preemptions++
	e.res.Preempted++
	e.waiting = append([]*Seq{s}, e.waiting...)
}

// Step runs one engine iteration: schedule, execute (advance the clock by the cost model),
// then emit tokens and finish sequences. It returns nil when there is nothing to run. The
// result is reused by the next Step.
func (e *Engine) Step() *StepResult {
	r := &e.res
	*r = StepResult{SpecPerPos: r.SpecPerPos[:0], TTFTs: r.TTFTs[:0], ITLs: r.ITLs[:0], Finished: r.Finished[:0]}
	e.sched, e.schedOf, e.specOf = e.sched[:0], e.schedOf[:0], e.specOf[:0]
	e.dropAborted()
	if e.Idle() {
		if len(r.Finished) > 0 {
			r.KVUsage = e.kv.usage()
			return r // aborted requests still need their stats recorded
		}
		return nil
	}
	if e.fePrev > e.now && !e.Cost.P.FrontendDecoupled {
		e.now = e.fePrev // the frontend is a step behind: the engine core waits for it
	}
	budget := e.Cfg.MaxBatchedTokens
	specK := e.Cfg.SpecK
	pp := e.partialPrefills()
	// Running sequences first, in arrival order; preempt from the back when blocks run out
	// (vLLM V1 Scheduler.schedule, RECOMPUTE preemption).
	for i := 0; i < len(e.running) && budget > 0; {
		s := e.running[i]
		need := s.total() - s.computed
		if t := e.Cfg.LongPrefillThreshold; t > 0 && e.Cfg.ChunkedPrefill && need > t {
			need = t
		}
		if s.computed < s.PromptTokens {
			need = min(need, pp.slot)
		}
		spec := false
		if need == 1 && specK > 0 && s.generated < s.Target {
			spec = true
			need += specK
		}
		n := min(need, budget)
		if spec && n < need {
			spec, n = false, 1
		}
		ok := true
		for !e.ensure(s, s.computed+n) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			if victim == s {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		e.addWork(s, n, spec)
		budget -= n
		i++
	}
	if r.Preempted == 0 {
		for w := 0; w < len(e.waiting) && budget > 0 && len(e.running) < e.Cfg.MaxNumSeqs; {
			s := e.waiting[w]
			hits := 0
			if s.computed == 0 && len(s.blocks) == 0 {
				hits = e.lookupPrefix(s)
			}
			rest := s.total() - s.computed
			need := rest
			if t := e.Cfg.LongPrefillThreshold; t > 0 && e.Cfg.ChunkedPrefill && need > t {
				need = t
			}
			need = min(need, pp.slot)
			n := need
			if n > budget {
				if !e.Cfg.ChunkedPrefill {
					e.undoPrefix(s)
					break
				}
				n = budget
			}
			long := false
			if pp.on && n < rest {
				// It would stay partly prefilled after this step: admitted only while
				// fewer than the bound are, and while fewer long ones are for a long prompt;
				// shorter prompts behind it may go first.
				long = pp.long(rest)
				if pp.partial >= e.Cfg.MaxPartialPrefills || long && pp.longs >= e.Cfg.MaxLongPartialPrefills {
					e.undoPrefix(s)
					w++
					continue
				}
			}
			if !e.ensure(s, s.computed+n) {
				e.undoPrefix(s)
				break
			}
			if pp.on && n < rest {
				pp.partial++
				if long {
					pp.longs++
				}
			}
			s.longPrefill = long
			r.PrefixQuery += s.PromptTokens
			r.PrefixHits += hits
			if w == 0 {
				e.waiting = e.waiting[1:]
			} else {
				e.waiting = append(e.waiting[:w], e.waiting[w+1:]...)
			}
			s.running = true
			if !s.scheduledOnce {
				s.scheduledOnce = true
				s.Scheduled = e.now
			}
			e.running = append(e.running, s)
			e.addWork(s, n, false)
			budget -= n
		}
	}
	if len(e.sched) == 0 {
		// Nothing fits (e.g. one request larger than the whole cache): fail the head request
		// rather than spin.
		if len(e.waiting) > 0 && len(e.running) == 0 {
			s := e.waiting[0]
			e.waiting = e.waiting[1:]
			e.finish(s, "abort")
		}
		r.Running, r.Waiting = len(e.running), len(e.waiting)
		r.KVUsage = e.kv.usage()
		return r
	}
	b := Batch{Seqs: e.sched}
	for _, sp := range e.specOf {
		if sp {
			b.SpecK, b.SpecDraftFrac = specK, e.Cfg.SpecDraftFrac
			break
		}
	}
	if us := e.Cost.P.GrammarTokenUS; us > 0 {
		// One bitmask per structured sequence per sampled position (the drafts' too).
		masks := 0
		for i, w := range e.sched {
			if w.Sampled && e.schedOf[i].Structured {
				masks++
				if e.specOf[i] {
					masks += specK
				}
			}
		}
		b.Grammar = float64(masks) * us * 1e-6
	}
	b.Compile = e.coldStall(b.Tokens())
	r.Batch = b
	r.Timing = e.Cost.StepCost(b, e.now)
	if e.Slow > 1 {
		// The profiler's cost is host time (its callbacks around every op and launch): the
		// kernels keep their durations and the step ends later.
		r.Timing.End = r.Timing.Start + (r.Timing.End-r.Timing.Start)*e.Slow
	}
	e.now = r.Timing.End
	e.complete()
	e.deliver()
	r.Running, r.Waiting = len(e.running), len(e.waiting)
	r.KVUsage = e.kv.usage()
	return r
}

func (e *Engine) addWork(s *Seq, n int, spec bool) {
	sampled := s.computed+n >= s.total()
	e.sched = append(e.sched, SeqWork{New: n, Context: s.computed, Sampled: sampled})
	e.schedOf = append(e.schedOf, s)
	e.specOf = append(e.specOf, spec)
}

func (e *Engine) lookupPrefix(s *Seq) int {
	if !e.Cfg.PrefixCaching {
		return 0
	}
	// At least the last prompt token must be computed to sample, so a fully cached prompt
	// recomputes its last block (vLLM does the same).
	maxBlocks := (s.PromptTokens - 1) / e.Cfg.BlockSize
	for i := 0; i < len(s.blockHashes) && i < maxBlocks; i++ {
		b, ok := e.kv.hit(s.blockHashes[i])
		if !ok {
			break
		}
		s.blocks = append(s.blocks, b)
	}
	s.computed = len(s.blocks) * e.Cfg.BlockSize
	return s.computed
}

func (e *Engine) undoPrefix(s *Seq) {
	e.freeSeq(s)
	s.computed = 0
}

// coldStall is the cold-start cost of this step: a one-time startup stall, then a compile
// (torch.compile / CUDA graph capture) for each new batch-shape bucket until ColdShapes are
// cached.
func (e *Engine) coldStall(tokens int) float64 {
	stall := 0.0
	if !e.started {
		e.started = true
		stall += e.Cfg.ColdStartup
	}
	if e.Cfg.ColdCompile > 0 && len(e.shapes) < e.Cfg.ColdShapes {
		bucket := 1
		for bucket < tokens {
			bucket <<= 1
		}
		if !e.shapes[bucket] {
			e.shapes[bucket] = true
			stall += e.Cfg.ColdCompile
		}
	}
	return stall
}

func (e *Engine) complete() {
	r := &e.res
	now := e.now
	for i, w := range e.sched {
		s := e.schedOf[i]
		wasPrompt := s.computed < s.PromptTokens
		if wasPrompt {
			r.PromptTokens += min(w.New, s.PromptTokens-s.computed)
		}
		// The speculative tokens beyond the first are verified drafts, not yet computed KV.
		if e.specOf[i] {
			s.computed++
		} else {
			s.computed += w.New
		}
		e.commitBlocks(s)
		if s.computed < s.total() {
			continue // a prefill chunk: nothing to sample yet
		}
		tokens := 1
		if e.specOf[i] {
			acc := 0
			r.SpecDrafts++
			r.SpecDraftTok += e.Cfg.SpecK
			for acc < e.Cfg.SpecK && e.rng.Float64() < e.Cfg.SpecAcceptance {
				for len(r.SpecPerPos) <= acc {
					r.SpecPerPos = append(r.SpecPerPos, 0)
				}
				r.SpecPerPos[acc]++
				acc++
			}
			r.SpecAccepted += acc
			tokens += acc
			s.computed += acc
		}
		tokens = min(tokens, s.Target-s.generated)
		if tokens <= 0 {
			continue
		}
		s.generated += tokens
		r.GenTokens += tokens
		ttft := -1
		if s.FirstToken == 0 {
			s.FirstToken = now
			ttft = len(r.TTFTs)
			r.TTFTs = append(r.TTFTs, now-s.Arrival)
		} else {
			r.ITLs = append(r.ITLs, now-s.LastToken)
		}
		s.LastToken = now
		finish := ""
		if s.generated >= s.Target {
			finish = "length"
			if s.Target < s.MaxTokens {
				finish = "stop"
			}
		}
		out := stepOutput{s: s, tokens: tokens, finish: finish, ttft: ttft, fin: -1}
		if finish != "" {
			s.running = false
			out.fin = len(r.Finished)
			e.finish(s, finish)
		}
		if s.Sink != nil {
			e.emits = append(e.emits, out)
		}
	}
	keep := e.running[:0]
	for _, s := range e.running {
		if s.running {
			keep = append(keep, s)
		}
	}
	clear(e.running[len(keep):])
	e.running = keep
}

// stepOutput is one sequence's output of a step, handed to its Sink once the frontend is done.
type stepOutput struct {
	s      *Seq
	tokens int
	finish string
	// ttft and fin index the step's TTFTs and Finished entries this output completes (-1:
	// none), which a decoupled frontend stamps (deliverDecoupled).
	ttft, fin int
}

// deliver runs the step's outputs through the frontend, a single server working in parallel
// with the engine core (FIFO over steps): it starts on a step's outputs when both the step
// and the previous step's outputs are done.
func (e *Engine) deliver() {
	if e.Cost.P.FrontendDecoupled {
		e.deliverDecoupled()
		return
	}
	r := &e.res
	tokens := 0
	for _, em := range e.emits {
		tokens += em.tokens
	}
	p := &e.Cost.P
	at := math.Max(e.now, e.feDone) + (p.FrontendStepUS+p.FrontendTokenUS*float64(tokens))*1e-6
	e.fePrev, e.feDone = e.feDone, at
	r.DeliverAt = at
	for i, em := range e.emits {
		em.s.Sink.Emit(em.s, em.tokens, at, em.finish)
		e.emits[i] = stepOutput{}
	}
	e.emits = e.emits[:0]
}

// deliverDecoupled hands the step's outputs to vLLM V1's API-server processes, which run
// apart from the engine core: each takes its own requests' outputs once the step has ended
// and it has finished what it was handed before (FIFO), spends FrontendStepUS on the step
// and FrontendTokenUS per token, and only then do its clients see them. The engine core
// never waits, so a slow frontend queues outputs instead of slowing steps.
//
// vLLM computes TTFT and end-to-end latency in the frontend's output processor when it
// picks an iteration's outputs up (from the request's frontend arrival; IterationStats'
// timestamp), and the inter-token, queue, prefill and decode intervals from the engine
// core's own timestamps (vLLM's docs/design/metrics.md). So the engine's TTFT and E2E
// histograms include the frontend's queue but not its handling of that step, while its
// ITL histogram shows engine time alone.
func (e *Engine) deliverDecoupled() {
	r := &e.res
	p := &e.Cost.P
	n := len(e.apiBusy)
	if cap(e.apiTok) < n {
		e.apiTok, e.apiStart = make([]int, n), make([]float64, n)
	}
	tok, start := e.apiTok[:n], e.apiStart[:n]
	clear(tok)
	for i := range start {
		start[i] = -1
	}
	for _, em := range e.emits {
		tok[em.s.apiServer] += em.tokens
		start[em.s.apiServer] = 0
	}
	r.DeliverAt = e.now
	for j := range start {
		if start[j] < 0 {
			continue
		}
		start[j] = math.Max(e.now, e.apiBusy[j])
		e.apiBusy[j] = start[j] + (p.FrontendStepUS+p.FrontendTokenUS*float64(tok[j]))*1e-6
		r.DeliverAt = math.Max(r.DeliverAt, e.apiBusy[j])
	}
	for i, em := range e.emits {
		j := em.s.apiServer
		if em.ttft >= 0 {
			r.TTFTs[em.ttft] = start[j] - em.s.Arrival
		}
		if em.fin >= 0 {
			r.Finished[em.fin].E2E = start[j] - em.s.Arrival
		}
		em.s.Sink.Emit(em.s, em.tokens, e.apiBusy[j], em.finish)
		e.emits[i] = stepOutput{}
	}
	e.emits = e.emits[:0]
}

// commitBlocks publishes the hashes of newly completed full prompt blocks.
func (e *Engine) commitBlocks(s *Seq) {
	if !e.Cfg.PrefixCaching {
		return
	}
	full := min(s.computed, s.PromptTokens) / e.Cfg.BlockSize
	for j := 0; j < full && j < len(s.blockHashes) && j < len(s.blocks); j++ {
		e.kv.commit(s.blocks[j], s.blockHashes[j])
	}
}

func (e *Engine) finish(s *Seq, reason string) {
	e.freeSeq(s)
	now := e.now
	f := Finished{Seq: s, Reason: reason, E2E: now - s.Arrival, PromptTokens: s.PromptTokens,
		GenerationTokens: s.generated, MaxTokensParam: s.MaxTokens}
	if s.scheduledOnce {
		f.Queue = s.Scheduled - s.Arrival
		if s.FirstToken > 0 {
			f.Prefill = s.FirstToken - s.Scheduled
			f.Decode = s.LastToken - s.FirstToken
			f.Inference = s.LastToken - s.Scheduled
		}
	} else {
		f.Queue = now - s.Arrival
	}
	e.res.Finished = append(e.res.Finished, f)
	if reason == "abort" && s.Sink != nil {
		s.Sink.Emit(s, 0, now, reason)
	}
}

func (e *Engine) dropAborted() {
	keep := e.running[:0]
	for _, s := range e.running {
		if s.aborted.Load() {
			s.running = false
			e.finish(s, "abort")
			continue
		}
		keep = append(keep, s)
	}
	clear(e.running[len(keep):])
	e.running = keep
	kw := e.waiting[:0]
	for _, s := range e.waiting {
		if s.aborted.Load() {
			e.finish(s, "abort")
			continue
		}
		kw = append(kw, s)
	}
	clear(e.waiting[len(kw):])
	e.waiting = kw
}

// prefillSlots is one step's account of partial prefills (EngineConfig.MaxPartialPrefills).
type prefillSlots struct {
	on             bool
	partial, longs int // prompts prefilled across steps now, and the long ones among them
	slot           int // the most tokens one prefill may take this step
	threshold      int // a prompt with more uncached tokens than this is long
}

func (p *prefillSlots) long(rest int) bool { return p.threshold > 0 && rest > p.threshold }

// partialPrefills counts the prompts in flight and, with a bound above 1, sizes each
// prefill's share of the step the way vLLM's PartialPrefillMetadata.from_queues does: the
// running prefills plus the waiting prompts that could join them (long ones only up to
// their bound), capped at the bound, split max_num_batched_tokens evenly.
func (e *Engine) partialPrefills() prefillSlots {
	p := prefillSlots{slot: math.MaxInt, threshold: e.Cfg.LongPrefillThreshold}
	bound := e.Cfg.MaxPartialPrefills
	if bound <= 0 || !e.Cfg.ChunkedPrefill {
		return p
	}
	p.on = true
	for _, s := range e.running {
		if s.computed < s.PromptTokens {
			p.partial++
			if s.longPrefill {
				p.longs++
			}
		}
	}
	if bound == 1 {
		return p
	}
	cand, longs := p.partial, p.longs
	for _, s := range e.waiting {
		if cand >= bound {
			break
		}
		if p.long(s.total() - s.computed) {
			if longs >= e.Cfg.MaxLongPartialPrefills {
				continue
			}
			longs++
		}
		cand++
	}
	if cand > 0 {
		p.slot = max(1, e.Cfg.MaxBatchedTokens/min(cand, bound))
	}
	return p
}

// expectedAccepted is the mean accepted draft tokens per speculation with k drafts and
// per-token acceptance a (a geometric series truncated at k); used in docs and tests.
func expectedAccepted(k int, a float64) float64 {
	if a >= 1 {
		return float64(k)
	}
	return a * (1 - math.Pow(a, float64(k))) / (1 - a)
}
