package rundir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// shardRun writes the shard directories of one n-shard run of tasks: shard i gets every
// n-th task, in the order they end, and an evidence.json naming its shard.
func shardRun(t *testing.T, tasks []record.Record, n int, start time.Time, contractYAML []byte) []string {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, ContractFile), contractYAML, 0o600)
		var mine []record.Record
		for _, r := range tasks {
			if r.Seq%n == i {
				r.Shard = fmt.Sprintf("%d/%d", i, n)
				mine = append(mine, r)
			}
		}
		sort.SliceStable(mine, func(a, b int) bool { return mine[a].DoneAt.Before(mine[b].DoneAt) })
		w, _ := record.Create(filepath.Join(dir, RequestsFile))
		for k := range mine {
			w.Write(&mine[k])
		}
		w.Close()
		ev := evidence.New()
		ev.Run = evidence.Run{Target: "http://127.0.0.1:1", StartedAt: start, DurationS: 30,
			Shard: &evidence.Shard{Index: i, Count: n, StartAt: start, Clock: &evidence.ClockOffset{OffsetMs: float64(i), BoundMs: 1, Via: "test"}}}
		if err := ev.WriteFile(filepath.Join(dir, EvidenceFile)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// The merged directory's stage 1 is stage 1 over the union of the shards' records: the
// same as over the records one process would have written, p99 for p99.
func TestMergeIsTheUnion(t *testing.T) {
	_, tasks := writeRun(t, 400)
	for i := range tasks {
		tasks[i].AttachSteps(nil) // the fixture's steps are written apart below
		tasks[i].Steps = 0
	}
	dirs := shardRun(t, tasks, 4, t0, contract.Example())
	out := filepath.Join(t.TempDir(), "merged")
	// Given in any order.
	ev, err := Merge(out, []string{dirs[2], dirs[0], dirs[3], dirs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Run.Shards) != 4 || ev.Run.Shards[0].Index != 0 || ev.Run.Shards[3].Tasks != 100 || !ev.Run.StartedAt.Equal(t0) {
		t.Fatalf("shards %+v", ev.Run.Shards)
	}
	merged, err := Rebuild(out)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := contract.Load(filepath.Join(out, ContractFile))
	want := evidence.New()
	want.Run.StartedAt = t0
	ApplyStage1(want, c, stats.Compute(tasks, StatsOptions(c, t0)))
	if !reflect.DeepEqual(merged.Workload, want.Workload) {
		t.Fatalf("merged workload differs from the union's:\n%+v\n%+v", merged.Workload.Summary, want.Workload.Summary)
	}
	// The union, line for line, in the order tasks ended.
	got, err := record.ReadFile(filepath.Join(out, RequestsFile))
	if err != nil || len(got) != len(tasks) {
		t.Fatalf("%d records, %v", len(got), err)
	}
	for i := 1; i < len(got); i++ {
		if got[i].DoneAt.Before(got[i-1].DoneAt) {
			t.Fatalf("line %d ends before line %d", i+1, i)
		}
	}
	if !strings.Contains(strings.Join(ev.Run.Notes, "\n"), "merged from 4 shards") {
		t.Fatalf("notes %q", ev.Run.Notes)
	}
}

func TestMergeRefuses(t *testing.T) {
	_, tasks := writeRun(t, 40)
	for i := range tasks {
		tasks[i].AttachSteps(nil)
		tasks[i].Steps = 0
	}
	other := bytes.Replace(contract.Example(), []byte("seed: 1"), []byte("seed: 2"), 1)
	for _, c := range []struct {
		name string
		dirs func() []string
		want string
	}{
		{"another contract", func() []string {
			a := shardRun(t, tasks, 2, t0, contract.Example())
			b := shardRun(t, tasks, 2, t0, other)
			return []string{a[0], b[1]}
		}, "shards of one run share its contract"},
		{"another run", func() []string {
			a := shardRun(t, tasks, 2, t0, contract.Example())
			b := shardRun(t, tasks, 2, t0.Add(time.Hour), contract.Example())
			return []string{a[0], b[1]}
		}, "share --start-at"},
		{"twice", func() []string {
			a := shardRun(t, tasks, 2, t0, contract.Example())
			return []string{a[0], a[1], a[1]}
		}, "overlapping shards"},
		{"missing", func() []string {
			a := shardRun(t, tasks, 3, t0, contract.Example())
			return []string{a[0], a[2]}
		}, "missing 1/3"},
		{"a task in two shards", func() []string {
			a := shardRun(t, tasks, 2, t0, contract.Example())
			r := tasks[0] // seq 0 belongs to shard 0
			r.Shard = "1/2"
			f, _ := os.OpenFile(filepath.Join(a[1], RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
			record.NewWriter(f).Write(&r)
			f.Close()
			return a
		}, "not shard 1/2's part"},
		{"not a shard", func() []string {
			dir, _ := writeRun(t, 3)
			evidence.New().WriteFile(filepath.Join(dir, EvidenceFile))
			return []string{dir}
		}, "not a shard of a sharded run"},
		{"unfinished", func() []string {
			dir, _ := writeRun(t, 3)
			return []string{dir}
		}, "has not finished"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			_, err := Merge(out, c.dirs())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Fatalf("%s left behind", out)
			}
		})
	}
}

// TestMergeOfACutShardIsPartial: every shard present is the whole schedule only when each
// shard ran its own part to the end; one interrupted shard leaves the merged run partial.
func TestMergeOfACutShardIsPartial(t *testing.T) {
	_, tasks := writeRun(t, 40)
	for i := range tasks {
		tasks[i].AttachSteps(nil)
		tasks[i].Steps = 0
	}
	dirs := shardRun(t, tasks, 2, t0, contract.Example())
	for i, want := range []bool{false, true} {
		if i == 1 {
			p := filepath.Join(dirs[1], EvidenceFile)
			ev, err := ReadEvidence(p)
			if err != nil {
				t.Fatal(err)
			}
			ev.Run.AddGap(evidence.GapShard, "shard 1/2")
			ev.Run.AddGap(evidence.GapInterrupted, "Ctrl-C at 7 s")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := ev.WriteFile(p); err != nil {
				t.Fatal(err)
			}
		}
		ev, err := Merge(filepath.Join(t.TempDir(), "merged"), dirs)
		if err != nil {
			t.Fatal(err)
		}
		if got := ev.Run.Partial(); got != want {
			t.Fatalf("case %d: partial %v, want %v (%+v)", i, got, want, ev.Run.Completeness)
		}
		if want {
			txt := ev.Run.PartialText()
			if !strings.Contains(txt, "interrupted: shard 1/2: Ctrl-C at 7 s") || strings.Contains(txt, "shard: ") {
				t.Fatalf("partial text %q: want the shard's interruption and no shard gap", txt)
			}
		}
	}
}
