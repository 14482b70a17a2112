package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTraceCommand(t *testing.T) {
	fixture := "../../trace/testdata/kineto/a100-ddp-nccl.trace.json.gz"
	var out bytes.Buffer
	if err := run(context.Background(), []string{"trace", fixture, "--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Source string `json:"source"`
		Ranks  []struct {
			Rank     int                        `json:"rank"`
			Temporal map[string]float64         `json:"temporal"`
			Overlap  *float64                   `json:"comm_comp_overlap_pct"`
			Idle     []map[string]float64       `json:"idle_by_stream"`
			Types    []map[string]any           `json:"kernel_types"`
			Launch   map[string]any             `json:"launch"`
			Queue    []map[string]float64       `json:"queue_length"`
			Extra    map[string]json.RawMessage `json:"-"`
		} `json:"ranks"`
		Findings []map[string]any `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source != "kineto:a100-ddp-nccl.trace.json.gz" || len(doc.Ranks) != 1 || len(doc.Findings) == 0 {
		t.Fatalf("doc %+v", doc)
	}
	rk := doc.Ranks[0]
	for _, k := range []string{"kernel_time_us", "idle_us", "compute_us", "non_compute_us", "idle_pct", "compute_pct", "non_compute_pct"} {
		if _, ok := rk.Temporal[k]; !ok {
			t.Errorf("temporal lacks %s", k)
		}
	}
	for _, k := range []string{"count", "short_kernels", "launch_delay_p50_us", "launch_delay_mean_us"} {
		if _, ok := rk.Launch[k]; !ok {
			t.Errorf("launch lacks %s", k)
		}
	}
	if rk.Overlap == nil || len(rk.Idle) == 0 || len(rk.Types) == 0 || len(rk.Queue) == 0 {
		t.Fatalf("rank %+v", rk)
	}
	if _, ok := rk.Idle[0]["host_wait_us"]; !ok {
		t.Fatalf("idle_by_stream %+v", rk.Idle[0])
	}

	// the readable summary names the layers of its findings
	out.Reset()
	if err := run(context.Background(), []string{"trace", fixture, "--keep-last-step", "--kernel-wait-us", "50"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "idle") || !strings.Contains(s, "findings:") {
		t.Fatalf("summary:\n%s", s)
	}
}

func TestTraceCommandBadInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"trace", p}, {"trace"}, {"trace", p, "--kernel-wait-us", "0"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if code := exitCode(err, io.Discard); code != 2 {
			t.Errorf("%v: exit %d (%v), want 2", args, code, err)
		}
		if len(args) == 2 && (err == nil || !strings.Contains(err.Error(), p)) {
			t.Errorf("error %v does not name the file", err)
		}
	}
	// negative times: never printed as figures ("idle 106.48%, compute -6.48%" before),
	// reported as malformed with the count, exit 2
	neg := filepath.Join(t.TempDir(), "negative.json")
	if err := os.WriteFile(neg, []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 100, "dur": -10, "args": {"stream": 7}},
		{"ph": "X", "cat": "kernel", "name": "k", "ts": 200, "dur": 10, "args": {"stream": 7}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"trace", neg}, &out, io.Discard)
	if code := exitCode(err, io.Discard); code != 2 || out.Len() != 0 || !strings.Contains(err.Error(), "malformed trace: events 1 with a negative duration") {
		t.Errorf("negative times: exit %d, err %v, output %q", code, err, out.String())
	}
}
