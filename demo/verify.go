package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/verify"
)

// VerifyDir is the candidate run's directory inside the demo's run directory.
const VerifyDir = "verify"

// Verification is pel demo --verify: the diagnosis, the predicted change applied to the
// simulated engine (or to the contract's load, for a change of workload), the same contract
// run again, and the prediction checked.
type Verification struct {
	Base      *Result
	Candidate *Result // nil when nothing was verified
	Finding   *evidence.Finding
	// Applied says what was changed in the scenario, in its own terms.
	Applied string
	Check   verify.Result
	// Skipped says why nothing was verified (no owner finding, no structured prediction).
	Skipped string
}

// Verify runs the demo, applies the owner finding's predicted change to the scenario (or the
// given action instead, to test that a wrong change is caught), reruns the same contract into
// OutDir/verify, and checks the prediction.
func Verify(ctx context.Context, o Options, override evidence.Action) (*Verification, error) {
	base, err := Run(ctx, o)
	if err != nil {
		return nil, err
	}
	return VerifyFrom(ctx, base, o, override)
}

// VerifyFrom verifies an existing demo run's owner prediction (o as given to that run).
func VerifyFrom(ctx context.Context, base *Result, o Options, override evidence.Action) (*Verification, error) {
	begin := time.Now()
	v := &Verification{Base: base}
	ev := base.Evidence
	if ev.OwnerLayer == nil {
		v.Skipped = "no layer limits accepted tasks in this run: nothing to verify"
		return v, nil
	}
	for i := range ev.Findings {
		if ev.Findings[i].Layer == *ev.OwnerLayer && ev.Findings[i].Predicted != nil {
			v.Finding = &ev.Findings[i]
			break
		}
	}
	if v.Finding == nil {
		v.Skipped = "the owner finding carries no structured prediction"
		return v, nil
	}
	ch := v.Finding.Predicted.Change
	if override != "" {
		ch = evidence.Change{Action: override, Knob: string(override)}
	}
	sc, applied, err := applyChange(base.Scenario, ch)
	if err != nil {
		v.Skipped = err.Error()
		return v, nil
	}
	v.Applied = applied
	co := o
	co.OutDir = filepath.Join(base.Dir, VerifyDir)
	cand, err := runScenario(ctx, sc, co, begin)
	if err != nil {
		return nil, fmt.Errorf("verification run: %w", err)
	}
	v.Candidate = cand
	// The candidate ran with the change made: say so where the engine would have shown it.
	v.Check = verify.Check(ev, cand.Evidence, &evidence.Finding{ID: v.Finding.ID, Layer: v.Finding.Layer,
		Predicted: &evidence.Predicted{Change: evidence.Change{Action: ch.Action, Knob: ch.Knob}, Expect: v.Finding.Predicted.Expect}}, nil)
	return v, nil
}

// ErrNoMapping: the change has no counterpart among the simulated engine's knobs.
var ErrNoMapping = errors.New("no simulator knob for this change")

// applyChange returns a copy of the scenario with the change made, and what was changed.
func applyChange(sc *sim.Scenario, ch evidence.Change) (*sim.Scenario, string, error) {
	s := *sc
	e := &s.Engine
	t, f := true, false
	switch ch.Action {
	case evidence.ActRaiseSeqs:
		// The value the prediction names; without one (or the override), twice the current.
		e.MaxNumSeqs = atLeast(ch.To, 2*max(1, e.MaxNumSeqs))
		return &s, fmt.Sprintf("max_num_seqs %d → %d", sc.Engine.MaxNumSeqs, e.MaxNumSeqs), nil
	case evidence.ActCapSeqs:
		n := atLeast(ch.To, 0)
		if n <= 0 {
			return nil, "", fmt.Errorf("%w: the change names no cap", ErrNoMapping)
		}
		e.MaxNumSeqs = n
		return &s, fmt.Sprintf("max_num_seqs %d → %d", sc.Engine.MaxNumSeqs, n), nil
	case evidence.ActMoreKV:
		e.KVCacheTokens = 0 // sized from what the GPU's memory leaves after the weights
		return &s, fmt.Sprintf("kv_cache_tokens %d → sized from GPU memory", sc.Engine.KVCacheTokens), nil
	case evidence.ActMoreContext:
		e.MaxModelLen = 0 // the model's own maximum
		return &s, fmt.Sprintf("max_model_len %d → the model's maximum", sc.Engine.MaxModelLen), nil
	case evidence.ActChunkPrefill:
		// vLLM V1 finishes a running prefill's chunks before admitting waiting prompts, so
		// chunking alone still lets one long prompt take whole steps: a per-prompt cap
		// (long_prefill_token_threshold) is what leaves budget to the short ones.
		e.EnableChunkedPrefill = &t
		if e.MaxNumBatchedTokens == 0 || e.MaxNumBatchedTokens > 2048 {
			e.MaxNumBatchedTokens = 2048
		}
		if e.LongPrefillThreshold == 0 || e.LongPrefillThreshold > e.MaxNumBatchedTokens/4 {
			e.LongPrefillThreshold = e.MaxNumBatchedTokens / 4
		}
		return &s, fmt.Sprintf("chunked prefill on, max_num_batched_tokens %d, long_prefill_token_threshold %d", e.MaxNumBatchedTokens, e.LongPrefillThreshold), nil
	case evidence.ActCUDAGraphs:
		e.CUDAGraphs = &t
		return &s, "cuda_graphs on", nil
	case evidence.ActAsyncScheduling:
		e.Scheduler.Async = true
		return &s, "scheduler.async on (host scheduling overlapped with the GPU step)", nil
	case evidence.ActFewerBytes:
		e.DTypeBytes = 1
		return &s, "weights and KV cache in FP8 (1 byte per element)", nil
	case evidence.ActHalveTP:
		if e.TensorParallel < 2 {
			return nil, "", fmt.Errorf("%w: tensor parallelism is already 1", ErrNoMapping)
		}
		e.TensorParallel /= 2
		e.Replicas = 2 * max(1, e.Replicas)
		return &s, fmt.Sprintf("tensor_parallel %d → %d, replicas %d → %d", sc.Engine.TensorParallel, e.TensorParallel, max(1, sc.Engine.Replicas), e.Replicas), nil
	case evidence.ActBalanceRouting:
		e.Router = "least_loaded"
		return &s, "router least_loaded", nil
	case evidence.ActNoSpeculation:
		e.Speculative.NumTokens = 0
		return &s, "speculative decoding off", nil
	case evidence.ActNoProxyBuffering:
		e.Proxy.BufferBytes, e.Proxy.FlushInterval, e.StreamInterval = 0, 0, 0
		return &s, "proxy buffering off", nil
	case evidence.ActPrewarm:
		e.ColdStart.Compile, e.ColdStart.Startup, e.ColdStart.Shapes = 0, 0, 0
		return &s, "warm-up done before the first request (no startup or compile on the request path)", nil
	case evidence.ActShorterPrompts:
		c, err := scaleContract(sc.Contract, promptKeys, 0.5)
		if err != nil {
			return nil, "", err
		}
		s.Contract = c
		return &s, "every task's prompt lengths halved in the contract", nil
	case evidence.ActLessLoad:
		c, err := scaleContract(sc.Contract, loadKeys, 0.5)
		if err != nil {
			return nil, "", err
		}
		s.Contract = c
		return &s, "the contract's arrival rate (or concurrency) halved", nil
	}
	_ = f
	return nil, "", fmt.Errorf("%w: %s", ErrNoMapping, ch.Action)
}

var firstInt = regexp.MustCompile(`\d+`)

// atLeast parses the first integer in s ("about 23", "8"), or returns def.
func atLeast(s string, def int) int {
	if m := firstInt.FindString(s); m != "" {
		if n, err := strconv.Atoi(m); err == nil {
			return n
		}
	}
	return def
}

var (
	// promptKeys are the numbers of a task's prompt_tokens distribution.
	promptKeys = map[string][]string{"prompt_tokens": {"value", "min", "max", "mean", "sd", ""}}
	// loadKeys are the arrival process's load figures.
	loadKeys = map[string][]string{"arrival": {"rate", "concurrency", "from", "to"}}
)

// scaleContract multiplies the named numbers of a contract's YAML by f (whole numbers stay
// whole, at least 1). keys maps a mapping key to the scalar keys inside it to scale ("" for
// the key's own scalar value, as in prompt_tokens: 320).
func scaleContract(src []byte, keys map[string][]string, f float64) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	scale := func(n *yaml.Node) {
		if n.Kind != yaml.ScalarNode {
			return
		}
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return
		}
		if i, err := strconv.Atoi(n.Value); err == nil {
			n.Value = strconv.Itoa(max(1, int(float64(i)*f+0.5)))
			return
		}
		n.Value = strconv.FormatFloat(v*f, 'g', -1, 64)
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for _, c := range n.Content {
			walk(c)
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			sub, ok := keys[n.Content[i].Value]
			if !ok {
				continue
			}
			val := n.Content[i+1]
			for _, k := range sub {
				if k == "" {
					scale(val)
					continue
				}
				if val.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(val.Content); j += 2 {
						if val.Content[j].Value == k {
							scale(val.Content[j+1])
						}
					}
				}
			}
		}
	}
	walk(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
