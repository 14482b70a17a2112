package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pel-ladder/pel/internal/lineio"
)

// MaxLine bounds one JSONL line (64 MiB): a longer line is surely not one prompt.
const MaxLine = 64 << 20

// eachJSON calls f with every JSON value of r and the 1-based line it starts on: either one
// value per line (JSONL; blank lines skipped) or, when the first non-blank byte is '[',
// the elements of one JSON array (the shape the public ShareGPT files come in).
// Errors name the file and line.
func eachJSON(r io.Reader, name string, f func(raw []byte, line int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	line := 1
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if b == '\n' {
			line++
			continue
		}
		if b == ' ' || b == '\t' || b == '\r' {
			continue
		}
		br.UnreadByte()
		if b == '[' {
			return eachArrayElem(br, name, line, f)
		}
		break
	}
	for ; ; line++ {
		raw, err := lineio.Read(br, MaxLine)
		if err == lineio.ErrTooLong {
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, line, MaxLine)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if ferr := f(raw, line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

// eachArrayElem reads a JSON array as a stream (encoding/json's Decoder over the file, one
// element in memory at a time: the public ShareGPT file is ~640 MB) and calls f per element
// with the line it starts on.
func eachArrayElem(br *bufio.Reader, name string, firstLine int, f func([]byte, int) error) error {
	lt := &lineTracker{r: br, line: firstLine}
	dec := json.NewDecoder(lt)
	if _, err := dec.Token(); err != nil { // '['
		return fmt.Errorf("%s:%d: bad JSON: %v", name, firstLine, err)
	}
	for dec.More() {
		start := lt.elementLine(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s:%d: bad JSON: %v", name, start, err)
		}
		if len(raw) > MaxLine {
			return fmt.Errorf("%s:%d: element longer than %d bytes", name, start, MaxLine)
		}
		if err := f(raw, start); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return fmt.Errorf("%s:%d: bad JSON: %v", name, lt.lineAt(dec.InputOffset()), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s:%d: data after the closing ]", name, lt.lineAt(dec.InputOffset()))
	}
	return nil
}

// lineTracker passes a stream to a json.Decoder and maps the decoder's offsets (asked in
// increasing order) to 1-based lines. It holds only the bytes between the last offset asked
// and what the decoder has read ahead: memory is bounded by the largest element.
type lineTracker struct {
	r    io.Reader
	base int64  // stream offset of buf[0]
	line int    // line at base
	buf  []byte // bytes read from base on
}

func (t *lineTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	return n, err
}

// lineAt is the line of stream offset off, and forgets the bytes before it.
func (t *lineTracker) lineAt(off int64) int {
	k := int(min(max(off-t.base, 0), int64(len(t.buf))))
	t.line += bytes.Count(t.buf[:k], []byte{'\n'})
	t.base += int64(k)
	t.buf = t.buf[k:]
	if cap(t.buf) > 1<<20 && len(t.buf) < cap(t.buf)/4 {
		t.buf = append([]byte(nil), t.buf...) // let a large element's buffer go
	}
	return t.line
}

// elementLine is the line the element after offset off starts on (past the separating
// whitespace and comma).
func (t *lineTracker) elementLine(off int64) int {
	line := t.lineAt(off)
	for _, c := range t.buf {
		switch c {
		case '\n':
			line++
		case ' ', '\t', '\r', ',':
		default:
			return line
		}
	}
	return line
}

// decodeStrict decodes one JSON value into v, rejecting unknown fields and trailing data.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
