package loadgen

import (
	"io"
	"strings"
	"testing"
)

// refSSE is a reference reading of the event-stream grammar and its interpretation
// (WHATWG HTML, "Server-sent events", §9.2.5 and §9.2.6), written for clarity rather than
// speed and independently of sse.go: the whole input is split into lines first, then each
// line is interpreted. It returns the dispatched events and the last valid "retry" value
// (-1 when none).
//
//	stream      = [ bom ] *event
//	event       = *( comment / field ) end-of-line
//	comment     = colon *any-char end-of-line
//	field       = 1*name-char [ colon [ space ] *any-char ] end-of-line
//	end-of-line = ( cr lf / cr / lf )
func refSSE(in string) ([]Event, int64) {
	in = strings.TrimPrefix(in, "\ufeff")
	// Lines: a terminator is CRLF, CR or LF; text after the last terminator is not a line.
	var lines []string
	for {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			break
		}
		lines = append(lines, in[:i])
		if strings.HasPrefix(in[i:], "\r\n") {
			in = in[i+2:]
		} else {
			in = in[i+1:]
		}
	}
	var (
		events      []Event
		data, typ   string
		lastID      string
		retry       int64 = -1
		sawDataLine bool  // the data buffer is not empty exactly when a data line was seen
	)
	for _, line := range lines {
		if line == "" {
			if sawDataLine {
				events = append(events, Event{Type: typ, Data: []byte(strings.TrimSuffix(data, "\n")), ID: []byte(lastID)})
			}
			data, typ, sawDataLine = "", "", false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "error": // pel's deviation: llama.cpp's error line is data of an "error" event
			typ = "error"
			data += value + "\n"
			sawDataLine = true
		case "data":
			data += value + "\n"
			sawDataLine = true
		case "event":
			typ = value
		case "id":
			if !strings.Contains(value, "\x00") {
				lastID = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				retry = saturatingDecimal(value)
			}
		}
	}
	return events, retry
}

func saturatingDecimal(s string) int64 {
	var n int64
	for _, c := range s {
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 1<<63 - 1
		}
		n = n*10 + d
	}
	return n
}

// stepReader hands its input out in pieces (sizes[i%len(sizes)] bytes, at least one) and,
// before every read after the first, calls check with how many bytes it has given: a
// parser that asks for more input must already have returned every event those bytes
// complete.
type stepReader struct {
	in    string
	pos   int
	sizes []byte
	k     int
	check func(delivered int)
}

func (r *stepReader) Read(p []byte) (int, error) {
	r.check(r.pos)
	if r.pos == len(r.in) {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.k%len(r.sizes)]%32) + 1
		r.k++
	}
	n = min(n, len(p), len(r.in)-r.pos)
	copy(p, r.in[r.pos:r.pos+n])
	r.pos += n
	return n, nil
}

// checkIncremental reads in through a stepReader and fails t when the parser holds back an
// event the bytes given so far complete, or returns events the reference does not.
func checkIncremental(t *testing.T, in string, sizes []byte) {
	t.Helper()
	var got []Event
	sr := &stepReader{in: in, sizes: sizes}
	sr.check = func(delivered int) {
		t.Helper()
		if want, _ := refSSE(in[:delivered]); !eventsEqual(got, want) {
			t.Fatalf("input %q: after %d bytes (%q) the parser asks for more with events\n %q\nwant %q",
				in, delivered, in[:delivered], got, want)
		}
	}
	r := NewSSEReader(sr, 16, 1<<20)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
		got = append(got, Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...), ID: append([]byte(nil), ev.ID...)})
	}
	want, retry := refSSE(in)
	if !eventsEqual(got, want) {
		t.Fatalf("input %q:\n got %q\nwant %q", in, got, want)
	}
	if ms, ok := r.Retry(); ms != retry || ok != (retry >= 0) {
		t.Fatalf("input %q: retry %d %v, want %d", in, ms, ok, retry)
	}
}

// TestSSEDispatchesWithoutWaiting: an event is returned as soon as the blank line that ends
// it has arrived, whichever line ending the stream uses; a CR at the end of a read is a
// complete line ending (an LF in the next read belongs to it).
func TestSSEDispatchesWithoutWaiting(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
	}{
		{"bare CR", "data: a\r\rdata: b\r\rdata: c\r\r"},
		{"LF", "data: a\n\ndata: b\n\n"},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n"},
		{"CRLF split after CR", "data: a\r\n\r\ndata: b\r\n\r\n"},
		{"mixed", "data: a\r\ndata: b\n\rid: 7\rdata: c\r\n\n"},
		{"fields", "\ufeff: hi\rretry: 100\revent: e\rid: x\rdata\r\r"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, sizes := range [][]byte{{0}, {1}, {6}, {7}, {8}, {31}} {
				checkIncremental(t, c.in, sizes)
			}
		})
	}
}

// FuzzSSEIncremental compares the streaming parser with refSSE on every prefix the reads
// deliver: what it has returned when it asks for more bytes is exactly what the reference
// dispatches for the bytes so far, and at the end the events, IDs and retry agree.
func FuzzSSEIncremental(f *testing.F) {
	for _, s := range []struct {
		in    string
		sizes string
	}{
		{"data: {\"choices\":[]}\r\rdata: [DONE]\r\r", "\x07"},
		{"data: a\r\n\r\ndata: b\r\r", "\x00\x01\x02"},
		{": c\nevent: error\ndata: x\ndata: y\n\n", "\x03"},
		{"\ufeffdata:z\n\n", "\x00"},
		{"\ufeff\ufeffdata:z\n\n", "\x01"},
		{"data\n\n\n\r\r", "\x1f"},
		{"id: 1\ndata: a\n\nid\ndata: b\n\nid: a\x00b\ndata: c\n\n", "\x04"},
		{"retry: 1000\nretry: x\nretry: 99999999999999999999999\n\n", "\x02"},
		{"error: {\"code\":400}\n\ndata: [DONE]\n\n", "\x05"},
		{"event: x\nerror: y\nevent: z\n\n", "\x00"},
		{"data:  two spaces\r\n:comment\r\nfield without colon\r\n\r\n", "\x09\x01"},
	} {
		f.Add(s.in, []byte(s.sizes))
	}
	f.Fuzz(func(t *testing.T, in string, sizes []byte) {
		checkIncremental(t, in, sizes)
	})
}
