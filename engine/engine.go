// Package engine is pel's one table of the serving engines it knows (vLLM, SGLang, TGI,
// Triton with TensorRT-LLM, trtllm-serve, llama.cpp): for each, the /metrics families that
// carry each quantity and what they mean, the facts the diagnosis reads about the engine
// (whether its TTFT includes its queue, whether it serves from a CPU), and the knobs a
// prediction or a probe names in the engine's own terms. Package scrape reads the families
// from it; package diagnose the knobs and facts. A new engine is one entry here.
package engine

import "strings"

// Normalized quantities: what a /metrics page is read into before any windowing. Units are
// fixed: counts, ratios 0..1, seconds, tokens, MiB, bytes/s.
const (
	QWaiting        = "waiting"          // gauge, requests
	QRunning        = "running"          // gauge, requests
	QKVUsage        = "kv_usage"         // gauge, ratio
	QPreemptions    = "preemptions"      // counter
	QPrefixQueries  = "prefix_queries"   // counter, tokens (or blocks, engine-defined)
	QPrefixHits     = "prefix_hits"      // counter
	QPrefixHitGauge = "prefix_hit_rate"  // gauge, ratio (engines without the counters)
	QPromptTokens   = "prompt_tokens"    // counter
	QGenTokens      = "gen_tokens"       // counter
	QTTFT           = "ttft"             // histogram, seconds
	QITL            = "itl"              // histogram, seconds
	QE2E            = "e2e"              // histogram, seconds
	QQueue          = "queue"            // histogram, seconds
	QPrefill        = "prefill"          // histogram, seconds
	QDecode         = "decode"           // histogram, seconds
	QIterTokens     = "iteration_tokens" // histogram, tokens per engine step
	QSpecDrafts     = "spec_drafts"      // counter
	QSpecDraftTok   = "spec_draft_tokens"
	QSpecAccepted   = "spec_accepted_tokens"
	QSpecRateGauge  = "spec_accept_rate" // gauge, ratio (SGLang)
	QSpecLenGauge   = "spec_accept_len"  // gauge, tokens (SGLang)
	QServiceSeconds = "service_seconds"  // counter, seconds: per-request processing time, summed (llama.cpp)
	QSteps          = "steps"            // counter: engine forward passes (llama.cpp llama_decode calls)
	QTokensMax      = "tokens_max"       // gauge, tokens: the largest context any sequence has held
	QStepLag        = "step_lag"         // gauge, seconds (pel sim only)
	QClockSkipped   = "clock_skipped"    // counter, seconds (pel sim only)
)

// Kind is a metric family's Prometheus type as pel reads it.
type Kind int

// Kinds.
const (
	Gauge Kind = iota
	Counter
	Hist
)

// Metric maps one normalized quantity to the families that carry it.
type Metric struct {
	Q        string
	Kind     Kind
	Families []string          // candidates, most preferred first: the first one present wins
	Match    map[string]string // label filter (TRT-LLM discriminator labels)
	Scale    float64           // multiply to reach the normalized unit (0 means 1)
	All      bool              // use every candidate present and add them (TX + RX)
	Ratio    bool              // within one replica, average several series instead of adding them
}

// Knobs names changes in the engine's own terms, so a prediction or a next probe never asks
// a llama.cpp user for a vLLM flag. An empty knob: the engine has none for it, and a
// prediction says so.
type Knobs struct {
	// Seqs raises or caps the number of sequences decoded together.
	Seqs string
	// Context gives each sequence more context (or fewer sequences the same memory).
	Context string
	// Chunk splits long prefills over several steps.
	Chunk string
	// ChunkCap caps one long prompt's share of a step when chunked prefill is already on.
	ChunkCap string
	// Spec turns speculative decoding off or down.
	Spec string
	// KVMem gives the KV cache more memory.
	KVMem string
	// Queue, KV, Prefill: the engine's own counters to watch for each.
	Queue, KV, Prefill string
	// SeqsConfig and ContextConfig are the engine_config keys that show a change of Seqs or
	// Context was made ("": the engine does not report them).
	SeqsConfig, ContextConfig string
}

// Profile is one engine.
type Profile struct {
	// Name is the engine as evidence.json's run.engine names it; Title as a reader knows it.
	Name, Title string
	// Aliases are other names a user or a tool gives it.
	Aliases []string
	// Prefixes identify its /metrics families in detection; Replica the labels that tell
	// its replicas apart on one endpoint.
	Prefixes, Replica []string
	// Metrics maps quantities to its families, in preference order.
	Metrics []Metric
	Knobs   Knobs
	// CPU: the engine commonly serves from the CPU, where device counters and CUDA traces
	// may not exist.
	CPU bool
	// SlotCache: each of its slots keeps one prompt's cache, so a conversation finds its
	// history only if no other task took its slot meanwhile.
	SlotCache bool
	// ClosesStreams: its server advertises keep-alive but closes the connection after a
	// streamed response.
	ClosesStreams bool
	// Processes is the form of its server: "one" (HTTP front end and engine loop in one
	// process), "two" (an API server process apart from the engine core: a frontend cost
	// does not stall the engine's steps but queues in front of them), "" unknown.
	Processes string
	// QueuesWhenFull: with every sequence slot taken, a new request waits in the engine's
	// queue, which its waiting gauge lists, rather than being refused; a bounded queue
	// refuses only once it holds requests. A request refused while that gauge never left 0
	// was refused before the engine saw it, however many sequences ran. vLLM:
	// Scheduler.add_request appends to its waiting queue (vllm/v1/core/sched/scheduler.py);
	// SGLang: the scheduler's waiting_queue, refused past --max-queued-requests only;
	// llama.cpp: a task that finds no free slot is deferred (server.cpp defer(), counted in
	// requests_deferred). TGI is not: its router refuses past --max-concurrent-requests,
	// which counts running requests too.
	QueuesWhenFull bool
}

// Generic is the profile of an engine pel does not know: knobs in general terms.
var Generic = &Profile{Name: "", Title: "the engine", Knobs: Knobs{
	Seqs: "the engine's limit on concurrent sequences", KVMem: "more memory for the KV cache", Context: "the engine's per-sequence context length",
	Chunk: "chunked prefill (or a smaller prefill token budget)", ChunkCap: "a per-step cap on each long prompt's prefill tokens",
	Spec: "speculative decoding off", Queue: "the engine's waiting-request gauge", KV: "the engine's KV-cache usage", Prefill: "the engine's prefill time",
}}

// Lookup returns the profile of the engine named name (its Name or an alias, any case);
// Generic when pel does not know it.
func Lookup(name string) *Profile {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range Profiles {
		if p.Name == n {
			return p
		}
		for _, a := range p.Aliases {
			if a == n {
				return p
			}
		}
	}
	return Generic
}

// Known reports whether name is an engine of the table.
func Known(name string) bool { return Lookup(name) != Generic }
