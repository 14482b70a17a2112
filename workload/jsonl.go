package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
		raw, err := readLine(br)
		if len(bytes.TrimSpace(raw)) > 0 {
			if err == errLineTooLong {
				return fmt.Errorf("%s:%d: line longer than %d bytes", name, line, MaxLine)
			}
			if ferr := f(raw, line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && err != errLineTooLong {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads through the next '\n' (excluded) without bufio.Scanner's fixed token limit
// but with MaxLine as a bound.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > MaxLine {
			return out, errLineTooLong
		}
		out = append(out, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		out = bytes.TrimSuffix(out, []byte{'\n'})
		return out, err
	}
}

// eachArrayElem reads a JSON array and calls f per element with the line it starts on.
func eachArrayElem(br *bufio.Reader, name string, firstLine int, f func([]byte, int) error) error {
	data, err := io.ReadAll(br)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	lineAt := lineCounter(data, firstLine)
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '['
		return fmt.Errorf("%s:%d: bad JSON: %v", name, firstLine, err)
	}
	for dec.More() {
		start := skipSep(data, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s:%d: bad JSON: %v", name, lineAt(start), err)
		}
		if err := f(raw, lineAt(start)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return fmt.Errorf("%s:%d: bad JSON: %v", name, lineAt(int(dec.InputOffset())), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s:%d: data after the closing ]", name, lineAt(int(dec.InputOffset())))
	}
	return nil
}

func skipSep(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n' || data[i] == ',') {
		i++
	}
	return i
}

// lineCounter maps byte offsets (asked in increasing order) to 1-based line numbers.
func lineCounter(data []byte, first int) func(off int) int {
	pos, line := 0, first
	return func(off int) int {
		if off > len(data) {
			off = len(data)
		}
		if off < pos {
			pos, line = 0, first
		}
		line += bytes.Count(data[pos:off], []byte{'\n'})
		pos = off
		return line
	}
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
