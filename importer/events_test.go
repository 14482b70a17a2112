package importer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/ladder"
	"github.com/pel-ladder/pel/record"
)

// TestSummarizedEventsAreNotAStreamShape: GuideLLM keeps each request's first and last
// token times only, so its import holds no content event the server sent. Analysed as pel
// analyze does, the run has no event-shape signal (tokens per event, event gaps, coalesced
// share, stalls) and no application-layer finding that the stream is coalesced or buffered
// on the way, while its ITL and TPOT (GuideLLM's own inter-token latency) stay.
func TestSummarizedEventsAreNotAStreamShape(t *testing.T) {
	shape := []string{evidence.SigTokensPerChunk, evidence.SigChunkGapP50, evidence.SigCoalescedShare,
		evidence.SigStallShare, evidence.SigStallAligned, evidence.SigStallAlignedBase}
	for _, file := range []string{"testdata/guidellm/benchmarks-2025-06.json", "testdata/guidellm/benchmarks-2025-07.json"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if _, err := Import("guidellm", file, dir, Options{}); err != nil {
				t.Fatal(err)
			}
			ev, _, err := ladder.Analyze(dir, ladder.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range shape {
				if s, ok := ev.Signal(name); ok {
					t.Errorf("%s = %v (%s): GuideLLM kept no content event, only the first and last token", name, s.Value, s.Note)
				}
			}
			for _, name := range []string{evidence.SigITLP50, evidence.SigTPOTP50} {
				if _, ok := ev.Signal(name); !ok {
					t.Errorf("%s absent: the first-to-last token gap over the tokens between is GuideLLM's own inter-token latency", name)
				}
			}
			for _, f := range ev.Findings {
				if f.Layer == evidence.LayerApplication && (f.ID == "client-server-gap" || strings.Contains(f.Symptom, "coalesced")) {
					t.Errorf("finding %s (%s): %s", f.ID, f.Layer, f.Symptom)
				}
			}
			var notes []string
			for _, st := range ev.Stages {
				if st.Stage == evidence.StageRequestTrace {
					notes = st.Notes
				}
			}
			if !slices.ContainsFunc(notes, func(n string) bool {
				return strings.Contains(n, record.FlagEventsSummarized) && strings.Contains(n, "not measured")
			}) {
				t.Errorf("no stage-1 note says why the event-shape signals are absent: %q", notes)
			}
		})
	}
}

// aiperfNoChunks is the streamed record of AIPerf's own documentation
// (testdata/aiperf-doc) without its inter_chunk_latency list: AIPerf then keeps the first
// token's time and the request's end only.
const aiperfNoChunks = `{"metadata":{"x_request_id":"7609a2e7","request_start_ns":1759813207532900363,"request_ack_ns":1759813207650730976,"request_end_ns":1759813207838764604,"benchmark_phase":"profiling","was_cancelled":false},` +
	`"metrics":{"input_sequence_length":{"value":550,"unit":"tokens"},"ttft":{"value":255.88656799999998,"unit":"ms"},"request_latency":{"value":297.52522799999997,"unit":"ms"},"output_token_count":{"value":9,"unit":"tokens"},"output_sequence_length":{"value":9,"unit":"tokens"},"inter_token_latency":{"value":5.2048325,"unit":"ms"}},"error":null}`

// TestEventsSummarizedFlag: a completed streamed record is flagged events_summarized
// exactly when the tool's file kept only its first and last token's times (GuideLLM;
// AIPerf without inter_chunk_latency), not when it kept every chunk's arrival (vllm bench
// serve's itls, AIPerf's inter_chunk_latency, genai-perf's response timestamps).
func TestEventsSummarizedFlag(t *testing.T) {
	write := func(t *testing.T, name, body string) string {
		file := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	tests := []struct {
		format, name string
		file         func(t *testing.T) string
		summarized   bool
	}{
		{"guidellm", "GuideLLM 2025-06 (first and last token times)", func(*testing.T) string { return "testdata/guidellm/benchmarks-2025-06.json" }, true},
		{"guidellm", "GuideLLM 2025-07 (first and last token times)", func(*testing.T) string { return "testdata/guidellm/benchmarks-2025-07.json" }, true},
		{"guidellm", "GuideLLM 0.5 layout (first and last token times)", func(t *testing.T) string { return write(t, "benchmarks.json", guidellm05) }, true},
		{"aiperf", "AIPerf without inter_chunk_latency", func(t *testing.T) string { return write(t, "profile_export.jsonl", aiperfNoChunks) }, true},
		{"aiperf", "AIPerf with inter_chunk_latency", func(*testing.T) string { return "testdata/aiperf-doc/profile_export.jsonl" }, false},
		{"aiperf", "AIPerf run with inter_chunk_latency", func(*testing.T) string { return "testdata/aiperf-run1/profile_export.jsonl" }, false},
		{"vllm-bench", "vllm bench serve itls", func(t *testing.T) string { return write(t, "vllm.json", vllmDetailed) }, false},
		{"genai-perf", "genai-perf response timestamps", func(t *testing.T) string { return write(t, "profile_export.json", genaiperfExport) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, recs := importRun(t, tc.format, tc.file(t))
			streamed := 0
			for _, r := range recs {
				if !r.OK() || r.OutputTokens < 2 {
					if r.HasFlag(record.FlagEventsSummarized) {
						t.Errorf("record %d (%s, %d tokens) flagged: it has no events to summarize", r.Seq, r.Status, r.OutputTokens)
					}
					continue
				}
				streamed++
				if got := r.HasFlag(record.FlagEventsSummarized); got != tc.summarized {
					t.Errorf("record %d: flagged %v, want %v (events %v, tokens %v)", r.Seq, got, tc.summarized, r.ChunkUS, r.ChunkTokens)
				}
			}
			if streamed == 0 {
				t.Fatal("no completed streamed record to judge")
			}
		})
	}
}
