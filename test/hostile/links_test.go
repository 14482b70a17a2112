package hostile

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// Writes that follow planted links: every file pel writes goes to a new temporary file made
// exclusively (no link followed) and is renamed into place; a link at the target itself is
// refused; an existing output is replaced only with --force; pel merge reads only regular
// files. Each case plants links to a file outside the run and checks it is untouched.

// planted is a file outside every run directory that the planted links point to.
type planted struct {
	t    *testing.T
	path string
}

const plantedBody = "someone else's file\n"

func newPlanted(t *testing.T) *planted {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte(plantedBody), 0o644); err != nil {
		t.Fatal(err)
	}
	return &planted{t, p}
}

// link makes path a symbolic link to the victim.
func (v *planted) link(path string) {
	v.t.Helper()
	if err := os.Symlink(v.path, path); err != nil {
		v.t.Fatal(err)
	}
}

// untouched fails the case when the victim's content changed.
func (v *planted) untouched() {
	v.t.Helper()
	if b, err := os.ReadFile(v.path); err != nil || string(b) != plantedBody {
		v.t.Errorf("the planted link's target was written: now %.80q (%v)", b, err)
	}
}

// runDir is a finished `pel run` directory of a short healthy run.
func runDir(t *testing.T) string {
	t.Helper()
	target := api(t, okStream)
	res, out := run(t, target, contractYAML(20, time.Second, 5*time.Second, ""), time.Second, 5*time.Second)
	if res.code != 0 {
		t.Fatalf("pel run: exit %d: %s", res.code, tail(res.stderr))
	}
	return out
}

// pel run: links planted in the run directory while the run goes (at evidence.json.tmp and
// report.html.tmp, the names a write used for its temporary file) are not followed.
func TestRunPlantedTmpLinks(t *testing.T) {
	v := newPlanted(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	var once sync.Once
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		// The first request comes after the run directory was made: plant the links then.
		once.Do(func() {
			v.link(filepath.Join(out, rundir.EvidenceFile+".tmp"))
			v.link(filepath.Join(out, rundir.ReportFile+".tmp"))
		})
		okStream(w, r)
	})
	cf := writeFile(t, dir, "c.yaml", contractYAML(20, time.Second, 5*time.Second, ""))
	res := pel(t, outerBound(time.Second, 5*time.Second), nil, "run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String())
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
	records(t, out)
	for _, name := range []string{rundir.EvidenceFile, rundir.ReportFile} {
		if st, err := os.Lstat(filepath.Join(out, name)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a regular file: %v", name, err)
		}
	}
}

// pel analyze DIR rewrites evidence.json and report.html past links at their .tmp names,
// and refuses a link at report.html itself.
func TestAnalyzePlantedLinks(t *testing.T) {
	v := newPlanted(t)
	out := runDir(t)
	for _, name := range []string{rundir.EvidenceFile, rundir.ReportFile} {
		os.Remove(filepath.Join(out, name+".tmp"))
		v.link(filepath.Join(out, name+".tmp"))
	}
	if res := pel(t, time.Minute, nil, "analyze", out); res.code != 0 {
		t.Fatalf("analyze: exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
	os.Remove(filepath.Join(out, rundir.ReportFile))
	v.link(filepath.Join(out, rundir.ReportFile))
	res := pel(t, time.Minute, nil, "analyze", out)
	if res.code == 0 || !strings.Contains(res.stderr, "symbolic link") {
		t.Errorf("analyze with report.html a link: exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
}

// pel report --html F: a link at F.tmp is not followed; a link at F is refused, --force or not.
func TestReportHTMLPlantedLinks(t *testing.T) {
	v := newPlanted(t)
	dir := t.TempDir()
	if err := evidence.New().WriteFile(filepath.Join(dir, rundir.EvidenceFile)); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "r.html")
	v.link(page + ".tmp")
	if res := pel(t, time.Minute, nil, "report", dir, "--html", page); res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), "<html") {
		t.Errorf("%s is not the report: %.80q", page, b)
	}
	linked := filepath.Join(dir, "l.html")
	v.link(linked)
	for _, force := range []bool{false, true} {
		args := []string{"report", dir, "--html", linked}
		if force {
			args = append(args, "--force")
		}
		if res := pel(t, time.Minute, nil, args...); res.code != 2 || !strings.Contains(res.stderr, "symbolic link") {
			t.Errorf("--html onto a link (force %v): exit %d: %s", force, res.code, tail(res.stderr))
		}
		v.untouched()
	}
}

// pel report --csv OUT: a link at tasks.csv.tmp is not followed; an existing summary.csv is
// replaced only with --force.
func TestReportCSVPlantedLinks(t *testing.T) {
	v := newPlanted(t)
	out := runDir(t)
	csv := filepath.Join(t.TempDir(), "csv")
	os.Mkdir(csv, 0o700)
	v.link(filepath.Join(csv, "tasks.csv.tmp"))
	v.link(filepath.Join(csv, "summary.csv.tmp"))
	if res := pel(t, time.Minute, nil, "report", out, "--csv", csv); res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
	summary := filepath.Join(csv, "summary.csv")
	if err := os.WriteFile(summary, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := pel(t, time.Minute, nil, "report", out, "--csv", csv)
	if b, _ := os.ReadFile(summary); res.code != 2 || string(b) != "mine\n" || !strings.Contains(res.stderr, "--force") {
		t.Errorf("existing summary.csv without --force: exit %d, file now %.40q: %s", res.code, b, tail(res.stderr))
	}
	if res := pel(t, time.Minute, nil, "report", out, "--csv", csv, "--force"); res.code != 0 {
		t.Fatalf("--force: exit %d: %s", res.code, tail(res.stderr))
	}
	if b, _ := os.ReadFile(summary); string(b) == "mine\n" {
		t.Error("--force did not replace summary.csv")
	}
	os.Remove(filepath.Join(csv, "tasks.csv"))
	v.link(filepath.Join(csv, "tasks.csv"))
	if res := pel(t, time.Minute, nil, "report", out, "--csv", csv, "--force"); res.code != 2 || !strings.Contains(res.stderr, "symbolic link") {
		t.Errorf("tasks.csv a link, --force: exit %d: %s", res.code, tail(res.stderr))
	}
	v.untouched()
}

// pel merge: a shard's spans.jsonl that is a link (to /etc/passwd, say) is refused with an
// error naming it, and the merged run is not left behind.
func TestMergePlantedLinks(t *testing.T) {
	v := newPlanted(t)
	root := t.TempDir()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var dirs []string
	for i := range 2 {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		os.Mkdir(dir, 0o700)
		writeFile(t, dir, rundir.ContractFile, string(contract.Example()))
		w, err := record.Create(filepath.Join(dir, rundir.RequestsFile))
		if err != nil {
			t.Fatal(err)
		}
		for seq := i; seq < 20; seq += 2 {
			at := start.Add(time.Duration(seq) * 100 * time.Millisecond)
			w.Write(&record.Record{Seq: seq, ID: fmt.Sprint(seq), Task: "short-chat", Phase: record.PhaseWarm, Shard: fmt.Sprintf("%d/2", i),
				Attempts: 1, Status: record.StatusOK, Accepted: true, ScheduledAt: at, SentAt: at, FirstSentAt: at,
				FirstTokenAt: at.Add(50 * time.Millisecond), DoneAt: at.Add(200 * time.Millisecond), PromptTokens: 100, OutputTokens: 10})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		ev := evidence.New()
		ev.Run = evidence.Run{Target: "http://127.0.0.1:1", StartedAt: start, DurationS: 3,
			Shard: &evidence.Shard{Index: i, Count: 2, StartAt: start}}
		if err := ev.WriteFile(filepath.Join(dir, rundir.EvidenceFile)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	// Both shards whole: the merge works (the case below fails for the link alone).
	if res := pel(t, time.Minute, nil, append([]string{"merge", "-o", filepath.Join(root, "ok")}, dirs...)...); res.code != 0 {
		t.Fatalf("merge of two plain shards: exit %d: %s", res.code, tail(res.stderr))
	}
	spans := filepath.Join(dirs[1], rundir.SpansFile)
	v.link(spans)
	merged := filepath.Join(root, "merged")
	res := pel(t, time.Minute, nil, append([]string{"merge", "-o", merged}, dirs...)...)
	if res.code != 2 || !strings.Contains(res.stderr, "symbolic link") || !strings.Contains(res.stderr, spans) {
		t.Errorf("exit %d, want 2 naming the link %s: %s", res.code, spans, tail(res.stderr))
	}
	if _, err := os.Stat(merged); err == nil {
		t.Errorf("%s was left behind", merged)
	}
	v.untouched()
}
