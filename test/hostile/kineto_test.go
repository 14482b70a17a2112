package hostile

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Kineto trace of 7.9 M kernel events (under a record limit of 8 M, analysis crashed at
// 1.4 GB): the limit is what the memory bound holds, so pel trace either analyses the trace
// or refuses it as over its limit (exit 2), in bounded memory.
func TestKinetoManyEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and parses 7.9 M events (870 MB of JSON, gzipped)")
	}
	n := 7_900_000
	// PEL_KINETO_EVENTS measures another count (the peak RSS per record behind MaxRecords).
	if s := os.Getenv("PEL_KINETO_EVENTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	path := filepath.Join(t.TempDir(), "trace.json.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	w := bufio.NewWriterSize(zw, 1<<20)
	w.WriteString(`{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"H100"}],"traceEvents":[`)
	var b []byte
	for i := range n {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":`...)
		b = strconv.AppendInt(b, int64(i)*2, 10)
		b = append(b, `,"dur":1,"args":{"device":0,"stream":7,"correlation":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `}}`...)
		w.Write(b)
	}
	w.WriteString("]}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	res := pel(t, 5*time.Minute, nil, "trace", path)
	if res.code != 0 && !(res.code == 2 && strings.Contains(res.stderr, "pel's limit")) {
		t.Errorf("exit %d, want 0, or 2 naming the limit: %s", res.code, tail(res.stderr))
	}
}
