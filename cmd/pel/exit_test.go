package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
)

// One exit code for "interrupted", whatever the command returned; errors
// reach the terminal without escape sequences.
func TestFinalCode(t *testing.T) {
	for _, c := range []struct {
		interrupted bool
		err         error
		want        int
	}{
		{false, nil, 0}, {true, nil, exitInterrupted}, {true, failError(errors.New("x")), exitInterrupted},
		{false, failError(errors.New("x")), 1}, {false, usageError(errors.New("x")), 2},
	} {
		var errb bytes.Buffer
		if got := finalCode(c.interrupted, c.err, &errb); got != c.want {
			t.Errorf("finalCode(%v, %v) = %d, want %d", c.interrupted, c.err, got, c.want)
		}
	}
	var errb bytes.Buffer
	exitCode(errors.New("http 500: \x1b]0;pwned\x07\x1b[2J\nline two"), &errb)
	if strings.ContainsAny(errb.String(), "\x1b\x07") || !strings.Contains(errb.String(), "\nline two") {
		t.Errorf("printed %q", errb.String())
	}
}

// --html does not replace an existing file unless --force says so.
func TestReportHTMLNoOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := evidence.New().WriteFile(filepath.Join(dir, "evidence.json")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "mine.html")
	os.WriteFile(page, []byte("precious"), 0o600)
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"report", dir, "--html", page}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 || !strings.Contains(err.Error(), "exists") {
		t.Errorf("exit %d: %v", code, err)
	}
	if b, _ := os.ReadFile(page); string(b) != "precious" {
		t.Error("the existing file was replaced")
	}
	if err := run(context.Background(), []string{"report", dir, "--html", page, "--force"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(page); string(b) == "precious" {
		t.Error("--force did not replace the file")
	}
}
