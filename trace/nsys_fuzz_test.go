package trace

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// FuzzNsysExport: an Nsight Systems export is outside input whose container (SQLite) is
// parsed by the driver; what pel parses are the rows. Any values in the tables it reads (out
// of order, negative, overlapping, dangling ids, NULLs) must give a result or an error naming
// the file, never a panic.
func FuzzNsysExport(f *testing.F) {
	f.Add(int64(1000), int64(2000), int64(0), int64(7), int64(1), int64(100), int64(1), int64(900), int64(1100), int64(2), "sm80_gemm", "cudaLaunchKernel", false)
	f.Add(int64(5), int64(1), int64(-1), int64(-3), int64(0), int64(0), int64(99), int64(7), int64(3), int64(-5), "", "cudaDeviceSynchronize", true)
	f.Add(int64(1<<62), int64(-1<<62), int64(1<<40), int64(1<<31), int64(-1), int64(1<<50), int64(2), int64(0), int64(1<<62), int64(1), "ncclKernel_AllReduce", "cudaGraphLaunch", false)
	f.Fuzz(func(t *testing.T, kStart, kEnd, dev, stream, corr, pid, nameID, rStart, rEnd, rCorr int64, kName, rName string, nullName bool) {
		path := filepath.Join(t.TempDir(), "fuzz.sqlite")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var name any = nameID
		if nullName {
			name = nil
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`, nil},
			{`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
				correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER)`, nil},
			{`CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER)`, nil},
			{`INSERT INTO StringIds VALUES (1, ?), (2, ?)`, []any{kName, rName}},
			{`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, []any{kStart, kEnd, dev, stream, corr, pid, name, nameID}},
			{`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, 1, 1)`, []any{kEnd, kStart, dev, stream + 1, rCorr, pid}},
			{`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 2)`, []any{rStart, rEnd, pid, rCorr}},
			{`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)`, []any{rEnd, rStart, pid, corr, name}},
		} {
			if _, err := db.Exec(q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		r, err := Analyze(path, DefaultOptions())
		if err == nil && r == nil {
			t.Fatal("nil result without error")
		}
	})
}
