package nsys

import (
	"bytes"
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/trace/timeline"
)

// Open reads an export without ever changing it or its directory, and without waiting on a
// lock: a write is refused, no journal, WAL or shared-memory file appears beside it, a
// writer holding an exclusive lock does not stop the read, and a '?' in the file's name is
// part of the name (the driver would otherwise take what follows for options).
func TestOpen(t *testing.T) {
	for _, c := range []struct {
		name string
		file string
		// locked: another connection holds an exclusive lock on the export while it is read.
		locked bool
		// write is run through Open's handle and must fail; "" runs none.
		write string
	}{
		{"a plain read", "export.sqlite", false, ""},
		{"a '?' in the name", "ex?port#1.sqlite", false, ""},
		{"under a writer's exclusive lock", "export.sqlite", true, ""},
		{"a write refused", "export.sqlite", false, `INSERT INTO StringIds VALUES (2, 'planted')`},
		{"a schema change refused", "export.sqlite", false, `CREATE TABLE planted (a)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			w, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.SetMaxOpenConns(1)
			for _, q := range []string{`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`, `INSERT INTO StringIds VALUES (1, 'kernel')`} {
				if _, err := w.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if c.locked {
				conn, err := w.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
					t.Fatal(err)
				}
				defer conn.ExecContext(ctx, `ROLLBACK`)
			}
			db, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v string
			if err := db.QueryRowContext(ctx, `SELECT value FROM StringIds WHERE id = 1`).Scan(&v); err != nil || v != "kernel" {
				t.Fatalf("read %q, %v; want \"kernel\"", v, err)
			}
			if c.write != "" {
				if _, err := db.ExecContext(ctx, c.write); err == nil {
					t.Errorf("%s: accepted", c.write)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the export changed")
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			// (a writer holding its lock may keep its own journal beside the export)
			if !c.locked && (len(ents) != 1 || ents[0].Name() != c.file) {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("the directory holds %q, want only %q", names, c.file)
			}
		})
	}
}

// A value over MaxValueBytes reads as NULL, never loaded: a kernel whose demangled name is
// one byte longer is named by its short name, one exactly at the bound keeps its own name
// (cut to the kept length).
func TestBoundedValues(t *testing.T) {
	long := strings.Repeat("k", MaxValueBytes)
	for _, c := range []struct {
		name, demangled string
		want            string
	}{
		{"at the bound", long, long[:timeline.DefaultLimits.MaxNameBytes]},
		{"one byte over", long + "k", "short_kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "export.sqlite")
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`, nil},
				{`INSERT INTO StringIds VALUES (1, ?), (2, 'short_kernel')`, []any{c.demangled}},
				{`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
					correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)`, nil},
				{`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, 0, 1, 2)`, nil},
			} {
				if _, err := db.Exec(q.sql, q.args...); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			tl, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(tl.Ranks) != 1 || len(tl.Ranks[0].GPU) != 1 {
				t.Fatalf("ranks %+v, want one kernel", tl.Ranks)
			}
			if got := tl.Names.Name(tl.Ranks[0].GPU[0].Name); got != c.want {
				t.Errorf("kernel named %.40q (%d bytes), want %.40q (%d bytes)", got, len(got), c.want, len(c.want))
			}
		})
	}
}
