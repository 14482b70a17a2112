package redact_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/trace/nsys"
)

// stopExport writes an Nsight-shaped export whose kernel table has n rows, each with a
// text value holding a file-system path: the redactor replaces one path per row copied, so
// its count of paths replaced is the number of rows it has visited.
func stopExport(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
		`INSERT INTO StringIds VALUES (1, 'gemm_kernel')`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
			correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, source TEXT)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
		   WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < ?)
		   SELECT 1000 * i, 1000 * i + 500, 0, 7, i, 0, 1, 1, '/home/alice/src/kernels.cu' FROM r`,
	} {
		if _, err := db.Exec(q, n); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func pathsReplaced(r *redact.Redactor) int {
	for _, c := range r.Counts() {
		if c.Kind == redact.Path {
			return c.Occurrences
		}
	}
	return 0
}

// A stop (Ctrl-C) while an export's rows are being copied ends the copy there, inside the
// query: Nsys returns the context's error as an interruption, has not visited the rows
// after the stop, and leaves no output that could pass for a redacted export. The stop is
// made from outside, as a signal makes it, once the redactor has replaced cancelAt paths.
func TestNsysStopped(t *testing.T) {
	const rows = 50_000
	src := stopExport(t, rows)
	for _, c := range []struct {
		name     string
		cancelAt int // -1: never
	}{
		{"never stopped", -1},
		{"stopped before the first row", 0},
		{"stopped mid-table", 2_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := redact.New()
			r.SetContext(ctx)
			if c.cancelAt == 0 {
				cancel()
			}
			done := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for c.cancelAt > 0 {
					if pathsReplaced(r) >= c.cancelAt {
						cancel()
						return
					}
					select {
					case <-done:
						return
					default:
						runtime.Gosched()
					}
				}
			}()
			dst := filepath.Join(t.TempDir(), "redacted.sqlite")
			_, err := r.Nsys(src, dst)
			close(done)
			<-watched
			visited := pathsReplaced(r)
			_, statErr := os.Stat(dst)
			if c.cancelAt < 0 {
				if err != nil || visited != rows || statErr != nil {
					t.Fatalf("not stopped: error %v, %d of %d rows, output %v", err, visited, rows, statErr)
				}
				return
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, redact.ErrInterrupted) {
				t.Errorf("error %v, want an interruption wrapping context.Canceled", err)
			}
			if visited < c.cancelAt || visited >= rows {
				t.Errorf("visited %d of %d rows with the stop at %d: the copy did not stop there", visited, rows, c.cancelAt)
			}
			if !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("the interrupted output is left behind (%v)", statErr)
			}
		})
	}
}

// An export's table declarations are never run: a CHECK constraint no row meets (planted
// with the checks off, as a hostile writer can) and a generated column (an expression
// evaluated on each read) leave the copy as plain stored columns with every row, where
// running the export's CREATE statement evaluated them on every insert or read.
func TestNsysDeclarationsNotRun(t *testing.T) {
	for _, c := range []struct {
		name, columns string
		want          []string // the copy's kernel columns
	}{
		{"a CHECK no row meets", `start INTEGER, end INTEGER, demangledName INTEGER, CHECK (0)`, []string{"start", "end", "demangledName"}},
		{"a generated column", `start INTEGER, end INTEGER, demangledName INTEGER, g TEXT GENERATED ALWAYS AS (start || '/home/alice')`, []string{"start", "end", "demangledName"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "export.sqlite")
			db, err := sql.Open("sqlite", src)
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			for _, q := range []string{
				`PRAGMA ignore_check_constraints = 1`,
				`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
				`INSERT INTO StringIds VALUES (1, 'gemm_kernel')`,
				`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (` + c.columns + `)`,
				`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, demangledName) VALUES (1000, 2000, 1), (3000, 4000, 1)`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			dst := filepath.Join(t.TempDir(), "redacted.sqlite")
			if _, err := redact.New().Nsys(src, dst); err != nil {
				t.Fatal(err)
			}
			out, err := sql.Open("sqlite", dst)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			rows, err := out.Query(`SELECT name FROM pragma_table_xinfo('CUPTI_ACTIVITY_KIND_KERNEL')`)
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for rows.Next() {
				var n string
				rows.Scan(&n)
				cols = append(cols, n)
			}
			rows.Close()
			var n int
			if err := out.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			var decl string
			out.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'`).Scan(&decl)
			if fmt.Sprint(cols) != fmt.Sprint(c.want) || n != 2 {
				t.Errorf("copy has columns %q and %d rows, want %q and 2 (declared %s)", cols, n, c.want, decl)
			}
		})
	}
}

// A value over nsys.MaxValueBytes is copied as NULL (as pel's reader reads it), counted as
// removed, and never loaded; one at the bound is copied whole.
func TestNsysBoundedValues(t *testing.T) {
	long := strings.Repeat("k", nsys.MaxValueBytes)
	for _, c := range []struct {
		name, value string
		copied      bool
	}{
		{"at the bound", long, true},
		{"one byte over", long + "k", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "export.sqlite")
			db, err := sql.Open("sqlite", src)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`, nil},
				{`INSERT INTO StringIds VALUES (1, ?)`, []any{c.value}},
				{`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, demangledName INTEGER, note TEXT)`, nil},
				{`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 1, ?)`, []any{c.value}},
			} {
				if _, err := db.Exec(q.sql, q.args...); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			dst := filepath.Join(t.TempDir(), "redacted.sqlite")
			r := redact.New()
			if _, err := r.Nsys(src, dst); err != nil {
				t.Fatal(err)
			}
			out, err := sql.Open("sqlite", dst)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			dropped := 0
			for _, k := range r.Counts() {
				if k.Kind == redact.ValueDropped {
					dropped = k.Occurrences
				}
			}
			for _, q := range []string{`SELECT value FROM StringIds WHERE id = 1`, `SELECT note FROM CUPTI_ACTIVITY_KIND_KERNEL`} {
				var v sql.NullString
				if err := out.QueryRow(q).Scan(&v); err != nil {
					t.Fatal(err)
				}
				if v.Valid != c.copied || (c.copied && v.String != c.value) {
					t.Errorf("%s: %d bytes (valid %v), want copied: %v", q, len(v.String), v.Valid, c.copied)
				}
			}
			if (dropped > 0) == c.copied {
				t.Errorf("%d values counted as removed, want some: %v", dropped, !c.copied)
			}
		})
	}
}
