package main

import (
	"strings"
	"testing"
)

// TestVersionCommand: pel version names the build and the evidence schema it writes.
func TestVersionCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != 0 {
		t.Fatalf("pel version: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"pel ", "evidence.json schema: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("pel version lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := runCLI(t, "version", "extra"); code != 2 {
		t.Errorf("pel version extra: exit %d, want 2", code)
	}
}
