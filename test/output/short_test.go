package output

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoIsShortAndOutOfTheCheckout: the default pel demo (kv-thrash) without -o. It prints
// the verdict, the summary strip and the top findings in under 40 lines (213 before), the
// full stage tables are behind pel report DIR --full, and the run directory is under the
// user's cache directory, said on stderr, with nothing written to the current directory.
func TestDemoIsShortAndOutOfTheCheckout(t *testing.T) {
	cache, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pelBin, "demo")
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pel demo: %v\n%s\n%s", err, out.String(), errb.String())
	}
	text := out.String()
	if n := strings.Count(text, "\n"); n >= 40 {
		t.Errorf("pel demo printed %d lines, want under 40:\n%s", n, text)
	}
	contains(t, "pel demo's output", text, "VERDICT: ", "SUMMARY (warm phase)", "TTFT p99", "TOP FINDINGS", "kv-thrash", "--full")
	if strings.Contains(text, "STAGE 4") {
		t.Errorf("pel demo prints the stage tables; they belong to pel report --full:\n%s", text)
	}
	if left, _ := os.ReadDir(cwd); len(left) != 0 {
		t.Errorf("pel demo wrote into the current directory: %v", left)
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "pel", "demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories under the cache: %v, want one", dirs)
	}
	if !strings.Contains(errb.String(), "writing to "+dirs[0]) {
		t.Errorf("stderr does not say where the demo writes (%s):\n%s", dirs[0], errb.String())
	}
	// Progress lines give an ETA (the demo's closed loop plans no task count: the server's
	// pace sets it; TestInterruptedRun checks a planned count).
	contains(t, "progress", errb.String(), "ETA ")
	code, full := pel(t, "report", dirs[0], "--full")
	if code != 0 {
		t.Fatalf("pel report --full: exit %d\n%s", code, full)
	}
	contains(t, "the full report", full, "STAGE 1 request_trace", "STAGE 4 serving_scheduler_cache", "STOP CONDITIONS", "BY CONCURRENCY BAND")
}
