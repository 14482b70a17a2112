package ladder

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/otlp"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// runDir writes a minimal run directory: the example contract and n synthetic tasks.
func runDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, rundir.ContractFile), contract.Example(), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := record.Create(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < n; i++ {
		r := &record.Record{Seq: i, Task: "short-chat", Phase: record.PhaseWarm, PromptTokens: 200, OutputTokens: 10,
			Attempts: 1, Status: record.StatusOK, Accepted: true}
		r.ScheduledAt = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		r.SentAt = r.ScheduledAt
		r.FirstSentAt = r.SentAt
		r.HeadersAt = r.SentAt.Add(2 * time.Millisecond)
		r.FirstTokenAt = r.SentAt.Add(80 * time.Millisecond)
		for k := 0; k < 10; k++ {
			r.ChunkUS = append(r.ChunkUS, int64(80000+k*15000))
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[9]) * time.Microsecond)
		r.DoneAt = r.LastTokenAt
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func countSource(ev *evidence.Evidence, src string) int {
	n := 0
	for _, st := range ev.Stages {
		for _, s := range st.Signals {
			if s.Source == src {
				n++
			}
		}
	}
	return n
}

func TestAnalyzeRebuildsAndAddsTraces(t *testing.T) {
	dir := runDir(t, 200)
	tr := filepath.Join("testdata", "a100-alexnet.trace.json.gz")
	ev, recs, err := Analyze(dir, Options{Traces: []string{tr}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 200 || ev.Workload.Requests != 200 {
		t.Fatalf("records %d, workload requests %d", len(recs), ev.Workload.Requests)
	}
	src := "kineto:a100-alexnet.trace.json.gz"
	first := countSource(ev, src)
	if first == 0 {
		t.Fatal("no trace signals added")
	}
	if ev.Verdict == "" || len(ev.Rollback.Triggers) == 0 {
		t.Errorf("not diagnosed: verdict %q, triggers %d", ev.Verdict, len(ev.Rollback.Triggers))
	}
	if err := WriteRun(&rundir.Dir{Path: dir}, ev); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{rundir.EvidenceFile, rundir.ReportFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, err, st)
		}
	}
	// Analysing again without the trace keeps it; with it, replaces it (no duplicates).
	again, _, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countSource(again, src); n != first {
		t.Errorf("trace signals after a plain re-analysis: %d, want %d kept", n, first)
	}
	WriteRun(&rundir.Dir{Path: dir}, again)
	third, _, err := Analyze(dir, Options{Traces: []string{tr}})
	if err != nil {
		t.Fatal(err)
	}
	if n := countSource(third, src); n != first {
		t.Errorf("trace signals after re-adding the same trace: %d, want %d", n, first)
	}
	if third.Verdict != ev.Verdict {
		t.Errorf("verdict changed on re-analysis: %q vs %q", third.Verdict, ev.Verdict)
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := runDir(t, 10)
	for name, tc := range map[string]struct {
		dir string
		o   Options
	}{
		"missing dir":      {filepath.Join(dir, "nope"), Options{}},
		"missing trace":    {dir, Options{Traces: []string{filepath.Join(dir, "none.json")}}},
		"kineto as --nsys": {dir, Options{Traces: []string{"testdata/a100-alexnet.trace.json.gz"}, NsysOnly: map[string]bool{"testdata/a100-alexnet.trace.json.gz": true}}},
	} {
		if _, _, err := Analyze(tc.dir, tc.o); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", name, err)
		}
	}
}

// A run directory with spans.jsonl gets its OTLP signals back on every rebuild, so
// `pel run --otlp` (which ends with Analyze) and a later `pel analyze` keep them.
func TestAnalyzeRebuildsOTLP(t *testing.T) {
	dir := runDir(t, 20)
	recs, err := record.ReadFile(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the records with trace ids and add one span per task: server TTFT 70 ms against
	// the client's 80 ms from send, so the gap is 10 ms.
	w, err := record.Create(filepath.Join(dir, rundir.RequestsFile+".new"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, rundir.SpansFile), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	ttft := 0.070
	for i := range recs {
		recs[i].TraceID = fmt.Sprintf("%032x", i+1)
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
		sp := otlp.Span{TraceID: recs[i].TraceID, SpanID: fmt.Sprintf("%016x", i+1), Name: "llm_request",
			StartUnixNS: recs[i].SentAt.UnixNano(), EndUnixNS: recs[i].DoneAt.UnixNano(), TTFTS: &ttft}
		if err := enc.Encode(sp); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f.Close()
	if err := os.Rename(filepath.Join(dir, rundir.RequestsFile+".new"), filepath.Join(dir, rundir.RequestsFile)); err != nil {
		t.Fatal(err)
	}
	first := 0
	for round := 0; round < 2; round++ { // the second rebuild starts from the written evidence.json
		ev, _, err := Analyze(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cov, ok := ev.Signal(evidence.SigOTLPJoinCoverage)
		gap, ok2 := ev.Signal(evidence.SigTTFTGapP50)
		if !ok || !ok2 || cov.Value != 1 || math.Abs(gap.Value-10) > 0.01 {
			t.Fatalf("round %d: coverage %+v (%v), gap %+v (%v); want 1 and 10 ms", round, cov, ok, gap, ok2)
		}
		// Rebuilding replaces the OTLP signals; it never stacks a second copy.
		n := countSource(ev, otlp.Source)
		if round == 0 {
			first = n
		} else if n != first {
			t.Fatalf("round %d: %d otlp signals, first rebuild had %d", round, n, first)
		}
		if err := WriteRun(&rundir.Dir{Path: dir}, ev); err != nil {
			t.Fatal(err)
		}
	}
}
