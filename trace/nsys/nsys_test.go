package nsys

import (
	"database/sql"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/trace/timeline"
)

// TestMemcpyNames: a copy is named by its kind as nsys reports it ("Memcpy HtoD"), from the
// export's ENUM tables, from nsys's own values when an export has no ENUM tables, and
// without invented memory kinds when srcKind/dstKind are NULL ("Unknown -> Unknown" before).
func TestMemcpyNames(t *testing.T) {
	enums := []string{
		`CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT)`,
		`INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'),
			(8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device')`,
		`CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT)`,
		`INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),
			(2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed')`,
	}
	rows := `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
		(100, 200, 0, 7, 1, 1, 1, 0, 2), (300, 400, 0, 7, 2, 1, 2, 2, 1), (500, 600, 0, 7, 3, 1, 8, 2, 2),
		(700, 800, 0, 7, 4, 1, 11, 4, 4), (900, 950, 0, 7, 5, 1, 8, NULL, NULL)`
	for _, tc := range []struct {
		name     string
		schema   []string
		want     []string
		pageable int
	}{
		{"enum tables", enums, []string{"Memcpy DtoD", "Memcpy DtoD (Device -> Device)", "Memcpy DtoH (Device -> Pinned)",
			"Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (unified) (Managed -> Managed)"}, 1},
		{"no enum tables", nil, []string{"Memcpy DtoD", "Memcpy DtoD (Device -> Device)", "Memcpy DtoH (Device -> Pinned)",
			"Memcpy HtoD (Pageable -> Device)", "Memcpy HtoD (unified) (Managed -> Managed)"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "export.sqlite")
			exec(t, path, append(append([]string{
				`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
				`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
					correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)`,
				`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
					correlationId INTEGER, globalPid INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER)`,
			}, tc.schema...), rows)...)
			tl, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			pageable := 0
			for _, op := range tl.Ranks[0].GPU {
				if op.Kind == timeline.OpMemcpy {
					got = append(got, tl.Names.Name(op.Name))
				}
				if op.Flags&timeline.OpPageable != 0 {
					pageable++
				}
			}
			sort.Strings(got)
			if len(got) != len(tc.want) {
				t.Fatalf("names %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("names %q, want %q", got, tc.want)
				}
			}
			if pageable != tc.pageable {
				t.Errorf("%d pageable copies, want %d", pageable, tc.pageable)
			}
		})
	}
}

func exec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestMalformedRows: an export row that ends before it starts, or starts before 0, would
// give a negative duration; the export is reported as malformed with the rows counted.
func TestMalformedRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "export.sqlite")
	exec(t, path,
		`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
		`INSERT INTO StringIds VALUES (1, 'sm80_gemm')`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
			correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 900, 0, 7, 1, 1, 1, 1), (2000, 2100, 0, 7, 2, 1, 1, 1),
			(-50, 10, 0, 7, 3, 1, 1, 1), (3000, 2000, 0, 7, 4, 1, 1, 1)`)
	_, err := Load(path)
	var m *timeline.MalformedError
	if !errors.As(err, &m) || m.NegativeDur != 2 || m.NegativeTS != 1 || !strings.Contains(m.First, "CUPTI_ACTIVITY_KIND_KERNEL row starting at 1000 ns") {
		t.Fatalf("err %v (%+v)", err, m)
	}
}
