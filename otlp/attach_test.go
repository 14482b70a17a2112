package otlp

import (
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// TestEngineSpans: each request gets its own span's timings, by trace id or by request id;
// a multi-step task's calls are matched one by one; out-of-range latencies are dropped; no
// spans file is no spans.
func TestEngineSpans(t *testing.T) {
	dir := t.TempDir()
	d := &rundir.Dir{Path: dir}
	if got, err := EngineSpans(d, nil); err != nil || got != nil {
		t.Fatalf("no spans file: %v %v", got, err)
	}
	lines := `{"trace_id":"0123456789abcdef0123456789abcdef","span_id":"01","name":"llm_request","queue_s":0.25,"prefill_s":0.05,"ttft_s":0.3,"decode_s":1.5}
{"trace_id":"ffffffffffffffffffffffffffffffff","span_id":"02","name":"llm_request","request_id":"req-2","queue_s":-1,"prefill_s":1e9,"ttft_s":0.2}
{"trace_id":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","span_id":"03","name":"llm_request","queue_s":0.01,"ttft_s":0.04}
`
	if err := writeFile(filepath.Join(dir, rundir.SpansFile), []byte(lines)); err != nil {
		t.Fatal(err)
	}
	task := record.Record{ID: "t3", Steps: 1}
	task.AttachSteps([]record.Record{{ID: "t3-0", TraceID: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Step: &record.StepRef{}}})
	recs := []record.Record{
		{ID: "r1", TraceID: "0123456789abcdef0123456789abcdef"},
		{ID: "req-2", TraceID: "11111111111111111111111111111111"},
		{ID: "r4", TraceID: "22222222222222222222222222222222"},
		task,
	}
	got, err := EngineSpans(d, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[*record.Record]record.EngineSpan{
		&recs[0]:                  {QueueUS: 250000, PrefillUS: 50000, TTFTUS: 300000, DecodeUS: 1500000},
		&recs[1]:                  {TTFTUS: 200000},
		&recs[3].StepRecords()[0]: {QueueUS: 10000, TTFTUS: 40000},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d spans %v, want %d", len(got), got, len(want))
	}
	for r, w := range want {
		if got[r] != w {
			t.Errorf("%s: %+v, want %+v", r.ID, got[r], w)
		}
	}
}
