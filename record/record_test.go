package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestDerivedTimings(t *testing.T) {
	r := Record{
		ScheduledAt:   t0,
		FirstSentAt:   t0.Add(ms(3)),
		SentAt:        t0.Add(ms(5)),
		ClientQueueUS: 2000,
		HeadersAt:     t0.Add(ms(7)),
		FirstTokenAt:  t0.Add(ms(55)),
		LastTokenAt:   t0.Add(ms(95)),
		DoneAt:        t0.Add(ms(96)),
		OutputTokens:  5,
		// events at 50ms (1 token), 70ms (2 tokens), 90ms (2 tokens) after SentAt
		ChunkUS:     []int64{50000, 70000, 90000},
		ChunkTokens: []int{1, 2, 2},
	}
	cases := []struct {
		name string
		f    func() (time.Duration, bool)
		want time.Duration
	}{
		{"ttft from scheduled", r.TTFT, ms(55)},
		{"ttft from sent", r.TTFTFromSent, ms(50)},
		{"headers", r.TimeToHeaders, ms(2)},
		{"e2e", r.E2E, ms(96)},
		{"schedule lag excludes client queue", r.ScheduleLag, ms(1)},
		{"tpot", r.TPOT, ms(10)},
	}
	for _, c := range cases {
		got, ok := c.f()
		if !ok || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.name, got, ok, c.want)
		}
	}
	var itl []time.Duration
	r.ITLs(func(d time.Duration) { itl = append(itl, d) })
	want := []time.Duration{ms(10), ms(10), ms(10), ms(10)}
	if len(itl) != len(want) {
		t.Fatalf("ITLs = %v, want %v", itl, want)
	}
	for i := range want {
		if itl[i] != want[i] {
			t.Fatalf("ITLs = %v, want %v", itl, want)
		}
	}
	var gaps []time.Duration
	r.ChunkGaps(func(d time.Duration) { gaps = append(gaps, d) })
	if len(gaps) != 2 || gaps[0] != ms(20) {
		t.Fatalf("ChunkGaps = %v", gaps)
	}
}

func TestMissingTimes(t *testing.T) {
	r := Record{ScheduledAt: t0, Status: StatusConnError}
	for name, f := range map[string]func() (time.Duration, bool){
		"ttft": r.TTFT, "sent": r.TTFTFromSent, "headers": r.TimeToHeaders, "e2e": r.E2E, "lag": r.ScheduleLag, "tpot": r.TPOT,
	} {
		if _, ok := f(); ok {
			t.Errorf("%s: ok on a record without times", name)
		}
	}
	if !r.Failed() || r.OK() {
		t.Errorf("conn error: Failed=%v OK=%v", r.Failed(), r.OK())
	}
	c := Record{Status: StatusCancelled}
	if c.Failed() {
		t.Error("cancelled counted as failed")
	}
}

func TestCodecRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := []Record{
		{Seq: 0, ID: "a", Task: "chat", Phase: PhaseWarm, ScheduledAt: t0, SentAt: t0.Add(ms(1)), Status: StatusOK, Accepted: true, Attempts: 1, ChunkUS: []int64{1, 2}, ChunkTokens: []int{1, 3}},
		{Seq: 1, ID: "b", Task: "doc", Phase: PhaseCold, ScheduledAt: t0.Add(ms(10)), Status: StatusHTTPError, HTTPStatus: 500, Attempts: 3, Reasons: []string{"error: http 500"}},
	}
	for i := range in {
		if err := w.Write(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Count(buf.String(), "\n") != 2 {
		t.Fatalf("want one line per record, got %q", buf.String())
	}
	if strings.Contains(buf.String(), "first_token_at") {
		t.Error("zero times should be omitted")
	}
	var out []Record
	if torn, err := Read(&buf, func(r *Record) error { out = append(out, *r); return nil }); err != nil || torn != nil {
		t.Fatal(err, torn)
	}
	if len(out) != 2 || out[1].HTTPStatus != 500 || !out[0].SentAt.Equal(in[0].SentAt) || out[0].ChunkTokens[1] != 3 {
		t.Fatalf("round trip mismatch: %+v", out)
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{\"seq\":0}\nnot json\n", "line 2"},
		{"\n\n{\"seq\":\"x\"}\n", "line 3"},
		// A cut line followed by more lines is damage in the middle, not a torn end.
		{"{\"seq\":0}\n{\"seq\":\n{\"seq\":2}\n", "line 2"},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.in), func(*Record) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%q) = %v, want error with %q", c.in, err, c.want)
		}
	}
}

// A crash or a full disk during the last write leaves a torn last line;
// the complete lines are used and the torn one is named.
func TestReadTornLastLine(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		n        int
		tornLine int
	}{
		{"cut mid-record", "{\"seq\":0}\n{\"seq\":1}\n{\"seq\":2,\"ta", 2, 3},
		{"cut after the brace", "{\"seq\":0}\n{\"seq\":1}", 2, 0},
		{"only a torn line", "{\"se", 0, 1},
		{"complete", "{\"seq\":0}\n", 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			torn, err := Read(strings.NewReader(c.in), func(*Record) error { n++; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if n != c.n {
				t.Errorf("%d records, want %d", n, c.n)
			}
			got := 0
			if torn != nil {
				got = torn.Line
				if !strings.Contains(torn.String(), fmt.Sprintf("line %d ", c.tornLine)) {
					t.Errorf("warning %q does not name line %d", torn, c.tornLine)
				}
			}
			if got != c.tornLine {
				t.Errorf("torn line %d, want %d", got, c.tornLine)
			}
		})
	}
}

// failAfter accepts n bytes, then writes part of the next buffer and fails (a full disk).
type failAfter struct {
	bytes.Buffer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.Len()+len(p) > f.n {
		k := f.n - f.Len()
		f.Buffer.Write(p[:k])
		return k, errors.New("no space left on device")
	}
	return f.Buffer.Write(p)
}

// After a failed write the Writer writes nothing more, so the torn line stays last and the
// file still reads.
func TestWriterStopsAfterError(t *testing.T) {
	b, _ := json.Marshal(&Record{Seq: 0, Status: StatusOK})
	fw := &failAfter{n: len(b) + 1 + 20} // the first line, then 20 bytes of the second
	w := NewWriter(fw)
	for i := range 5 {
		err := w.Write(&Record{Seq: i, Status: StatusOK})
		if i >= 1 && err == nil {
			t.Fatalf("write %d succeeded after the disk filled", i)
		}
	}
	n := 0
	torn, err := Read(bytes.NewReader(fw.Bytes()), func(*Record) error { n++; return nil })
	if err != nil || torn == nil || torn.Line != 2 || n != 1 {
		t.Fatalf("read %d records, torn %v, err %v", n, torn, err)
	}
}

func TestITLsBounded(t *testing.T) {
	r := Record{ChunkUS: []int64{0, 1000, 2000}, ChunkTokens: []int{1, 1 << 40, 1 << 40}}
	n := 0
	r.ITLs(func(time.Duration) { n++ })
	if n != MaxTokens {
		t.Fatalf("%d ITL calls, want the MaxTokens bound %d", n, MaxTokens)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"seq\":1,\"chunk_us\":[1,2],\"chunk_tokens\":[1]}\n"))
	f.Add([]byte("{\"scheduled_at\":\"bad\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Read(bytes.NewReader(b), func(r *Record) error {
			r.ITLs(func(time.Duration) {})
			r.ChunkGaps(func(time.Duration) {})
			r.TPOT()
			return nil
		})
	})
}
