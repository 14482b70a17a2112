package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	ev := evidence.New()
	ev.Verdict = "Nothing exceeds a bound at this load"
	if err := ev.WriteFile(filepath.Join(dir, "evidence.json")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "r.html")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"report", dir}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "VERDICT: Nothing exceeds") || !strings.Contains(out.String(), "SUMMARY (warm phase)") {
		t.Errorf("text output starts %q", out.String()[:40])
	}
	// --html writes the page and prints only its path.
	out.Reset()
	if err := run(context.Background(), []string{"report", dir, "--html", page}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != page+"\n" {
		t.Errorf("--html printed %q, want only the path", out.String())
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), "Nothing exceeds a bound") {
		t.Errorf("html: %v", err)
	}
	if st, _ := os.Stat(page); st.Mode().Perm() != 0o600 {
		t.Errorf("html mode %v", st.Mode().Perm())
	}
	out.Reset()
	if err := run(context.Background(), []string{"report", dir, "--json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := evidence.Decode(&out); err != nil {
		t.Errorf("--json output does not decode: %v", err)
	}
	// --csv writes the per-task records and the summary tables, and prints their paths.
	recs := []record.Record{{Seq: 0, Task: "a", Phase: "warm", Status: record.StatusOK, Accepted: true, Attempts: 1,
		ScheduledAt: time.Unix(100, 0), SentAt: time.Unix(100, 0), FirstTokenAt: time.Unix(100, 250e6), DoneAt: time.Unix(101, 0)}}
	w, err := record.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&recs[0])
	w.Close()
	csvDir := filepath.Join(dir, "csv")
	out.Reset()
	if err := run(context.Background(), []string{"report", dir, "--csv", csvDir}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	tasks, summary := filepath.Join(csvDir, "tasks.csv"), filepath.Join(csvDir, "summary.csv")
	if out.String() != tasks+"\n"+summary+"\n" {
		t.Errorf("--csv printed %q", out.String())
	}
	if b, err := os.ReadFile(tasks); err != nil || !strings.Contains(string(b), "seq,id,task,phase") || !strings.Contains(string(b), ",250,") {
		t.Errorf("tasks.csv: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(summary); err != nil || !strings.HasPrefix(string(b), "table,name,requests") || !strings.Contains(string(b), "\nall,warm,") {
		t.Errorf("summary.csv: %v\n%s", err, b)
	}
	err = run(context.Background(), []string{"report", filepath.Join(dir, "nope")}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Errorf("missing dir: exit %d, want 2 (%v)", code, err)
	}
}

// A directory that does not exist is named as such, not as a missing evidence.json; an
// existing directory without one says what to run.
func TestReportMissingDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nosuchdir")
	code, _, errs := runCLI(t, "report", missing)
	if code != 2 || !strings.Contains(errs, missing+": no such directory") || strings.Contains(errs, "evidence.json") {
		t.Errorf("pel report %s: exit %d, %q", missing, code, errs)
	}
	empty := t.TempDir()
	code, _, errs = runCLI(t, "report", empty)
	if code != 2 || !strings.Contains(errs, "no evidence.json") {
		t.Errorf("pel report of an empty directory: exit %d, %q", code, errs)
	}
}
