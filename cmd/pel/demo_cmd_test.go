package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A demo into a directory that already holds a run is bad input (exit 2), before any load.
func TestDemoRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "evidence.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"demo", "--scenario", "healthy", "-o", dir, "--json"}, &out, &errb)
	if code := exitCode(err, &errb); code != 2 {
		t.Fatalf("exit %d, want 2 (err %v)", code, err)
	}
	if !strings.Contains(errb.String(), "not empty") {
		t.Errorf("message %q does not say why", errb.String())
	}
}
