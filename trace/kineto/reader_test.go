package kineto

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func fixtures(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../testdata/kineto/*.json.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return files
}

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScanMatchesEncodingJSON checks the hand-written scanner against encoding/json on every
// real fixture: same events, same fields, same float values.
func TestScanMatchesEncodingJSON(t *testing.T) {
	for _, path := range fixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw := gunzip(t, path)
			var doc struct {
				TraceEvents []map[string]any `json:"traceEvents"`
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			i := 0
			// a tiny read size exercises every buffer-refill path (small fixtures only: it is slow)
			var src io.Reader = bytes.NewReader(raw)
			if len(raw) < 1<<20 {
				src = iotestOneByte(src, 7)
			}
			_, err := Scan(src, func(ev *Event) error {
				if i >= len(doc.TraceEvents) {
					return errors.New("more events than encoding/json saw")
				}
				want := doc.TraceEvents[i]
				i++
				if n, _ := want["name"].(string); n != string(ev.Name) {
					t.Fatalf("event %d name %q, want %q", i-1, ev.Name, n)
				}
				if c, _ := want["cat"].(string); catOf([]byte(c)) != ev.Cat && !(c == "" && ev.Cat == CatNone) {
					t.Fatalf("event %d cat %v, want %q", i-1, ev.Cat, c)
				}
				if p, _ := want["ph"].(string); p != "" && p[0] != ev.Ph {
					t.Fatalf("event %d ph %c, want %q", i-1, ev.Ph, p)
				}
				checkNum := func(key string, got Time, has bool) {
					n, ok := want[key].(json.Number)
					if ok != has {
						t.Fatalf("event %d %s presence %v, want %v", i-1, key, has, ok)
					}
					if !ok {
						return
					}
					f, _ := n.Float64()
					if f != got.US {
						t.Fatalf("event %d %s = %v, want %v", i-1, key, got.US, f)
					}
					if d := float64(got.NS) - f*1000; math.Abs(d) > 1+math.Abs(f)*1e-12 {
						t.Fatalf("event %d %s ns %d, want ~%v", i-1, key, got.NS, f*1000)
					}
				}
				checkNum("ts", ev.TS, ev.HasTS)
				checkNum("dur", ev.Dur, ev.HasDur)
				if args, ok := want["args"].(map[string]any); ok && ev.Cat != CatCPUOp && ev.Cat != CatPythonFunction {
					for key, got := range map[string]int64{"stream": ev.Stream, "correlation": ev.Correlation, "device": ev.Device, "bytes": ev.Bytes, "External id": ev.ExternalID} {
						n, ok := args[key].(json.Number)
						if !ok {
							if got != -1 {
								t.Fatalf("event %d args.%s = %d, want absent", i-1, key, got)
							}
							continue
						}
						v, _ := n.Int64()
						if v != got {
							t.Fatalf("event %d args.%s = %d, want %d", i-1, key, got, v)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(doc.TraceEvents) {
				t.Fatalf("scanned %d events, encoding/json saw %d", i, len(doc.TraceEvents))
			}
		})
	}
}

type smallReader struct {
	r io.Reader
	n int
}

func (s *smallReader) Read(p []byte) (int, error) {
	if len(p) > s.n {
		p = p[:s.n]
	}
	return s.r.Read(p)
}

func iotestOneByte(r io.Reader, n int) io.Reader { return &smallReader{r, n} }

func TestScanErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty file"},
		{"spaces", "  \n ", "empty file"},
		{"not json", "hello", "not JSON"},
		{"no events", `{"schemaVersion": 1}`, "no traceEvents"},
		{"events not array", `{"traceEvents": 3}`, "not an array"},
		{"truncated", `{"traceEvents": [{"ph": "X", "name": "k`, "unexpected end"},
		{"truncated after event", `{"traceEvents": [{"ph": "X"}`, "unexpected end"},
		{"event not object", `{"traceEvents": [1]}`, "not an object"},
		{"bad number", `{"traceEvents": [{"ts": 1.2.3}]}`, "invalid number"},
		{"trailing", `{"traceEvents": []} x`, "after the end"},
		{"missing colon", `{"traceEvents" []}`, "expected ':'"},
		{"bad escape", `{"traceEvents": [{"name": "a\q"}]}`, "bad escape"},
		{"deep", `{"traceEvents": [{"args": {"x": ` + strings.Repeat("[", 600) + `}}]}`, "nesting"},
		// raw control characters are not allowed inside a JSON string (FuzzReader found
		// one accepted; testdata/fuzz/FuzzReader keeps the input)
		{"control char in name", "{\"traceEvents\": [{\"name\": \"a\x01b\"}]}", "control character"},
		{"control char in skipped value", "{\"traceEvents\": [{\"args\": {\"x\": \"a\tb\"}}]}", "control character"},
		{"control char in key", "{\"traceEvents\": [{\"na\nme\": 1}]}", "control character"},
		{"bad escape in skipped value", `{"traceEvents": [{"args": {"x": "a\qb"}}]}`, "bad escape"},
		{"bad unicode escape in skipped value", `{"traceEvents": [{"args": {"x": "a\u12g4"}}]}`, "bad \\u escape"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Scan(strings.NewReader(tc.in), func(*Event) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestScanValues(t *testing.T) {
	in := `[{"ph":"X","cat":"kernel","name":"a\"b\u00e9\ud83d\ude00","pid":0,"tid":"stream 7","ts":1712195495505543.2,"dur":1.28,
	  "args":{"stream":7,"correlation":135139,"device":0,"bytes":256,"nested":{"x":[1,2,{"y":"z\\"}]}}},
	 {"ph":"X","cat":"cuda_runtime","name":"hipMemcpyWithStream","ts":-5,"dur":1e3,"args":{"stream":"0x0"}}]`
	var got []Event
	_, err := Scan(strings.NewReader(in), func(ev *Event) error {
		e := *ev
		e.Name = append([]byte(nil), ev.Name...)
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d events", len(got))
	}
	k := got[0]
	if string(k.Name) != "a\"bé😀" || k.Cat != CatKernel || k.Tid != -1 || k.Stream != 7 || k.Correlation != 135139 || k.Bytes != 256 {
		t.Fatalf("kernel event %+v", k)
	}
	if k.TS.NS != 1712195495505543200 || k.Dur.NS != 1280 || k.TS.US != 1712195495505543.2 || !k.TS.Frac {
		t.Fatalf("times %+v %+v", k.TS, k.Dur)
	}
	r := got[1]
	if r.Stream != -1 || r.TS.NS != -5000 || r.Dur.NS != 1000000 || r.Dur.US != 1000 {
		t.Fatalf("runtime event %+v", r)
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in string
		ns int64
	}{
		{"0", 0}, {"12", 12000}, {"1.5", 1500}, {"1.2345", 1235}, {"1.2344", 1234}, {"-1.5", -1500},
		{"4458676522690.655", 4458676522690655}, {"1e3", 1000000}, {"2.5E-1", 250},
	}
	for _, tc := range tests {
		got, ok := parseTime([]byte(tc.in))
		if !ok || got.NS != tc.ns {
			t.Errorf("parseTime(%s) = %+v %v, want ns %d", tc.in, got, ok, tc.ns)
		}
	}
	for _, bad := range []string{"", "-", ".", "1..2", "e5", "1e", "--1"} {
		if _, ok := parseTime([]byte(bad)); ok {
			t.Errorf("parseTime(%q) accepted", bad)
		}
	}
}

// FuzzReader feeds arbitrary bytes to Load: it must return an error or a timeline, never panic.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"stream":7,"correlation":1}}]}`))
	f.Add([]byte(`[{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":1.5,"dur":2.25,"args":{"correlation":1}}]`))
	f.Add([]byte(`{"deviceProperties":[{"id":0,"name":"A100"}],"distributedInfo":{"rank":3},"traceEvents":[]}`))
	f.Add([]byte(`{"traceEvents":[{"name":"a\u00e9\"","args":{"x":[1,{"y":null}]}}]}`))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	for _, p := range []string{"../testdata/kineto/a100-event-sync.trace.json.gz", "../testdata/kineto/a100-triton-compiled.trace.json.gz"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, _, err := Load(bytes.NewReader(data), LoadOptions{HTATime: true})
		if err == nil && tl == nil {
			t.Fatal("nil timeline without error")
		}
		// the scanner must agree with encoding/json on validity for plain JSON input
		if len(data) > 0 && data[0] != 0x1f && err == nil && !json.Valid(bytes.TrimSpace(data)) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
	})
}

func TestSkipStringAcrossRefills(t *testing.T) {
	// every split position of strings ending in backslash runs must scan the same
	in := `{"traceEvents":[{"ph":"X","x":"a\\\\","cat":"kernel","name":"k\\","y":"\\\"q","dur":1,"ts":2}]}`
	for n := 1; n < 12; n++ {
		var name string
		_, err := Scan(iotestOneByte(strings.NewReader(in), n), func(ev *Event) error {
			name = string(ev.Name)
			return nil
		})
		if err != nil || name != `k\` {
			t.Fatalf("read size %d: name %q err %v", n, name, err)
		}
	}
}

// TestRoundDecimalMatchesParseFloat checks the fast ns-timestamp path against strconv on
// values around ulp boundaries (ulp is 0.25 µs near 1.7e15).
func TestRoundDecimalMatchesParseFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"1712195495505543.125", "1712195495505543.375", "1712195495505543.1", "9007199254740991.5",
		"4458676522690.655", "2251799813685247.875", "2251799813685248.125", "1125899906842624.999999999"}
	for i := 0; i < 5000; i++ {
		ip := rng.Uint64N(1 << 53)
		cases = append(cases, strconv.FormatUint(ip, 10)+"."+strconv.FormatUint(rng.Uint64N(1000), 10))
	}
	for _, c := range cases {
		want, _ := strconv.ParseFloat(c, 64)
		got, ok := parseTime([]byte(c))
		if !ok || got.US != want {
			t.Fatalf("%s: got %v, want %v", c, got.US, want)
		}
	}
}

// TestMetaSurvivesRefills: keys of the metadata objects are read from the refillable
// buffer; a refill between a key and its value (tiny reads) must not change what is parsed.
func TestMetaSurvivesRefills(t *testing.T) {
	in := `{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 42314694656,
	  "computeMajor": 8, "computeMinor": 0, "numSms": 108}], "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
	  "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}]}`
	want, err := Scan(strings.NewReader(in), func(*Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Devices) != 1 || want.Devices[0].NumSMs != 108 || want.Rank != 3 || want.Backend != "nccl" {
		t.Fatalf("whole read: %+v", want)
	}
	for n := 1; n <= 9; n++ {
		got, err := Scan(iotestOneByte(strings.NewReader(in), n), func(*Event) error { return nil })
		if err != nil {
			t.Fatalf("reads of %d bytes: %v", n, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reads of %d bytes: %+v, want %+v", n, got, want)
		}
	}
}
