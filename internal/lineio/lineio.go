// Package lineio reads one line of a text file at a time, bounded: without
// bufio.Scanner's fixed token limit, but never holding more than the caller's maximum.
package lineio

import (
	"bufio"
	"bytes"
	"errors"
)

// ErrTooLong is a line longer than the maximum; the rest of it has been read past, so a
// caller that goes on reads the next line.
var ErrTooLong = errors.New("line too long")

// Read reads through the next '\n' (excluded) of br, at most max bytes: the line and
// br's error (io.EOF after the last line), or nil and ErrTooLong.
func Read(br *bufio.Reader, max int) ([]byte, error) { return read(br, max, true) }

// ReadOrStop is Read for a caller that gives up at a line longer than max: it returns
// ErrTooLong without reading the rest of that line, which may be gigabytes.
func ReadOrStop(br *bufio.Reader, max int) ([]byte, error) { return read(br, max, false) }

func read(br *bufio.Reader, max int, past bool) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > max {
			for past && errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, ErrTooLong
		}
		out = append(out, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(out, []byte{'\n'}), err
	}
}
