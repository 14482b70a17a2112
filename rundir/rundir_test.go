package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

var t0 = time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

// writeRun writes a run directory: the example contract and n tasks, every fifth a
// two-call task whose step records precede it, every seventh rejected.
func writeRun(t *testing.T, n int) (string, []record.Record) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ContractFile), contract.Example(), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := record.Create(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []record.Record
	for i := 0; i < n; i++ {
		r := record.Record{Seq: i, ID: fmt.Sprint(i), Task: "short-chat", Phase: record.PhaseWarm, PromptTokens: 200, OutputTokens: 10,
			Attempts: 1, Status: record.StatusOK, Accepted: i%7 != 0, InFlight: i % 5}
		if !r.Accepted {
			r.Reasons = []string{"slo ttft max 2s"}
		}
		r.ScheduledAt = t0.Add(time.Duration(n-i) * 50 * time.Millisecond) // the earliest is last
		r.SentAt, r.FirstSentAt = r.ScheduledAt, r.ScheduledAt
		r.HeadersAt = r.SentAt.Add(2 * time.Millisecond)
		r.FirstTokenAt = r.SentAt.Add(80 * time.Millisecond)
		for k := 0; k < 10; k++ {
			r.ChunkUS = append(r.ChunkUS, int64(80000+k*15000))
			r.ChunkTokens = append(r.ChunkTokens, 1)
		}
		r.LastTokenAt = r.SentAt.Add(time.Duration(r.ChunkUS[9]) * time.Microsecond)
		r.DoneAt = r.LastTokenAt
		if i%5 == 0 {
			var steps []record.Record
			for k := 0; k < 2; k++ {
				s := r
				s.Steps, s.Reasons, s.Accepted = 0, nil, true
				s.Step = &record.StepRef{Task: i, Index: k, Kind: record.StepChat, Turn: k}
				steps = append(steps, s)
			}
			// Written second call first: the reader orders them by index.
			for k := 1; k >= 0; k-- {
				if err := w.Write(&steps[k]); err != nil {
					t.Fatal(err)
				}
			}
			r.Steps = 2
			r.AttachSteps(steps)
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, tasks
}

func TestEachAttachesStepsLikeReadFile(t *testing.T) {
	dir, _ := writeRun(t, 50)
	want, err := record.ReadFile(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []record.Record
	if err := d.Each(func(r *record.Record) error { got = append(got, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Each differs from record.ReadFile")
	}
	for _, r := range got {
		if r.Steps > 0 && (len(r.StepRecords()) != 2 || r.StepRecords()[0].Step.Index != 0) {
			t.Fatalf("task %d: steps %+v", r.Seq, r.StepRecords())
		}
	}
	var rejected []int
	if err := d.EachRejected(func(r *record.Record) error { rejected = append(rejected, r.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	var want2 []int
	for _, r := range want {
		if !r.Accepted {
			want2 = append(want2, r.Seq)
		}
	}
	if !reflect.DeepEqual(rejected, want2) {
		t.Fatalf("EachRejected %v, want %v", rejected, want2)
	}
}

// Stage 1 from the stream is stats.Compute over the records, the start found by a scan
// when evidence.json has none.
func TestStage1IsCompute(t *testing.T) {
	dir, tasks := writeRun(t, 300)
	ev, err := Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := contract.Load(filepath.Join(dir, ContractFile))
	want := evidence.New()
	ApplyStage1(want, c, stats.Compute(tasks, StatsOptions(c, time.Time{})))
	if !ev.Run.StartedAt.Equal(want.Run.StartedAt) || !ev.Run.StartedAt.Equal(t0.Add(50*time.Millisecond)) {
		t.Fatalf("start %v, want %v", ev.Run.StartedAt, want.Run.StartedAt)
	}
	if !reflect.DeepEqual(ev.Workload, want.Workload) || !reflect.DeepEqual(ev.Stages, want.Stages) || !reflect.DeepEqual(ev.Run.Phases, want.Run.Phases) {
		t.Fatalf("stage 1 differs:\n%+v\n%+v", ev.Workload.Summary, want.Workload.Summary)
	}
}

// Past the memory bound, the figures the stream holds exactly are still Compute's, the
// joins are built and a note says what was sampled.
func TestStage1Sampled(t *testing.T) {
	dir, tasks := writeRun(t, 3000)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	var seen int
	rs, err := d.Stage1(ev, Options{SampleBytes: 100 << 10, Observe: func(*record.Record) { seen++ },
		JoinSets: func(ph []evidence.Phase, start time.Time) []stats.JoinSet {
			return []stats.JoinSet{{Name: "x", In: func(r *record.Record) bool { return true }}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Complete || len(rs.Tasks) >= len(tasks) || rs.Total != len(tasks) || seen != len(tasks) || rs.Joins["x"] == nil {
		t.Fatalf("complete %v, %d sampled of %d (seen %d), joins %v", rs.Complete, len(rs.Tasks), rs.Total, seen, rs.Joins)
	}
	want := stats.Compute(tasks, StatsOptions(d.Contract, ev.Run.StartedAt))
	if !reflect.DeepEqual(ev.Workload.Summary, want.Workload.Summary) {
		t.Fatalf("summary %+v, want %+v", ev.Workload.Summary, want.Workload.Summary)
	}
	notes := strings.Join(ev.Stage(evidence.StageRequestTrace).Notes, "\n")
	if !strings.Contains(notes, "seeded uniform sample") {
		t.Fatalf("notes: %s", notes)
	}
}

func TestTornLastLine(t *testing.T) {
	dir, _ := writeRun(t, 4)
	f, _ := os.OpenFile(filepath.Join(dir, RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":9,"task":"a","sched`)
	f.Close()
	ev, err := Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Workload.Requests != 4 || len(ev.Run.Notes) == 0 || !strings.Contains(ev.Run.Notes[0], "is cut mid-write") {
		t.Fatalf("%d requests, notes %q", ev.Workload.Requests, ev.Run.Notes)
	}
}

func TestBadInput(t *testing.T) {
	dir, _ := writeRun(t, 2)
	if err := os.WriteFile(filepath.Join(dir, RequestsFile), []byte("{\"seq\":1}\nnot json\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err %v", err)
	}
	if _, err := Rebuild(t.TempDir()); err == nil {
		t.Fatal("an empty directory rebuilt")
	}
}
