package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

type readResult struct {
	recs []Record
	torn *TornLine
	err  string
}

func readWith(t *testing.T, in []byte, parallel bool, stopAt int) readResult {
	t.Helper()
	var res readResult
	f := func(r *Record) error {
		if stopAt > 0 && len(res.recs) == stopAt {
			return errors.New("stop")
		}
		res.recs = append(res.recs, *r)
		return nil
	}
	var err error
	if parallel {
		res.torn, err = ReadParallel(bytes.NewReader(in), 3, nil, f)
	} else {
		res.torn, err = Read(bytes.NewReader(in), f)
	}
	if err != nil {
		res.err = err.Error()
	}
	return res
}

// ReadParallel reads any input exactly as Read does: records, torn last line, errors.
func TestReadParallelIsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	line := func(i int) string {
		b, _ := json.Marshal(Record{Seq: i, Task: "t", ChunkUS: []int64{int64(i)}})
		return string(b)
	}
	var cases [][]byte
	for _, n := range []int{0, 1, 5, 1023, 1024, 1025, 5000} {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(line(i) + "\n")
			if rng.IntN(50) == 0 {
				b.WriteString("   \n")
			}
		}
		cases = append(cases, []byte(b.String()))
		cases = append(cases, []byte(b.String()+`{"seq":9,"ta`))       // torn
		cases = append(cases, []byte(b.String()+line(n)))              // last line complete JSON, no newline
		cases = append(cases, []byte(b.String()+"not json\n"+line(n))) // bad line
	}
	big := strings.Repeat(line(1)+"\n", 3000) + line(2)[:10] + "\n" + line(3) + "\n" // bad line mid-batch
	cases = append(cases, []byte(big))
	for i, in := range cases {
		for _, stopAt := range []int{0, 7, 2000} {
			want, got := readWith(t, in, false, stopAt), readWith(t, in, true, stopAt)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d stop %d: parallel read %d records, torn %+v, err %q; Read %d, %+v, %q",
					i, stopAt, len(got.recs), got.torn, got.err, len(want.recs), want.torn, want.err)
			}
		}
	}
}

func TestReadParallelSkip(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"seq":%d,"accepted":%v}`+"\n", i, i%3 != 0)
	}
	skip := func(l []byte) bool { return bytes.Contains(l, []byte(`"accepted":true`)) }
	var a, c []int
	ReadFiltered(strings.NewReader(b.String()), skip, func(r *Record) error { a = append(a, r.Seq); return nil })
	ReadParallel(strings.NewReader(b.String()), 2, skip, func(r *Record) error { c = append(c, r.Seq); return nil })
	if len(a) != 1000 || !reflect.DeepEqual(a, c) {
		t.Fatalf("%d vs %d records", len(a), len(c))
	}
}

// FuzzReadParallel: on any bytes, the parallel reader agrees with Read.
func FuzzReadParallel(f *testing.F) {
	f.Add([]byte("{\"seq\":1}\n{\"seq\":2}\n"))
	f.Add([]byte("{\"seq\":1}\n\n  \n{\"seq\""))
	f.Add([]byte("x\n{}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		want, got := readWith(t, in, false, 0), readWith(t, in, true, 0)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parallel %+v, Read %+v", got, want)
		}
	})
}
