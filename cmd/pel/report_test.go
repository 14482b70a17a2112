package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
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
	if err := run(context.Background(), []string{"report", dir, "--html", page}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "VERDICT: Nothing exceeds") {
		t.Errorf("text output starts %q", out.String()[:40])
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
	err = run(context.Background(), []string{"report", filepath.Join(dir, "nope")}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Errorf("missing dir: exit %d, want 2 (%v)", code, err)
	}
}
