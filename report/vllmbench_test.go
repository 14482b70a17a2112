package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

func TestVLLMBench(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ok := func(seq int, ttft time.Duration, gaps ...time.Duration) record.Record {
		r := record.Record{Seq: seq, Status: record.StatusOK, Accepted: true, PromptTokens: 10, OutputTokens: len(gaps) + 1}
		r.ScheduledAt = t0.Add(time.Duration(seq) * time.Second)
		r.SentAt = r.ScheduledAt.Add(time.Millisecond) // the schedule is not vllm's: figures count from the send
		at := ttft
		r.ChunkUS = []int64{at.Microseconds()}
		r.ChunkTokens = []int{1}
		for _, g := range gaps {
			at += g
			r.ChunkUS = append(r.ChunkUS, at.Microseconds())
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.FirstTokenAt, r.LastTokenAt, r.DoneAt = r.SentAt.Add(ttft), r.SentAt.Add(at), r.SentAt.Add(at)
		return r
	}
	recs := []record.Record{
		ok(0, 100*time.Millisecond, 10*time.Millisecond, 30*time.Millisecond),
		ok(1, 200*time.Millisecond, 20*time.Millisecond),
		{Seq: 2, Status: record.StatusHTTPError, Error: "HTTP 503", PromptTokens: 10, ScheduledAt: t0, SentAt: t0, DoneAt: t0},
	}
	each := func(f func(*record.Record) error) error {
		for i := range recs {
			if err := f(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	c, _, err := contract.FromFlags(contract.Flags{Rate: 2, CV: 2, Duration: 10 * time.Second, PromptTokens: "10", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt, ev.Run.DurationS = t0, 4
	ev.Workload.Accepted = 2
	var b bytes.Buffer
	if err := VLLMBench(&b, ev, c, each, []float64{50, 99.9}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	want := map[string]any{
		"model_id": "m", "request_rate": 2.0, "burstiness": 0.25, "num_prompts": 3.0, "completed": 2.0, "failed": 1.0,
		"duration": 4.0, "request_throughput": 0.5, "total_output_tokens": 5.0,
		"mean_ttft_ms": 150.0, "median_ttft_ms": 100.0, "p99_ttft_ms": 200.0, "p50_ttft_ms": 100.0,
		"mean_e2el_ms": 180.0, "mean_itl_ms": 20.0, "mean_tpot_ms": 20.0, "std_ttft_ms": 50.0,
	}
	for k, v := range want {
		// Percentiles are stats.Dist's: the HDR bucket's highest value, at most 0.1% above.
		if g, ok := got[k].(float64); ok && math.Abs(g-v.(float64)) <= 1e-6+0.001*v.(float64) {
			continue
		} else if got[k] == v {
			continue
		}
		t.Errorf("%s = %v, want %v", k, got[k], v)
	}
	if _, ok := got["p99.9_itl_ms"]; !ok {
		t.Errorf("no p99.9 key from the percentiles asked for")
	}
	itls, _ := json.Marshal(got["itls"])
	if string(itls) != "[[0.01,0.03],[0.02],[]]" {
		t.Errorf("itls %s", itls)
	}
	errs, _ := json.Marshal(got["errors"])
	ttfts, _ := json.Marshal(got["ttfts"])
	if string(errs) != `["","","HTTP 503"]` || string(ttfts) != "[0.1,0.2,0]" {
		t.Errorf("errors %s ttfts %s", errs, ttfts)
	}
}

// A record whose events an importing tool summarized (GuideLLM keeps the first and last
// token's times) has no chunk gaps: its itls list is empty and the ITL figures leave it out,
// while its TPOT counts.
func TestVLLMBenchSummarizedEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := record.Record{Seq: 0, Status: record.StatusOK, Accepted: true, PromptTokens: 10, OutputTokens: 101,
		ScheduledAt: t0, SentAt: t0, ChunkUS: []int64{100_000, 600_000}, ChunkTokens: []int{1, 100}}
	r.FirstTokenAt, r.LastTokenAt, r.DoneAt = t0.Add(100*time.Millisecond), t0.Add(600*time.Millisecond), t0.Add(600*time.Millisecond)
	r.AddFlag(record.FlagEventsSummarized)
	each := func(f func(*record.Record) error) error { return f(&r) }
	c, _, err := contract.FromFlags(contract.Flags{Rate: 1, Duration: 10 * time.Second, PromptTokens: "10", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt, ev.Run.DurationS = t0, 1
	var b bytes.Buffer
	if err := VLLMBench(&b, ev, c, each, nil); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	itls, _ := json.Marshal(got["itls"])
	if string(itls) != "[[]]" {
		t.Errorf("itls %s, want one empty list", itls)
	}
	if v, ok := got["mean_itl_ms"].(float64); ok && v != 0 {
		t.Errorf("mean_itl_ms %v from a record with no chunk gaps", v)
	}
	if v, _ := got["mean_tpot_ms"].(float64); math.Abs(v-5) > 1e-6 {
		t.Errorf("mean_tpot_ms %v, want 5 (500 ms over 100 tokens)", v)
	}
}
