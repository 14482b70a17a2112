package kineto

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/trace/timeline"
)

// Hostile input: each case fails without its bound.

// TestHugeNameInSmallGzip: a kernel name of 64 MiB inside a ~64 KiB .json.gz (1 GiB in 1 MB
// takes the same code path; this size keeps the test fast). Buffering the whole name runs
// out of memory at 1 GiB; the scanner keeps MaxStringBytes of it, counts the cut, and
// allocates far less than the name's size.
func TestHugeNameInSmallGzip(t *testing.T) {
	const nameBytes = 64 << 20
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	io.WriteString(zw, `{"traceEvents":[{"ph":"X","cat":"kernel","name":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < nameBytes>>20; i++ {
		zw.Write(chunk)
	}
	io.WriteString(zw, `","ts":1,"dur":2,"args":{"stream":7,"correlation":1}}]}`)
	zw.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tl, _, err := Load(bytes.NewReader(gz.Bytes()), LoadOptions{HTATime: true})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(tl.Names.Name(tl.Ranks[0].GPU[0].Name)); got != MaxStringBytes {
		t.Fatalf("kept %d bytes of the name, want %d", got, MaxStringBytes)
	}
	if len(tl.Notes) != 1 || !strings.Contains(tl.Notes[0], "1 names longer than") {
		t.Fatalf("notes %q, want the cut counted", tl.Notes)
	}
	// the gzip reader, the scanner's 256 KiB buffer and the kept prefix: a few MiB at most
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("reading a %d MiB name allocated %d MiB", nameBytes>>20, alloc>>20)
	}
}

// TestLongTokens: every string and number form is bounded, whatever it holds.
func TestLongTokens(t *testing.T) {
	long := strings.Repeat("x", 3*MaxStringBytes)
	esc := strings.Repeat(`\u00e9`, MaxStringBytes) // escapes decode through the slow path
	for _, tc := range []struct {
		name, in string
		want     int // name bytes kept
	}{
		{"plain name", `[{"ph":"X","cat":"kernel","name":"` + long + `","ts":1,"dur":1,"args":{"stream":7}}]`, MaxStringBytes},
		{"escaped name", `[{"ph":"X","cat":"kernel","name":"` + esc + `","ts":1,"dur":1,"args":{"stream":7}}]`, MaxStringBytes},
		{"long key and cat", `[{"` + long + `":1,"cat":"` + long + `","ph":"X","name":"k","ts":1,"dur":1,"args":{"` + long + `":"` + long + `"}}]`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{7, 4096, 1 << 20} { // read sizes: every refill path
				var name []byte
				_, err := Scan(iotestOneByte(strings.NewReader(tc.in), n), func(ev *Event) error {
					name = append(name[:0], ev.Name...)
					return nil
				})
				if err != nil {
					t.Fatalf("read size %d: %v", n, err)
				}
				if tc.want >= 0 && len(name) != tc.want && len(name) != tc.want-1 { // -1: a rune cut whole
					t.Fatalf("read size %d: kept %d bytes, want %d", n, len(name), tc.want)
				}
			}
		})
	}
	_, err := Scan(strings.NewReader(`[{"ts":`+strings.Repeat("1", MaxNumberBytes+1)+`}]`), func(*Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "number longer than") {
		t.Fatalf("long number: %v", err)
	}
}

// TestNegativeTimes: negative ts or dur would give "idle 106.48%, compute -6.48%" and
// kernels of -10 µs; the trace is malformed, with the offending events counted.
func TestNegativeTimes(t *testing.T) {
	in := `{"traceEvents":[
	  {"ph":"X","cat":"kernel","name":"k","ts":100,"dur":-10,"args":{"stream":7,"correlation":1}},
	  {"ph":"X","cat":"kernel","name":"k","ts":120,"dur":-1.5,"args":{"stream":7,"correlation":2}},
	  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":-5,"dur":2,"args":{"correlation":1}},
	  {"ph":"X","cat":"kernel","name":"k","ts":1e300,"dur":1,"args":{"stream":7,"correlation":3}},
	  {"ph":"X","cat":"kernel","name":"ok","ts":200,"dur":10,"args":{"stream":7,"correlation":4}}]}`
	for _, hta := range []bool{true, false} {
		_, _, err := Load(strings.NewReader(in), LoadOptions{HTATime: hta})
		var m *timeline.MalformedError
		if !errors.As(err, &m) {
			t.Fatalf("HTATime=%v: err %v, want a MalformedError", hta, err)
		}
		if m.NegativeDur != 2 || m.NegativeTS != 1 || m.OutOfRange != 1 || !strings.Contains(m.First, "trace event 0") {
			t.Fatalf("HTATime=%v: %+v", hta, m)
		}
		if !strings.Contains(err.Error(), "2 with a negative duration, 1 with a negative timestamp, 1 with a time beyond") {
			t.Fatalf("message %q", err)
		}
	}
}

// endlessKernels is a trace that never ends: tiny kernel events, forever.
type endlessKernels struct {
	head bool
	n    int
	buf  []byte
}

func (e *endlessKernels) Read(p []byte) (int, error) {
	if !e.head {
		e.head, e.buf = true, []byte(`{"traceEvents":[`)
	}
	for len(e.buf) < len(p) {
		e.buf = fmt.Appendf(e.buf, `{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1,"args":{"stream":7,"correlation":%d}},`, e.n, e.n)
		e.n++
	}
	n := copy(p, e.buf)
	e.buf = e.buf[:copy(e.buf, e.buf[n:])]
	return n, nil
}

// TestRecordLimit: "20 M tiny events exceed 4 GB". Records kept are bounded
// (Limits.MaxRecords, 1 M by default): past the limit Load stops with a clear error, after
// holding only the limit's worth. Before, an endless trace grew memory until it died.
func TestRecordLimit(t *testing.T) {
	src := &endlessKernels{}
	_, _, err := Load(src, LoadOptions{HTATime: true, Limits: timeline.Limits{MaxRecords: 50_000}})
	var big *timeline.ErrTooLarge
	if !errors.As(err, &big) || big.Max != 50_000 {
		t.Fatalf("err %v, want ErrTooLarge at 50000", err)
	}
	if src.n > 60_000 {
		t.Fatalf("read %d events before stopping", src.n)
	}
}

// TestMemoryFollowsKeptRecords: events pel does not keep (cpu_op, python_function, flows)
// cost nothing after they are read, however many there are.
func TestMemoryFollowsKeptRecords(t *testing.T) {
	alloc := func(hostEvents int) uint64 {
		var b strings.Builder
		b.WriteString(`{"traceEvents":[`)
		for i := 0; i < hostEvents; i++ {
			fmt.Fprintf(&b, `{"ph":"X","cat":"cpu_op","name":"aten::op_%d","ts":%d,"dur":1,"args":{"Input Dims":[[%d,4096]]}},`, i, i, i)
		}
		b.WriteString(`{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"stream":7}}]}`)
		in := b.String()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tl, _, err := Load(strings.NewReader(in), LoadOptions{HTATime: true})
		runtime.ReadMemStats(&after)
		if err != nil || len(tl.Ranks[0].GPU) != 1 {
			t.Fatalf("%v", err)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(1_000), alloc(100_000)
	if large > small+(1<<20) {
		t.Fatalf("100,000 unkept events allocated %d KiB, 1,000 allocated %d KiB", large>>10, small>>10)
	}
}
