package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// SSE parsing follows the WHATWG HTML "Server-sent events" event-stream interpretation
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
// lines end in CRLF, LF or CR; a line starting with ':' is a comment; "field: value" strips
// one leading space from the value; "data" lines of one event are joined with "\n"; a blank
// line dispatches the event; an event cut by the end of the stream is not dispatched.
//
// Two deviations. An "error" field line (llama.cpp's server) is read like "data" and makes
// the event's type "error"; the specification ignores unknown fields. And, for speed: lines are read with bufio.Reader.ReadSlice('\n'), so a stream
// that ends lines with a bare CR only (no server we know does) is split correctly but an
// event is only seen once a later LF (or the end of the stream) arrives.

// ErrEventTooLarge is returned when one event's data grows past the reader's limit.
var ErrEventTooLarge = errors.New("sse: event larger than limit")

// Event is one dispatched server-sent event. Data is only valid until the next call to Next.
type Event struct {
	Type string // the "event:" field; "" means the default "message"
	Data []byte // data lines joined by "\n"
}

// SSEReader reads events from an event stream.
type SSEReader struct {
	r       *bufio.Reader
	max     int
	data    []byte
	typ     []byte
	hasData bool
	long    []byte // scratch for lines longer than the bufio buffer
	pending []byte // rest of a ReadSlice result after a bare CR
	started bool   // BOM check done
	err     error
}

// DefaultMaxEvent bounds one event's data (a hostile or broken server cannot make us
// buffer without limit).
const DefaultMaxEvent = 8 << 20

// NewSSEReader reads events from r, buffering bufSize bytes (min 16; bigger lines still
// work, through a scratch buffer) and refusing events over maxEvent bytes (0: DefaultMaxEvent).
func NewSSEReader(r io.Reader, bufSize, maxEvent int) *SSEReader {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return &SSEReader{r: bufio.NewReaderSize(r, bufSize), max: maxEvent}
}

// Reset reuses the reader (and its buffers) for another stream.
func (s *SSEReader) Reset(r io.Reader) {
	s.r.Reset(r)
	s.data, s.typ, s.long, s.pending = s.data[:0], s.typ[:0], s.long[:0], nil
	s.hasData, s.started, s.err = false, false, nil
}

// readLine returns the next line without its terminator. The slice is valid until the next
// call. io.EOF only when no bytes remain; a final unterminated line is returned first.
func (s *SSEReader) readLine() ([]byte, error) {
	if s.pending != nil {
		return s.splitCR(s.pending), nil
	}
	var line []byte
	b, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > s.max+2 {
				return nil, ErrEventTooLarge
			}
			b, err = s.r.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		line = s.long
	} else {
		line = b
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	if !s.started {
		s.started = true
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	// Strip the terminator: "\r\n", "\n", or (at EOF) a trailing "\r".
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	} else if n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return s.splitCR(line), nil
}

// splitCR returns the part of line before a bare CR and keeps the rest for the next call.
func (s *SSEReader) splitCR(line []byte) []byte {
	if i := bytes.IndexByte(line, '\r'); i >= 0 {
		rest := line[i+1:]
		s.pending = rest
		return line[:i]
	}
	s.pending = nil
	return line
}

// Next returns the next event. At the end of the stream it returns io.EOF (an event not
// terminated by a blank line is dropped, as the specification says). Other errors are the
// underlying reader's, or ErrEventTooLarge.
func (s *SSEReader) Next() (Event, error) {
	if s.err != nil {
		return Event{}, s.err
	}
	for {
		line, err := s.readLine()
		if err != nil {
			s.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if !s.hasData {
				s.typ = s.typ[:0]
				continue
			}
			ev := Event{Type: string(s.typ), Data: s.data[:len(s.data)-1]}
			s.data = s.data[:0]
			s.typ = s.typ[:0]
			s.hasData = false
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "error":
			// Not an SSE field: llama.cpp's server reports a failure on a 200 stream as an
			// "error: {json}" line (then "data: [DONE]"). A spec reader would drop it and
			// count the task as ok, so it becomes an event of type "error".
			s.typ = append(s.typ[:0], "error"...)
			fallthrough
		case "data":
			if len(s.data)+len(value)+1 > s.max {
				s.err = fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, s.max)
				return Event{}, s.err
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
			s.hasData = true
		case "event":
			s.typ = append(s.typ[:0], value...)
		}
		// "id" and "retry" do not matter to a one-shot client; unknown fields are ignored.
	}
}
