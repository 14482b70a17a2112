package hostile

import (
	"bufio"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // writes the hostile export
)

// Ctrl-C while an Nsight Systems export's kernel table is a view over an endless recursive
// query (unbounded: SQLite was never interrupted, the command ran on 17-27 s): the query is
// interrupted through the command's context, and pel exits 130 soon after, by itself (not
// by the backstop that stops an analysis that ignores the signal).
func TestNsysInterrupted(t *testing.T) {
	dir := t.TempDir()
	export := filepath.Join(dir, "export.sqlite")
	db, err := sql.Open("sqlite", export)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
		`INSERT INTO StringIds VALUES (1, 'kernel')`,
		// Never yields a row (so holds no memory), never ends.
		`CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
		   WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)
		   SELECT x AS start, x + 1 AS end, 0 AS deviceId, 7 AS streamId, x AS correlationId,
		          0 AS globalPid, 1 AS demangledName, 1 AS shortName
		   FROM r WHERE x < 0`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	run := synthRun(t, 8, func(i int, w *bufio.Writer) { w.WriteString(synthLine(i, "chat", "") + "\n") })
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"trace", syscall.SIGINT, []string{"trace", export}},
		{"analyze --nsys", syscall.SIGTERM, []string{"analyze", run, "--nsys", export}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent time.Time
			res := pel(t, time.Minute, func(p *os.Process) {
				time.Sleep(time.Second) // inside the query
				sent = time.Now()
				p.Signal(c.sig)
			}, c.args...)
			after := res.wall - sent.Sub(time.Now().Add(-res.wall))
			t.Logf("ended %v after the signal: exit %d, %s", after.Round(time.Millisecond), res.code, strings.TrimSpace(tail(res.stderr)))
			if res.code != 130 {
				t.Errorf("exit %d, want 130: %s", res.code, tail(res.stderr))
			}
			if strings.Contains(res.stderr, "did not stop within") {
				t.Errorf("stopped by the backstop, not by the query's interruption: %s", tail(res.stderr))
			}
		})
	}
}
