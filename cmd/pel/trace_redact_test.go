package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTraceRedactCommand(t *testing.T) {
	src := "../../trace/testdata/kineto/a100-ddp-nccl.trace.json.gz"
	if _, err := os.Stat(src); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "r.json.gz")
	code, stdout, errs := runCLI(t, "trace", src, "--redact", "-o", out)
	if code != 0 || !strings.Contains(stdout, "wrote "+out+" (kineto, redacted)") || !strings.Contains(stdout, "file-system path") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errs)
	}
	if code, stdout, _ := runCLI(t, "trace", out); code != 0 || !strings.Contains(stdout, "rank 0") {
		t.Errorf("the redacted copy does not analyse: exit %d\n%s", code, stdout)
	}
	for _, args := range [][]string{
		{"trace", src, "--redact", "-o", out},            // exists, no --force
		{"trace", src, "--redact"},                       // no -o
		{"trace", src, "-o", out + "2"},                  // -o without --redact
		{"trace", out, "--redact", "-o", out, "--force"}, // onto itself
	} {
		if code, _, errs := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errs)
		}
	}
	if code, _, errs := runCLI(t, "trace", src, "--redact", "-o", out, "--force"); code != 0 {
		t.Errorf("--force: exit %d: %s", code, errs)
	}
}
