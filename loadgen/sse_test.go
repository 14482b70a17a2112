package loadgen

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(r *SSEReader) ([]Event, error) {
	var out []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...), ID: append([]byte(nil), ev.ID...)})
	}
}

func eventsEqual(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || !bytes.Equal(a[i].Data, b[i].Data) || !bytes.Equal(a[i].ID, b[i].ID) {
			return false
		}
	}
	return true
}

func TestSSE(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name string
		in   string
		want []Event
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{Data: []byte(`{"a":1}`)}, {Data: []byte("[DONE]")}}},
		{"crlf", "data: a\r\n\r\n", []Event{{Data: []byte("a")}}},
		{"bare cr", "data: a\r\rdata: b\r\r", []Event{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"multi data", "data: a\ndata:b\n\n", []Event{{Data: []byte("a\nb")}}},
		{"comment and event", ": keep-alive\nevent: error\ndata: {}\n\n", []Event{{Type: "error", Data: []byte("{}")}}},
		{"no space", "data:x\n\n", []Event{{Data: []byte("x")}}},
		{"two spaces keep one", "data:  x\n\n", []Event{{Data: []byte(" x")}}},
		{"empty data dispatches", "data\n\n", []Event{{Data: []byte("")}}},
		{"cut event dropped", "data: a\n\ndata: b\n", []Event{{Data: []byte("a")}}},
		{"bom", "\ufeffdata: a\n\n", []Event{{Data: []byte("a")}}},
		{"long line", "data: " + long + "\n\n", []Event{{Data: []byte(long)}}},
		{"event without data ignored", "event: x\n\ndata: y\n\n", []Event{{Data: []byte("y")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = strings.NewReader(c.in)
				if oneByte {
					r = iotest.OneByteReader(r) // "data:" lines split across reads
				}
				got, err := readAll(NewSSEReader(r, 16, 0))
				if err != nil {
					t.Fatal(err)
				}
				if !eventsEqual(got, c.want) {
					t.Errorf("oneByte=%v got %q want %q", oneByte, got, c.want)
				}
				if ref, _ := refSSE(c.in); !eventsEqual(ref, c.want) {
					t.Errorf("oracle disagrees: %q", ref)
				}
			}
		})
	}
}

func TestSSETooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	_, err := readAll(NewSSEReader(strings.NewReader(in), 16, 50))
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	in = strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n"
	_, err = readAll(NewSSEReader(strings.NewReader(in), 4096, 50))
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("many lines: err = %v, want ErrEventTooLarge", err)
	}
}

// FuzzSSE checks the streaming parser against the whole-input oracle, with reads of one
// byte and of a small buffer, so split lines and bare CRs at read boundaries are covered.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[]}\n\ndata: [DONE]\n\n",
		"data: a\r\n\r\ndata: b\r\r",
		": c\nevent: error\ndata: x\ndata: y\n\n",
		"\ufeffdata:z\n\n", "data\n\n\n\r\r", "data: a\r",
		"error: {\"code\":400}\n\ndata: [DONE]\n\n", "event: x\nerror: y\nevent: z\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want, _ := refSSE(in)
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := readAll(NewSSEReader(r, 16, 1<<20))
			if err != nil {
				t.Fatalf("error %v on %q", err, in)
			}
			if !eventsEqual(got, want) {
				t.Fatalf("input %q oneByte=%v\n got %q\nwant %q", in, oneByte, got, want)
			}
		}
	})
}
