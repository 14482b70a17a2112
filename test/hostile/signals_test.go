package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Signals where a read blocks beyond any context: pel analyze, report, compare, trace,
// merge and canary's --rollback-from load, with FIFOs as inputs (the open blocks), end soon
// after SIGINT or SIGTERM with 130 (unbounded, they ran on for 17-27 s).
func TestSignalsEndEveryCommand(t *testing.T) {
	dir := t.TempDir()
	fifoDir := func(name string, files ...string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := syscall.Mkfifo(filepath.Join(d, f), 0o600); err != nil {
				t.Skip(err)
			}
		}
		return d
	}
	// The contract is a file (its reader refuses a FIFO already); the records, evidence and
	// metrics are FIFOs.
	run := fifoDir("run", "requests.jsonl", "evidence.json", "metrics.jsonl")
	other := fifoDir("other", "requests.jsonl", "evidence.json")
	for _, d := range []string{run, other} {
		writeFile(t, d, "contract.yaml", contractYAML(1, time.Minute, 5*time.Second, ""))
	}
	trace := filepath.Join(fifoDir("trace", "trace.json"), "trace.json")
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"analyze", syscall.SIGINT, []string{"analyze", run}},
		{"report", syscall.SIGTERM, []string{"report", run}},
		{"compare", syscall.SIGINT, []string{"compare", run, other}},
		{"trace", syscall.SIGTERM, []string{"trace", trace}},
		{"merge", syscall.SIGINT, []string{"merge", run, other, "-o", filepath.Join(dir, "merged")}},
		{"canary --rollback-from", syscall.SIGTERM, []string{"canary", "--prometheus", "http://127.0.0.1:1", "--baseline", `{a="b"}`, "--candidate", `{a="c"}`, "--rollback-from", run}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent time.Time
			res := pel(t, time.Minute, func(p *os.Process) {
				time.Sleep(300 * time.Millisecond) // the command is started and blocked
				sent = time.Now()
				p.Signal(c.sig)
			}, c.args...)
			after := res.wall - sent.Sub(time.Now().Add(-res.wall))
			t.Logf("ended %v after the signal: exit %d, stderr %s", after.Round(time.Millisecond), res.code, strings.TrimSpace(tail(res.stderr)))
			// 130 when the signal found it blocked; 2 when it refused the FIFO first.
			if res.code != 130 && res.code != 2 {
				t.Errorf("exit %d, want 130 (interrupted) or 2 (FIFO refused): %s", res.code, tail(res.stderr))
			}
			// Far under the 17-27 s observed, and generous for a loaded machine.
			if after > 10*time.Second {
				t.Errorf("went on %v after the signal", after)
			}
		})
	}
}
