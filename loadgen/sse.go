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
//
//   - one U+FEFF byte order mark at the start of the stream is skipped;
//   - a line ends at CRLF, LF or CR, whichever comes first: a CR ends its line at once (the
//     event it completes is dispatched without waiting for more bytes), and an LF that
//     follows it, in the same read or the next, is the rest of the same line ending;
//   - a line starting with ':' is a comment; "field:value" strips one leading space from
//     the value; a line without ':' is a field with an empty value;
//   - "data" appends its value and "\n" to the data buffer; "event" sets the event type;
//     "id" sets the last event ID unless the value contains NUL; "retry" sets the
//     reconnection time when the value is ASCII digits only; other fields are ignored;
//   - a blank line dispatches the event when the data buffer is not empty (its final "\n"
//     removed), then clears data and type; the last event ID persists across events;
//   - at the end of the stream, a line or an event not yet terminated is discarded.
//
// Bytes are kept as sent: the specification decodes the stream as UTF-8 first (invalid
// sequences become U+FFFD), which changes no field name and no line boundary, and the JSON
// decoder that reads Data makes the same replacement.
//
// One deviation: an "error" field line (llama.cpp's server) is read like "data" and makes the
// event's type "error"; the specification ignores unknown fields.

// ErrEventTooLarge is returned when one event's data grows past the reader's limit.
var ErrEventTooLarge = errors.New("sse: event larger than limit")

// Event is one dispatched server-sent event. Data and ID are only valid until the next call
// to Next.
type Event struct {
	Type string // the "event:" field; "" means the default "message"
	Data []byte // data lines joined by "\n"
	ID   []byte // the last event ID when the event was dispatched
}

// SSEReader reads events from an event stream.
type SSEReader struct {
	r       *bufio.Reader
	max     int
	data    []byte
	typ     []byte
	id      []byte
	retry   int64 // reconnection time in ms; -1 until a valid "retry" field
	hasData bool
	long    []byte // a line that spans more than one buffer fill
	skipLF  bool   // the previous line ended in CR: an LF next is part of that line ending
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
	return &SSEReader{r: bufio.NewReaderSize(r, bufSize), max: maxEvent, retry: -1}
}

// Reset reuses the reader (and its buffers) for another stream.
func (s *SSEReader) Reset(r io.Reader) {
	s.r.Reset(r)
	s.data, s.typ, s.id, s.long = s.data[:0], s.typ[:0], s.id[:0], s.long[:0]
	s.retry, s.hasData, s.skipLF, s.started, s.err = -1, false, false, false, nil
}

// Retry returns the reconnection time the stream asked for, in milliseconds (saturated at
// the largest int64), and whether it asked. pel does not reconnect: a task is one attempt.
func (s *SSEReader) Retry() (int64, bool) { return s.retry, s.retry >= 0 }

var bom = []byte("\xef\xbb\xbf")

// fill makes at least one byte available without consuming it; it reads from the
// underlying reader only when nothing is buffered.
func (s *SSEReader) fill() error {
	if s.r.Buffered() > 0 {
		return nil
	}
	_, err := s.r.Peek(1)
	return err
}

// readLine returns the next line without its terminator, as soon as the terminator has
// arrived. The slice is valid until the next call. At the end of the stream it returns
// io.EOF (an unterminated last line is discarded).
func (s *SSEReader) readLine() ([]byte, error) {
	if !s.started {
		// Only a byte that can start a BOM makes us wait for three.
		if err := s.fill(); err != nil {
			return nil, err
		}
		if b, _ := s.r.Peek(1); b[0] == bom[0] {
			if b, _ := s.r.Peek(len(bom)); bytes.Equal(b, bom) {
				s.r.Discard(len(bom))
			}
		}
		s.started = true
	}
	s.long = s.long[:0]
	for {
		if err := s.fill(); err != nil {
			return nil, err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				s.r.Discard(1)
				continue
			}
		}
		end := bytes.IndexByte(buf, '\n')
		scan := buf
		if end >= 0 {
			scan = buf[:end]
		}
		if cr := bytes.IndexByte(scan, '\r'); cr >= 0 {
			end = cr
		}
		if end < 0 {
			if len(s.long)+len(buf) > s.max+2 {
				return nil, ErrEventTooLarge
			}
			s.long = append(s.long, buf...)
			s.r.Discard(len(buf))
			continue
		}
		line := buf[:end]
		if len(s.long) > 0 {
			s.long = append(s.long, line...)
			line = s.long
		}
		if buf[end] == '\r' {
			if end+1 < len(buf) {
				if buf[end+1] == '\n' {
					end++
				}
			} else {
				s.skipLF = true
			}
		}
		// Discard moves no bytes: line (a view of the buffer) stays valid until the next fill.
		s.r.Discard(end + 1)
		return line, nil
	}
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
			ev := Event{Type: string(s.typ), Data: s.data[:len(s.data)-1], ID: s.id}
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
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.id = append(s.id[:0], value...)
			}
		case "retry":
			if ms, ok := parseRetry(value); ok {
				s.retry = ms
			}
		}
	}
}

// parseRetry reads a "retry" value: ASCII digits only (anything else, or nothing, is
// ignored), base ten, saturated at the largest int64.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			n = 1<<63 - 1
			continue
		}
		n = n*10 + d
	}
	return n, true
}
