package hostile

import (
	"bufio"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // writes the export
)

// stringRows is the size of the export's string table: a scan of it (every row is read,
// the few a kept row names are copied) takes seconds, past the backstop that stops an
// analysis ignoring Ctrl-C, wherever that scan does not look at the context.
const stringRows = 5_000_000

// bigExport writes an Nsight-shaped export with a few kernels and a string table of
// stringRows rows.
func bigExport(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
		`INSERT INTO StringIds
		   WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < ` + strconv.Itoa(stringRows) + `)
		   SELECT i, 'sm90_kernel_' || i FROM r`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
			correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, 0, 1, 1), (3000, 4000, 0, 7, 2, 0, 2, 2)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// copying waits until pel has begun writing the redacted export under tmp (the file the
// copy goes to exists), so the signal that follows finds it inside the copy's queries.
func copying(t *testing.T, tmp string, p *os.Process) bool {
	t.Helper()
	// A hang guard for a pel that never starts the copy, not a measure.
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		found := false
		filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && (d.Name() == "out" || strings.HasSuffix(d.Name(), ".sqlite")) {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	t.Errorf("pel never began the redacted copy")
	p.Kill()
	return false
}

// Ctrl-C while pel trace --redact or pel pack copies a large Nsight export: the copy's
// queries are interrupted through the command's context, pel exits 130 by itself (not by
// the backstop, which exits without removing anything), and neither the output nor any
// temporary file or directory is left behind.
func TestRedactInterrupted(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "gpu-host-3.sqlite")
	bigExport(t, export)
	run := synthRun(t, 8, func(i int, w *bufio.Writer) { w.WriteString(synthLine(i, "chat", "") + "\n") })
	if err := os.Link(export, filepath.Join(run, "gpu-host-3.sqlite")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args func(out string) []string
		out  string
	}{
		{"trace --redact", syscall.SIGINT, func(out string) []string { return []string{"trace", export, "--redact", "-o", out} }, "redacted.sqlite"},
		{"pack", syscall.SIGINT, func(out string) []string { return []string{"pack", run, "-o", out} }, "run.tar.gz"},
		{"pack, SIGTERM", syscall.SIGTERM, func(out string) []string { return []string{"pack", run, "-o", out} }, "run.tar.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir() // pel's TMPDIR: where its work files go
			t.Setenv("TMPDIR", tmp)
			outDir := t.TempDir()
			out := filepath.Join(outDir, c.out)
			res := pel(t, 2*time.Minute, func(p *os.Process) {
				if copying(t, tmp, p) {
					p.Signal(c.sig)
				}
			}, c.args(out)...)
			t.Logf("exit %d, %s", res.code, strings.TrimSpace(tail(res.stderr)))
			if res.code != 130 {
				t.Errorf("exit %d, want 130: %s", res.code, tail(res.stderr))
			}
			if strings.Contains(res.stderr, "did not stop within") {
				t.Errorf("stopped by the backstop, not by the copy's interruption: %s", tail(res.stderr))
			}
			for _, d := range []string{tmp, outDir} {
				ents, err := os.ReadDir(d)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					t.Errorf("left behind in %s: %s", d, e.Name())
				}
			}
		})
	}
}
