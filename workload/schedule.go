package workload

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
)

// Tokenizer counts tokens the way the served model does. It is optional: without one, a
// synthetic prompt of N words is taken as N tokens (see vocab) and a dataset prompt as
// len/4 tokens; the server's usage block gives the real counts either way.
type Tokenizer interface {
	Count(text string) int
}

// Options tune New.
type Options struct {
	// Seed overrides the contract's seed when not 0.
	Seed uint64
	// Tokenizer, when set, sizes prompts exactly; nil uses the word approximation.
	Tokenizer Tokenizer
	// Nonce, when not 0, starts every prompt (synthetic, dataset and replay alike) with
	// NonceWords words derived from it, before any shared prefix. An engine's prefix cache
	// matches from the first token, so two runs with different nonces share no cacheable
	// prefix and a run cannot hit what an earlier run of the same contract left in the cache.
	// Within one run every prompt carries the same nonce, so a task's shared prefix stays
	// shared and cacheable within the run. Arrival times, the task mix and every length draw
	// do not depend on it: a synthetic prompt keeps its drawn length (the nonce takes the
	// place of its last random words; a prompt shorter than nonce + shared prefix + 1 word
	// is lengthened to that), a dataset prompt gains the NonceWords tokens. 0 (the zero
	// Options) sends the same text for the same contract and seed, every time.
	// The runner draws one per run with NewNonce unless the contract sets
	// prompts.reuse_across_runs.
	Nonce uint64
}

// NonceWords is how many vocabulary words a nonce puts in front of every prompt: 3 words
// of a 256-word vocabulary, 16.7M distinct nonces, each word one token (see vocab).
const NonceWords = 3

// NewNonce draws a run's nonce from the operating system's random source, or returns 0
// when the contract asks for the same prompts in every run (prompts.reuse_across_runs).
func NewNonce(c *contract.Contract) uint64 {
	if c.Prompts.ReuseAcrossRuns {
		return 0
	}
	for {
		var b [8]byte
		crand.Read(b[:]) // never fails (crypto/rand)
		if n := binary.LittleEndian.Uint64(b[:]) % (1 << (8 * NonceWords)); n != 0 {
			return n
		}
	}
}

// Independent random streams (PCG stream selectors), so that adding a task or changing a
// prompt length does not move any arrival time, and changing text does not change lengths.
const (
	streamArrivals = 0xA77
	streamMix      = 0x313
	streamText     = 0x7E7
)

type taskPlan struct {
	t            *contract.Task
	prefix       string // the shared prefix text ("" when none)
	prefixTokens int    // its length in tokens (SharedPrefixTokens without a tokenizer)
	items        []Item // the dataset, when the task has one
}

type schedule struct {
	api     string
	arr     arrivals
	closed  int
	mix     *rand.Rand // task choice, lengths, dataset picks
	text    *rand.Rand // prompt words
	tasks   []taskPlan
	weights []float64
	byName  map[string]int
	tok     Tokenizer
	nonce   string // the nonce words and a trailing space, "" without a nonce
	nonceN  int    // NonceWords, or 0
	limitN  int
	limitD  time.Duration
	warmup  time.Duration
	seq     int
	done    bool
}

// New plans the contract's workload. Datasets and the replay trace are read here, once, so
// a bad file fails before any load starts; errors name the file and line. The returned
// Schedule generates requests lazily (a closed loop bounded only by duration is endless:
// the driver stops it by time) and is not safe for concurrent use.
func New(c *contract.Contract, opts Options) (Schedule, error) {
	seed := opts.Seed
	if seed == 0 {
		seed = c.Seed
	}
	s := &schedule{
		api:    c.API,
		mix:    rand.New(rand.NewPCG(seed, streamMix)),
		text:   rand.New(rand.NewPCG(seed, streamText)),
		byName: map[string]int{},
		tok:    opts.Tokenizer,
		limitN: c.Requests,
		limitD: c.Duration,
		warmup: c.Warmup,
	}
	if opts.Nonce != 0 {
		s.nonce, s.nonceN = joinWords("", nonceWords(opts.Nonce))+" ", NonceWords
	}
	datasets := map[string][]Item{}
	for i := range c.Tasks {
		t := &c.Tasks[i]
		tp := taskPlan{t: t}
		if t.Dataset != nil {
			path := c.Path(t.Dataset.File)
			key := t.Dataset.Format + "\x00" + path
			items, ok := datasets[key]
			if !ok {
				var err error
				if items, err = LoadDataset(path, t.Dataset.Format); err != nil {
					return nil, fmt.Errorf("task %q: %w", t.Name, err)
				}
				datasets[key] = items
			}
			tp.items = items
		} else if t.PromptTokens == nil && !t.MultiStep() {
			return nil, fmt.Errorf("task %q has neither prompt_tokens nor a dataset", t.Name)
		}
		s.sharedPrefix(&tp, seed)
		s.tasks = append(s.tasks, tp)
		s.weights = append(s.weights, t.Weight)
		s.byName[t.Name] = i
	}
	var events []Event
	if c.Arrival.Process == contract.Replay {
		path := c.Path(c.Arrival.File)
		var err error
		if events, err = LoadReplay(path); err != nil {
			return nil, err
		}
		for _, e := range events {
			if _, ok := s.byName[e.Task]; e.Task != "" && !ok {
				return nil, fmt.Errorf("%s:%d: task %q is not in the contract (want %s)", path, e.Line, e.Task, strings.Join(taskNames(c), "|"))
			}
		}
	}
	s.arr = newArrivals(c.Arrival, rand.New(rand.NewPCG(seed, streamArrivals)), events)
	if s.arr == nil {
		return nil, fmt.Errorf("unknown arrival process %q", c.Arrival.Process)
	}
	if c.Arrival.Process == contract.Closed {
		s.closed = c.Arrival.Concurrency
	}
	return s, nil
}

func taskNames(c *contract.Contract) []string {
	out := make([]string, len(c.Tasks))
	for i, t := range c.Tasks {
		out[i] = t.Name
	}
	return out
}

// sharedPrefix makes the task's prefix: words drawn from a generator seeded by the run seed
// and the task name, so every prompt of the task starts with the same text and two tasks'
// prefixes differ.
func (s *schedule) sharedPrefix(tp *taskPlan, seed uint64) {
	n := tp.t.SharedPrefixTokens
	if n <= 0 {
		return
	}
	h := fnv.New64a()
	h.Write([]byte(tp.t.Name))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	if s.tok == nil {
		tp.prefix, tp.prefixTokens = joinWords("", randomWords(n, r)), n
		return
	}
	tp.prefix = fitTokens(s.tok, "", randomWords(n+n/4+16, r), n, 1)
	tp.prefixTokens = s.tok.Count(tp.prefix)
}

// Closed implements Schedule.
func (s *schedule) Closed() int { return s.closed }

// Next implements Schedule.
func (s *schedule) Next() (Request, bool) {
	if s.done || (s.limitN > 0 && s.seq >= s.limitN) {
		s.done = true
		return Request{}, false
	}
	at, ev, ok := s.arr.next()
	if !ok || (s.closed == 0 && s.limitD > 0 && at >= s.limitD) {
		s.done = true
		return Request{}, false
	}
	var ti int
	if ev != nil && ev.Task != "" {
		ti = s.byName[ev.Task]
	} else {
		ti = pickIndex(s.weights, s.mix)
	}
	tp := &s.tasks[ti]
	r := Request{Seq: s.seq, At: at, Task: tp.t.Name, IgnoreEOS: tp.t.IgnoreEOS, PrefixTokens: s.nonceN + tp.prefixTokens}
	if s.closed == 0 {
		r.Phase = PhaseAt(at, s.warmup)
	}
	// Always draw the output length, so the mix stream advances the same way whatever the
	// trace or dataset says.
	r.MaxTokens = Sample(tp.t.OutputTokens, s.mix)
	if tp.t.MultiStep() {
		s.planSteps(&r, tp)
	} else if tp.items != nil {
		it := tp.items[s.mix.IntN(len(tp.items))]
		if it.OutputTokens > 0 {
			r.MaxTokens = it.OutputTokens
		}
		s.fromDataset(&r, tp, it)
	} else {
		n := Sample(*tp.t.PromptTokens, s.mix)
		if ev != nil && ev.PromptTokens > 0 {
			n = ev.PromptTokens
		}
		s.synthetic(&r, tp, n)
	}
	if ev != nil && ev.OutputTokens > 0 {
		r.MaxTokens = ev.OutputTokens
	}
	s.seq++
	return r, true
}

// PhaseAt is the phase of a request due at offset at: cold during the warm-up, then warm.
// The driver uses it for closed loops, where the phase follows the actual send time.
func PhaseAt(at, warmup time.Duration) string {
	if at < warmup {
		return record.PhaseCold
	}
	return record.PhaseWarm
}

func pickIndex(weights []float64, r *rand.Rand) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := r.Float64() * total
	last := 0
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		if x < w {
			return i
		}
		x -= w
		last = i
	}
	return last
}

// synthetic fills a synthetic prompt of n tokens: the run's nonce (if any), the task's
// shared prefix, a per-request salt, then random words. n is raised to nonce+prefix+1 when
// the draw is shorter, so every prompt has at least one token of its own.
func (s *schedule) synthetic(r *Request, tp *taskPlan, n int) {
	head, headN := strings.TrimSuffix(s.nonce+tp.prefix, " "), s.nonceN+tp.prefixTokens
	if n < headN+1 {
		n = headN + 1
	}
	salt := saltWords(r.Seq)
	var text string
	if s.tok == nil {
		text = synthPrompt(head, headN, n, salt, s.text)
	} else {
		body := append(salt, randomWords(n-headN+16, s.text)...)
		text = fitTokens(s.tok, head, body, n, 1)
		n = s.tok.Count(text)
	}
	r.PromptTokens, r.PlannedPromptTokens = n, n
	r.Prompt = text
	if s.api == contract.APIChat {
		r.Messages = []Message{{Role: "user", Content: text}}
	}
}

func (s *schedule) count(text string) int {
	if s.tok != nil {
		return s.tok.Count(text)
	}
	return estimateTokens(text)
}

// fromDataset fills a request from a dataset item. The nonce and the shared prefix, if
// any, go in front of the prompt (chat: in front of the first message).
func (s *schedule) fromDataset(r *Request, tp *taskPlan, it Item) {
	withPrefix := func(text string) string {
		if tp.prefix != "" {
			text = tp.prefix + " " + text
		}
		return s.nonce + text
	}
	r.Prompt = withPrefix(it.Prompt)
	if s.api != contract.APIChat {
		r.PromptTokens = s.nonceN + tp.prefixTokens + s.count(it.Prompt)
		if s.tok != nil {
			r.PlannedPromptTokens = r.PromptTokens
		}
		return
	}
	msgs := []Message{{Role: "user", Content: it.Prompt}}
	if len(it.Messages) > 0 {
		msgs = slices.Clone(it.Messages)
	}
	n := s.nonceN + tp.prefixTokens
	for _, m := range msgs {
		n += s.count(m.Content)
	}
	msgs[0].Content = withPrefix(msgs[0].Content)
	r.Messages = msgs
	r.PromptTokens = n
	if s.tok != nil {
		r.PlannedPromptTokens = n
	}
}
