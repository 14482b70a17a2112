package trace

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/trace/timeline"
)

// TestGolden runs every real fixture through Analyze and compares the JSON with its golden
// file. Run `go test ./trace -update` after a deliberate change and review the diff.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/kineto/*.json.gz")
	nsysFiles, _ := filepath.Glob("testdata/nsys/*.sqlite")
	files = append(files, nsysFiles...)
	if len(files) < 11 {
		t.Fatalf("expected the 10 Kineto and 1 nsys fixtures, found %d", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := Analyze(path, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, path+".golden.json", append(got, '\n'))
		})
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	full, err := os.ReadFile("testdata/kineto/a100-event-sync.trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	otherDB := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", otherDB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cases := map[string][]byte{
		"empty.json":            {},
		"notjson.json":          []byte("this is not a trace"),
		"wrongschema.json":      []byte(`{"foo": [1, 2, 3]}`),
		"truncated.json":        []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1`),
		"truncated.json.gz":     full[:len(full)/2],
		"gz-of-garbage.json.gz": gz([]byte("<html>")),
		"array-of-numbers.json": []byte(`[1, 2]`),
		// negative times would give "idle 106.48%, compute -6.48%": malformed
		"negative-dur.json": []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 100, "dur": -10, "args": {"stream": 7}},
			{"ph": "X", "cat": "kernel", "name": "k", "ts": 200, "dur": 10, "args": {"stream": 7}}]}`),
	}
	for name, data := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{otherDB, filepath.Join(dir, "missing.json")}
	for name := range cases {
		names = append(names, filepath.Join(dir, name))
	}
	for _, p := range names {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, err := Analyze(p, DefaultOptions())
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			if strings.HasPrefix(filepath.Base(p), "negative") && !strings.Contains(err.Error(), "malformed trace: events 1 with a negative duration") {
				t.Fatalf("error %q does not say the trace is malformed with the count", err)
			}
		})
	}
}

// tl builds a one-rank timeline from ops and calls (times in µs for readability).
func tl(ops []timeline.Op, calls []timeline.Call, steps []timeline.Span, names ...string) *timeline.Timeline {
	n := timeline.NewNames()
	for _, s := range names {
		n.IDString(s)
	}
	scale := func(v int64) int64 { return v * 1000 }
	for i := range ops {
		ops[i].Start, ops[i].End = scale(ops[i].Start), scale(ops[i].End)
	}
	rk := &timeline.Rank{GPU: ops, Calls: calls, Steps: steps}
	for i := range calls {
		calls[i].Start, calls[i].End = scale(calls[i].Start), scale(calls[i].End)
		calls[i].Flags = timeline.ClassifyCall(n.Name(calls[i].Name))
		if !rk.HasCPU || calls[i].Start < rk.MinCPUStart {
			rk.MinCPUStart, rk.HasCPU = calls[i].Start, true
		}
	}
	for i := range rk.Steps {
		rk.Steps[i].Start, rk.Steps[i].End = scale(rk.Steps[i].Start), scale(rk.Steps[i].End)
	}
	return &timeline.Timeline{Format: "test", Names: n, Ranks: []*timeline.Rank{rk}}
}

const (
	nGemm = iota
	nNCCL
	nCopy
	nLaunch
	nMemcpyAsync
	nSync
	nStep1
	nStep2
	nGraph
)

var testNames = []string{"sm80_gemm", "ncclKernel_AllReduce", "Memcpy HtoD (Pageable -> Device)", "cudaLaunchKernel",
	"cudaMemcpyAsync", "cudaDeviceSynchronize", "ProfilerStep#1", "ProfilerStep#2", "cudaGraphLaunch"}

func TestHTADefinitions(t *testing.T) {
	// stream 7: gemm [100,200] launched at 50 (host ran ahead), gemm [210,300] launched at
	// 150 (gap 10 µs < 30: kernel_wait), gemm [400,450] launched at 380 > 300 (host_wait,
	// gap 100); stream 9: nccl [150,250] overlapping the first two gemms, copy [500,520].
	ops := []timeline.Op{
		{Start: 100, End: 200, Corr: 1, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 210, End: 300, Corr: 2, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 400, End: 450, Corr: 3, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 150, End: 250, Corr: 4, Name: nNCCL, Stream: 9, Kind: timeline.OpKernel},
		{Start: 500, End: 520, Corr: 5, Name: nCopy, Stream: 9, Kind: timeline.OpMemcpy, Flags: timeline.OpPageable},
	}
	calls := []timeline.Call{
		{Start: 40, End: 50, Corr: 1, Name: nLaunch},
		{Start: 140, End: 150, Corr: 2, Name: nLaunch},
		{Start: 370, End: 380, Corr: 3, Name: nLaunch},
		{Start: 60, End: 70, Corr: 4, Name: nLaunch},
		{Start: 480, End: 530, Corr: 5, Name: nMemcpyAsync},
		{Start: 530, End: 600, Corr: 6, Name: nSync},
	}
	r := AnalyzeTimeline(tl(ops, calls, nil, testNames...), DefaultOptions())
	rk := r.Ranks[0]
	// kernel_time 100→520 = 420; busy: [100,300] + [400,450] + [500,520] = 270; idle 150
	// compute: gemms 100+90+50 = 240; non-compute = 420-240-150 = 30
	tp := rk.Temporal
	if tp.KernelTimeUs != 420 || tp.IdleUs != 150 || tp.ComputeUs != 240 || tp.NonComputeUs != 30 {
		t.Fatalf("temporal %+v", tp)
	}
	if tp.IdlePct != 35.71 || tp.ComputePct != 57.14 || tp.NonComputePct != 7.14 {
		t.Fatalf("temporal pct %+v", tp)
	}
	// overlap: nccl [150,250] overlaps gemm [150,200]+[210,250] = 90 of 100
	if rk.CommCompOverlapPct == nil || *rk.CommCompOverlapPct != 90 || rk.CommPct != 23.81 {
		t.Fatalf("overlap %v comm %v", rk.CommCompOverlapPct, rk.CommPct)
	}
	// The third gemm's launch (380) came 220 µs after the host's previous call ended (150):
	// over the 100 µs launch-delay cutoff, so its host_wait gap is host-away time. The copy's
	// launch (480) came exactly 100 µs after the latest call's end (380): on the launch path.
	want := []StreamIdle{{Stream: 7, HostWaitUs: 100, KernelWaitUs: 10, HostAwayUs: 100}, {Stream: 9, HostWaitUs: 250}}
	if len(rk.IdleByStream) != 2 || rk.IdleByStream[0] != want[0] || rk.IdleByStream[1] != want[1] {
		t.Fatalf("idle by stream %+v", rk.IdleByStream)
	}
	types := map[string]float64{}
	for _, k := range rk.KernelTypes {
		types[k.Type] = k.TimeUs
	}
	if types["computation"] != 150 || types["computation overlapping communication"] != 90 || types["communication"] != 10 || types["memory"] != 20 {
		t.Fatalf("kernel types %+v", rk.KernelTypes)
	}
	// launch: delays 50,60,20,80,-30 → clipped at 0 as HTA clips them: p50 50, mean 42;
	// short: cpu ≤ 50 and gpu < cpu → none (gpu ≥ cpu) except the copy (cpu 50, gpu 20)
	l := rk.Launch
	if l.Count != 5 || l.ShortKernels != 1 || l.LaunchDelayP50Us != 50 || l.LaunchDelayMeanUs != 42 || l.HTA != (HTALaunchStats{
		Count: 5, ShortKernels: 1, LaunchDelayMeanUs: 42, LaunchDelayP50Us: 50, CPUDurationP50Us: 10, GPUDurationP50Us: 90}) {
		t.Fatalf("launch %+v", l)
	}
	if rk.Sync.HostSyncCalls != 1 || rk.Sync.HostSyncUs != 70 || rk.MemoryOps.PageableAsyncCopies != 1 {
		t.Fatalf("sync %+v memory %+v", rk.Sync, rk.MemoryOps)
	}
	// queue stream 7: +1@40 -1@100 +1@140 -1@210 +1@370 -1@400 → 1,0,1,0,1,0: mean 0.5 max 1
	if len(rk.QueueLength) != 2 || rk.QueueLength[0].Mean != 0.5 || rk.QueueLength[0].Max != 1 {
		t.Fatalf("queue %+v", rk.QueueLength)
	}
	if rk.Graphs.KernelLaunches != 4 || rk.Graphs.GraphLaunches != 0 {
		t.Fatalf("graphs %+v", rk.Graphs)
	}
}

func TestLastStepFilter(t *testing.T) {
	ops := []timeline.Op{
		{Start: 20, End: 30, Corr: 1, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 120, End: 130, Corr: 2, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
	}
	calls := []timeline.Call{{Start: 10, End: 15, Corr: 1, Name: nLaunch}, {Start: 110, End: 115, Corr: 2, Name: nLaunch}}
	steps := []timeline.Span{{Start: 0, End: 100, Name: nStep1}, {Start: 100, End: 200, Name: nStep2}}
	for _, tc := range []struct {
		keep bool
		ops  int
	}{{false, 1}, {true, 2}} {
		o := DefaultOptions()
		o.KeepLastStep = tc.keep
		r := AnalyzeTimeline(tl(append([]timeline.Op(nil), ops...), append([]timeline.Call(nil), calls...), append([]timeline.Span(nil), steps...), testNames...), o)
		if got := r.Ranks[0].GPUEvents; got != tc.ops {
			t.Errorf("keep=%v: %d GPU events, want %d", tc.keep, got, tc.ops)
		}
		if r.Ranks[0].DroppedLastStep == tc.keep {
			t.Errorf("keep=%v: dropped flag %v", tc.keep, r.Ranks[0].DroppedLastStep)
		}
	}
}

func TestFillEvidence(t *testing.T) {
	r, err := Analyze("testdata/kineto/a100-ddp-nccl.trace.json.gz", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	FillEvidence(ev, r)
	s, ok := ev.Signal(evidence.SigTraceIdlePct)
	if !ok || s.Stage != evidence.StageGPUExecution || s.Source != "kineto:a100-ddp-nccl.trace.json.gz" || s.Value != r.Ranks[0].Temporal.IdlePct {
		t.Fatalf("idle signal %+v %v", s, ok)
	}
	c, ok := ev.Signal(evidence.SigTraceCommOverlapPct)
	if !ok || c.Stage != evidence.StageDistributed {
		t.Fatalf("overlap signal %+v %v", c, ok)
	}
	if l, ok := ev.Signal(evidence.SigTraceShortKernelShare); !ok || l.Stage != evidence.StageKernelOperator || l.Unit != "ratio" {
		t.Fatalf("short-kernel signal %+v", l)
	}
	if len(ev.Findings) != len(r.Findings) || len(r.Findings) == 0 {
		t.Fatalf("findings %d vs %d", len(ev.Findings), len(r.Findings))
	}
	for _, f := range ev.Findings {
		if f.Layer == "" || len(f.Prediction) == 0 || f.NextProbe == "" {
			t.Fatalf("incomplete finding %+v", f)
		}
	}
}

// TestOverlapOnStream: with programmatic dependent launch a kernel may start before the
// previous one on its stream ends. HTA's gap (start − previous end) would be negative; pel
// measures from the latest end so far and says how many overlapped.
func TestOverlapOnStream(t *testing.T) {
	// [100,200], [150,180] (starts inside the first), [210,220]: the third's gap is 10 µs
	// after the latest end (200), not 30 µs after the second's end (180)
	ops := []timeline.Op{
		{Start: 100, End: 200, Corr: 1, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 150, End: 180, Corr: 2, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
		{Start: 210, End: 220, Corr: 3, Name: nGemm, Stream: 7, Kind: timeline.OpKernel},
	}
	calls := []timeline.Call{{Start: 10, End: 20, Corr: 1, Name: nLaunch}, {Start: 20, End: 30, Corr: 2, Name: nLaunch}, {Start: 30, End: 40, Corr: 3, Name: nLaunch}}
	rk := AnalyzeTimeline(tl(ops, calls, nil, testNames...), DefaultOptions()).Ranks[0]
	if want := (StreamIdle{Stream: 7, KernelWaitUs: 10}); len(rk.IdleByStream) != 1 || rk.IdleByStream[0] != want {
		t.Fatalf("idle %+v, want %+v", rk.IdleByStream, want)
	}
	if len(rk.Notes) != 1 || !strings.HasPrefix(rk.Notes[0], "1 GPU operations start before") {
		t.Fatalf("notes %q", rk.Notes)
	}
}

// TestHostAwayPerThread: whether a launch came after its host thread was away is judged on
// that thread's own calls; another thread busy in a call across the gap (a poller, a sync)
// does not put the launching thread on the launch path.
func TestHostAwayPerThread(t *testing.T) {
	calls := []timeline.Call{
		{Start: 0, End: 10_000, Thread: 0},       // the launching thread's previous call
		{Start: 50_000, End: 190_000, Thread: 1}, // another thread, blocked until just before
		{Start: 200_000, End: 210_000, Thread: 0},
		{Start: 260_000, End: 270_000, Thread: 0}, // 50 µs after its own previous call
		{Start: 900_000, End: 910_000, Thread: 2}, // a thread's first call
	}
	g := awayIndex(calls, 100_000)
	for i, want := range []bool{false, false, true, false, false} {
		if got := g.before(calls[i]); got != want {
			t.Errorf("call %d (thread %d at %d ns): away %v, want %v", i, calls[i].Thread, calls[i].Start, got, want)
		}
	}
}
