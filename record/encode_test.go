package record

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sameAsMarshal fails t unless encodeRecord writes what json.Marshal writes for r, or fails
// with json.Marshal's error, and appendRecord declines exactly the records json.Marshal refuses.
func sameAsMarshal(t *testing.T, r *Record) {
	t.Helper()
	want, werr := json.Marshal(r)
	prefix := []byte("prefix ")
	got, gerr := encodeRecord(bytes.Clone(prefix), r)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("error %v, json.Marshal's %v", gerr, werr)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("the bytes before the record were changed: %q", got)
	}
	if werr == nil && !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("encoded\n%s\njson.Marshal\n%s", got[len(prefix):], want)
	}
	if _, ok := appendRecord(nil, r); ok != (werr == nil) {
		t.Fatalf("appendRecord ok %v, json.Marshal error %v", ok, werr)
	}
}

// hostile are strings whose escaping encoding/json does its own way: HTML characters,
// every control character, DEL, invalid and cut UTF-8, UTF-16 surrogates encoded in UTF-8,
// the JavaScript line separators, a literal U+FFFD and non-ASCII text.
var hostile = func() []string {
	s := []string{"", `<script>alert("x&y")</script>`, `\`, `"`, "\u2028\u2029", "a\u2028b\u2029c",
		"\xff", "\xc3", "é\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\uFFFD", "\ufeffbom",
		"日本語 ✓ 🎉", "\x7f", "tab\there\r\nnew", "\x00", strings.Repeat("\x00\xff<", 100)}
	var ctl strings.Builder
	for c := range 0x20 {
		ctl.WriteByte(byte(c))
	}
	return append(s, ctl.String())
}()

func TestEncodeRecordMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 30, 15, 123456789, time.UTC)
	full := Record{
		Seq: 42, ID: "r-42", TraceID: "0af7651916cd43dd8448eb211c80319c", Task: "chat", Phase: PhaseWarm,
		Target: "http://h:8080", Shard: "1/3", Profiled: true, InFlight: 17,
		ScheduledAt: at, SentAt: at.Add(time.Millisecond), HeadersAt: at.Add(2 * time.Millisecond),
		FirstTokenAt: at.Add(5 * time.Millisecond), LastTokenAt: at.Add(12 * time.Millisecond),
		DoneAt: at.Add(13 * time.Millisecond), FirstSentAt: at.Add(time.Microsecond), ClientQueueUS: 250,
		ChunkUS: []int64{5000, 6000, 7000}, ChunkTokens: []int{1, 2, 5}, Chunks: 3,
		PromptTokens: 8, OutputTokens: 8, TokenSource: TokensUsage, CachedPromptTokens: 4,
		Attempts: 2, Status: StatusOK, HTTPStatus: 200, Error: "e", FinishReason: "stop", ErrorClass: ErrServer,
		SentPromptTokens: 8, Server: &ServerTimings{PrefillUS: 1, DecodeUS: 2, PromptN: 3},
		Flags: []string{FlagConnRetried, FlagTextCut}, Accepted: true, Reasons: []string{"slo ttft max", "x"},
		Step:  &StepRef{Task: 42, Index: 1, Kind: StepTools, Turn: 1, ThinkUS: 5, ToolUS: 6, CarriedTokens: 7, ToolCalls: 1, Inputs: 2, Dims: 384, Answer: true},
		Steps: 2, PromptHash: "abc", PromptChars: 10, OutputChars: 11, Prompt: "hello", Output: "world",
	}
	with := func(f func(r *Record)) Record { r := full; f(&r); return r }
	zone := func(name string, sec int) *time.Location { return time.FixedZone(name, sec) }
	cases := []struct {
		name string
		r    Record
	}{
		{"zero", Record{}},
		{"every field", full},
		{"empty non-nil slices and zero nested", Record{ChunkUS: []int64{}, ChunkTokens: []int{}, Flags: []string{}, Reasons: []string{}, Server: &ServerTimings{}, Step: &StepRef{}}},
		{"embeddings step", Record{Step: &StepRef{Turn: -1, Kind: StepEmbeddings}}},
		{"extreme numbers", Record{Seq: math.MinInt, InFlight: math.MaxInt, ClientQueueUS: math.MinInt64,
			ChunkUS: []int64{math.MaxInt64, math.MinInt64, -1, 0}, ChunkTokens: []int{math.MinInt, 0, math.MaxInt},
			Chunks: -1, PromptTokens: -7, OutputTokens: math.MaxInt, HTTPStatus: -200,
			Server: &ServerTimings{PrefillUS: math.MinInt64, DecodeUS: math.MaxInt64, PromptN: -1},
			Step:   &StepRef{Task: math.MinInt, ThinkUS: math.MaxInt64, ToolUS: -1}}},
		{"nanoseconds trimmed", Record{ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC), SentAt: time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)}},
		{"local time with a monotonic reading", Record{ScheduledAt: time.Now(), DoneAt: time.Now().Add(time.Second)}},
		{"zones east, west, with seconds, 23:59", Record{ScheduledAt: at.In(zone("a", 5*3600+1800)), SentAt: at.In(zone("b", -(9*3600 + 30*60 + 17))), DoneAt: at.In(zone("c", 23*3600+59*60))}},
		{"year 0 and 9999", Record{ScheduledAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), DoneAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)}},
		{"year 10000", Record{ScheduledAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year -1 in an omitzero field", Record{DoneAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"zone offset of 24 hours", Record{SentAt: at.In(zone("z", 24*3600))}},
		{"zone offset of -25 hours", Record{ScheduledAt: at.In(zone("z", -25*3600))}},
		{"zero instant in another zone", Record{SentAt: time.Time{}.In(zone("z", 3600))}},
	}
	for i, s := range hostile {
		cases = append(cases, struct {
			name string
			r    Record
		}{"hostile string " + string(rune('a'+i)), with(func(r *Record) {
			r.ID, r.Task, r.Error, r.Prompt, r.Output = s, s, s, s+s, "x"+s
			r.Flags, r.Reasons = []string{s, s}, []string{s}
			r.Step = &StepRef{Kind: s}
		})})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { sameAsMarshal(t, &c.r) })
	}
}

// filler sets every exported field of a value (pointers and slices included) from a byte
// stream, so a test built on it covers a field added to Record without being edited; a kind
// it does not know fails the test instead of being skipped.
type filler struct {
	t    testing.TB
	data []byte
}

func (f *filler) byte() byte {
	if len(f.data) == 0 {
		return 0
	}
	b := f.data[0]
	f.data = f.data[1:]
	return b
}

func (f *filler) u64() uint64 {
	var b [8]byte
	n := copy(b[:], f.data)
	f.data = f.data[n:]
	return binary.LittleEndian.Uint64(b[:])
}

func (f *filler) int() int64 {
	switch f.byte() % 6 {
	case 0:
		return 0
	case 1:
		return int64(f.byte())
	case 2:
		return -int64(f.byte())
	case 3:
		return math.MaxInt64
	case 4:
		return math.MinInt64
	default:
		return int64(f.u64())
	}
}

func (f *filler) string() string {
	switch f.byte() % 3 {
	case 0: // raw bytes: invalid UTF-8, control characters
		n := min(int(f.byte())%64, len(f.data))
		s := string(f.data[:n])
		f.data = f.data[n:]
		return s
	case 1:
		var b strings.Builder
		for range f.byte() % 4 {
			b.WriteString(hostile[int(f.byte())%len(hostile)])
		}
		return b.String()
	default:
		return ""
	}
}

func (f *filler) time() time.Time {
	// Years 0 to 9999 are what time.Time's MarshalJSON accepts.
	const year0, year10000 = -62167219200, 253402300800
	switch f.byte() % 8 {
	case 0:
		return time.Time{}
	case 1, 2: // within years 1970..2106, as a run writes
		return time.Unix(int64(uint32(f.u64())), int64(f.u64()%1e9)).UTC()
	case 3: // any year MarshalJSON accepts
		return time.Unix(year0+int64(f.u64()%(year10000-year0)), int64(f.u64()%1e9)).UTC()
	case 4: // any offset up to ±26 h, seconds included (24 h and beyond are refused)
		return time.Unix(int64(uint32(f.u64())), int64(f.u64()%1e9)).In(time.FixedZone("f", int(int32(f.u64())%(26*3600))))
	case 5:
		return time.Unix(int64(uint32(f.u64())), int64(f.u64()%1e9)).Local()
	case 6: // a wall clock with a monotonic reading
		return time.Now().Add(time.Duration(int32(f.u64())))
	default: // any time at all, mostly outside years 0..9999
		return time.Unix(int64(f.u64()>>1)-1<<62, int64(f.u64()%1e9)).In(time.FixedZone("g", int(int32(f.u64())%(26*3600))))
	}
}

func (f *filler) fill(v reflect.Value, path string) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(f.time()))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.byte()&1 == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(f.int())
	case reflect.String:
		v.SetString(f.string())
	case reflect.Pointer:
		if f.byte()%3 != 0 {
			v.Set(reflect.New(v.Type().Elem()))
			f.fill(v.Elem(), path)
		}
	case reflect.Slice:
		switch n := int(f.byte() % 6); n {
		case 0: // nil
		default:
			v.Set(reflect.MakeSlice(v.Type(), n-1, n-1))
			for i := range n - 1 {
				f.fill(v.Index(i), path)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				f.fill(v.Field(i), path+"."+sf.Name)
			}
		}
	default:
		f.t.Fatalf("%s: the test's filler has no values of kind %v; teach it, and appendRecord, the new field", path, v.Kind())
	}
}

func filled(t testing.TB, data []byte) *Record {
	var r Record
	(&filler{t: t, data: data}).fill(reflect.ValueOf(&r).Elem(), "Record")
	return &r
}

// Records with every field drawn at random, a field added later included.
func TestEncodeRecordRandomFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4096)
	encoded := 0
	const n = 3000
	for i := range n {
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		r := filled(t, data)
		if !t.Run("", func(t *testing.T) { sameAsMarshal(t, r) }) {
			t.Fatalf("record %d differs", i)
		}
		if _, err := json.Marshal(r); err == nil {
			encoded++
		}
	}
	t.Logf("%d of %d random records encode", encoded, n)
	// Both paths are taken: records json.Marshal writes and records it refuses.
	if encoded < n/10 || encoded > n-n/10 {
		t.Fatalf("%d of %d random records encode: the filler no longer draws both kinds", encoded, n)
	}
}

// The appender's list of keys is Record's (and its nested types'), in order and with the
// same options: a field added, renamed, reordered or given omitempty fails here until
// appendRecord writes it. Nor may the types marshal themselves, which json.Marshal would
// call and appendRecord would not.
func TestEncodedKeysMatchTags(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Record](), reflect.TypeFor[StepRef](), reflect.TypeFor[ServerTimings]()} {
		for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
			if reflect.PointerTo(typ).Implements(m) {
				t.Errorf("%s implements %v: appendRecord does not call it", typ.Name(), m)
			}
		}
		var tags []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				tags = append(tags, f.Tag.Get("json"))
			}
		}
		if want := encodedKeys[typ.Name()]; !reflect.DeepEqual(tags, want) {
			t.Errorf("%s has the JSON keys\n%q\nappendRecord writes\n%q", typ.Name(), tags, want)
		}
	}
}

// Lines of a file pel wrote decode and encode again to themselves, as json.Marshal writes them.
func TestEncodeRecordTestdata(t *testing.T) {
	f, err := os.Open("testdata/steps.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var r Record
		if err := decodeLine(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		sameAsMarshal(t, &r)
		n++
	}
	if n == 0 {
		t.Fatal("no lines read")
	}
}

// The Writer's lines are json.Marshal's, each with its newline, also from a reused buffer.
func TestWriterLinesMatchMarshal(t *testing.T) {
	var buf, want bytes.Buffer
	w := NewWriter(&buf)
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 2048)
	for range 200 {
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		r := filled(t, data)
		j, jerr := json.Marshal(r)
		err := w.Write(r)
		if (err == nil) != (jerr == nil) {
			t.Fatalf("Write: %v; json.Marshal: %v", err, jerr)
		}
		if jerr == nil {
			want.Write(append(j, '\n'))
		}
	}
	if !bytes.Equal(buf.Bytes(), want.Bytes()) {
		t.Fatalf("the written lines differ from json.Marshal's")
	}
}

func FuzzEncodeRecord(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x01\xff\x01<>&\xe2\x80\xa8\x02\x03\x04"))
	f.Add(bytes.Repeat([]byte{0xff, 0x01, 0x7f, 0xc3}, 300))
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		b := make([]byte, 1024)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsMarshal(t, filled(t, data)) })
}

// A load-only run's record: a streamed answer of a few events, its timings kept.
func benchRecord() *Record {
	at := time.Now()
	return &Record{
		Seq: 123456, ID: "pel-123456", TraceID: "0af7651916cd43dd8448eb211c80319c", Task: "chat", Phase: PhaseWarm, InFlight: 14,
		ScheduledAt: at, SentAt: at.Add(31 * time.Microsecond), HeadersAt: at.Add(900 * time.Microsecond),
		FirstTokenAt: at.Add(5100 * time.Microsecond), LastTokenAt: at.Add(12300 * time.Microsecond), DoneAt: at.Add(12400 * time.Microsecond),
		FirstSentAt: at.Add(31 * time.Microsecond), ChunkUS: []int64{5069, 6081, 7102, 8110, 9131, 10150, 11190, 12269},
		ChunkTokens: []int{1, 1, 1, 1, 1, 1, 1, 1}, PromptTokens: 8, OutputTokens: 8, TokenSource: TokensUsage,
		Attempts: 1, Status: StatusOK, HTTPStatus: 200, FinishReason: "stop", SentPromptTokens: 8, Accepted: true,
		PromptHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", PromptChars: 40, OutputChars: 37,
	}
}

// BenchmarkEncode is one record's line by reflection (json.Marshal, the reference) and by
// the writer's appendLine into a reused buffer.
func BenchmarkEncode(b *testing.B) {
	r := benchRecord()
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			_ = append(j, '\n')
		}
	})
	b.Run("appendLine", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendLine(buf[:0], r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
