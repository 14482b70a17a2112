package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
)

func TestAnalyzeAndDemoCommands(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "contract.yaml"), contract.Example(), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := record.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < 50; i++ {
		r := &record.Record{Seq: i, Task: "short-chat", Phase: "warm", PromptTokens: 100, OutputTokens: 2, Attempts: 1, Status: "ok", Accepted: true}
		r.ScheduledAt = t0.Add(time.Duration(i) * 200 * time.Millisecond)
		r.SentAt, r.FirstTokenAt = r.ScheduledAt, r.ScheduledAt.Add(50*time.Millisecond)
		r.ChunkUS, r.ChunkTokens = []int64{50000, 60000}, []int{1, 1}
		r.LastTokenAt, r.DoneAt = r.ScheduledAt.Add(60*time.Millisecond), r.ScheduledAt.Add(61*time.Millisecond)
		w.Write(r)
	}
	w.Close()
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"analyze", dir}, &out, &errb); err != nil {
		t.Fatalf("analyze: %v\n%s", err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "VERDICT: ") {
		t.Errorf("analyze output starts %q", out.String()[:min(60, out.Len())])
	}
	for _, f := range []string{"evidence.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, args := range [][]string{
		{"analyze", filepath.Join(dir, "missing")},
		{"analyze", dir, "--trace", filepath.Join(dir, "no-such-trace.json")},
		{"demo", "--scenario", "no-such-scenario", "-o", filepath.Join(t.TempDir(), "d")},
		{"demo", "extra-arg"},
	} {
		err := run(context.Background(), args, &out, &errb)
		if code := exitCode(err, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%v)", args, code, err)
		}
	}
}
