package diagnose

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/engine"
	"github.com/pel-ladder/pel/evidence"
)

// knobTokens are the engine-specific words of a profile's knobs: its flags (--max-num-seqs,
// -np) and its metric names (vllm:..., tgi_...).
var knobTokens = regexp.MustCompile(`--?[a-z][a-z0-9-]+|[a-z]+:[a-z_]+|\b(?:tgi|nv_trt_llm|nv_inference)_[a-z_]+|\b(?:max_batch_size|kv_cache_free_gpu_mem_fraction|enable_chunked_context|max_num_tokens)\b`)

func tokensOf(k engine.Knobs) map[string]bool {
	out := map[string]bool{}
	for _, s := range []string{k.Seqs, k.Context, k.Chunk, k.ChunkCap, k.Spec, k.KVMem, k.Queue, k.KV, k.Prefill} {
		for _, t := range knobTokens.FindAllString(s, -1) {
			out[t] = true
		}
	}
	return out
}

// foreign are the words of every other engine's knobs that this engine's knobs do not use.
func foreign(p *engine.Profile) map[string]bool {
	own := tokensOf(p.Knobs)
	out := map[string]bool{}
	for _, q := range engine.Profiles {
		if q.Knobs == p.Knobs {
			continue
		}
		for t := range tokensOf(q.Knobs) {
			if !own[t] {
				out[t] = true
			}
		}
	}
	return out
}

// TestChangesNameTheEnginesKnob: for each engine of the table, each change a prediction can
// ask for names that engine's own knob (or says the engine has none), never another's.
func TestChangesNameTheEnginesKnob(t *testing.T) {
	acts := []struct {
		act  evidence.Action
		knob func(engine.Knobs) string
	}{
		{evidence.ActRaiseSeqs, func(k engine.Knobs) string { return k.Seqs }},
		{evidence.ActCapSeqs, func(k engine.Knobs) string { return k.Seqs }},
		{evidence.ActMoreKV, func(k engine.Knobs) string { return k.KVMem }},
		{evidence.ActMoreContext, func(k engine.Knobs) string { return k.Context }},
		{evidence.ActChunkPrefill, func(k engine.Knobs) string { return k.Chunk }},
		{evidence.ActNoSpeculation, func(k engine.Knobs) string { return k.Spec }},
	}
	for _, p := range append(append([]*engine.Profile{}, engine.Profiles...), engine.Generic) {
		bad := foreign(p)
		for _, a := range acts {
			c := change(p.Name, a.act)
			want := a.knob(p.Knobs)
			if want == "" || !strings.Contains(c.Knob, want) {
				t.Errorf("%s %s: %q does not name the engine's knob %q", p.Title, a.act, c.Knob, want)
			}
			for _, tok := range knobTokens.FindAllString(c.Knob, -1) {
				if bad[tok] {
					t.Errorf("%s %s: %q names %s, another engine's knob", p.Title, a.act, c.Knob, tok)
				}
			}
		}
	}
}

// TestFindingsSpeakTheEnginesTerms: the findings the catalog makes for each engine (a KV
// cache that thrashes, head-of-line prefills with chunked prefill on, speculation that
// costs more than it gains, a full admission queue) name only that engine's knobs and
// counters in their predictions and probes.
func TestFindingsSpeakTheEnginesTerms(t *testing.T) {
	healthyClient := []sig{{evidence.SigTTFTP50, 90}, {evidence.SigTTFTP99, 200}, {evidence.SigITLP50, 20}, {evidence.SigITLP99, 30},
		{evidence.SigAcceptanceRate, 1}, {evidence.SigTTFTFromSentP50, 90}, {evidence.SigTokensPerChunk, 1}}
	with := func(extra ...sig) []sig { return append(append([]sig{}, healthyClient...), extra...) }
	cases := []struct {
		name   string
		sigs   []sig
		reason string
		cfg    map[string]string
		want   string // the finding whose prediction must name the engine's knob
	}{
		{"kv-thrash", with(sig{evidence.SigKVUsageMax, 1}, sig{evidence.SigKVUsageMean, 0.97}, sig{evidence.SigPreemptionRate, 2},
			sig{evidence.SigWaitingMean, 12}, sig{evidence.SigRunningMean, 40}), "slo ttft max", nil, kvThrash.id},
		{"speculative net-negative", with(sig{evidence.SigSpecAcceptanceRate, 0.2}, sig{evidence.SigSpecMeanAcceptLen, 1.3}, sig{evidence.SigTraceDraftPct, 40}),
			"slo itl p99", nil, specNegative.id},
	}
	for _, p := range engine.Profiles {
		bad := foreign(p)
		for _, tc := range cases {
			ev := build(tc.sigs...)
			ev.Run.Engine = p.Name
			ev.Run.EngineConfig = tc.cfg
			Diagnose(ev, recs(200, rejectEvery(4, tc.reason)), Options{Objectives: slo, Resamples: 20})
			found := false
			for _, f := range ev.Findings {
				text := f.Prediction + " " + f.NextProbe
				for _, tok := range knobTokens.FindAllString(text, -1) {
					if bad[tok] {
						t.Errorf("%s, %s: finding %s names %s, another engine's: %s", p.Title, tc.name, f.ID, tok, text)
					}
				}
				if f.ID == tc.want {
					found = true
					if f.Predicted == nil || f.Predicted.Change.Knob == "" {
						t.Errorf("%s, %s: %s predicts no change: %q", p.Title, tc.name, f.ID, f.Prediction)
					}
				}
			}
			if !found {
				t.Errorf("%s, %s: no %s finding (%s)", p.Title, tc.name, tc.want, ev.Verdict)
			}
		}
	}
}
