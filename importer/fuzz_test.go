package importer

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/pel-ladder/pel/record"
)

// fuzzRead runs one reader on data: it must return records or an error, never panic, and
// every record it emits is one pel can hold.
func fuzzRead(t *testing.T, format string, data []byte) {
	var f Format
	for _, x := range Formats {
		if x.Name == format {
			f = x
		}
	}
	n := 0
	s := &sink{file: "fuzz", w: func(r *record.Record) error {
		n++
		if r.OutputTokens < 0 || r.OutputTokens > record.MaxTokens || r.PromptTokens < 0 || len(r.ChunkUS) > record.MaxChunkTimings {
			t.Fatalf("record out of bounds: %+v", r)
		}
		if len(r.ChunkUS) != len(r.ChunkTokens) {
			t.Fatalf("chunk timings and tokens differ in length: %d, %d", len(r.ChunkUS), len(r.ChunkTokens))
		}
		return nil
	}}
	err := f.read(bytes.NewReader(data), "fuzz", s)
	if err != nil && !errors.Is(err, ErrBadInput) {
		t.Fatalf("a reader of a byte slice failed other than as bad input: %v", err)
	}
}

func seed(f *testing.F, files ...string) {
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			if len(b) > 64<<10 {
				b = b[:64<<10]
			}
			f.Add(b)
		}
	}
}

func FuzzVLLM(f *testing.F) {
	f.Add([]byte(vllmDetailed))
	f.Add([]byte(`{"ttfts": [0.1], "input_lens": [1], "output_lens": [1], "itls": [[NaN]]}`))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "vllm-bench", b) })
}

func FuzzAIPerf(f *testing.F) {
	seed(f, "testdata/aiperf-doc/profile_export.jsonl", "testdata/aiperf-run1/profile_export.jsonl")
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "aiperf", b) })
}

func FuzzGuideLLM(f *testing.F) {
	seed(f, "testdata/guidellm/benchmarks-2025-07.json")
	f.Add([]byte(`{"benchmarks": [{"requests": {"successful": [{"scheduler_info": {"request_start": 5}, "first_token_time": 6, "last_token_time": 7, "output_tokens": 3, "end_time": 8}]}}]}`))
	f.Add([]byte(guidellm05))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "guidellm", b) })
}

func FuzzGenAIPerf(f *testing.F) {
	f.Add([]byte(genaiperfExport))
	f.Add([]byte(`{"experiments": [{"experiment": {"mode": "concurrency", "value": 1}, "requests": [{"timestamp": 5,
 "response_timestamps": [9], "response_outputs": [{"response": "\n  \n{\"choices\":[{\"message\":{\"content\":\"a b\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}"}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzRead(t, "genai-perf", b) })
}
