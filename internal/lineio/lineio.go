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
func Read(br *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
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
