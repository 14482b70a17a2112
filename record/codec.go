package record

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer appends records as JSON lines and flushes each one, so a crash loses nothing
// already recorded. It is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
	f  *os.File // non-nil when we own a file (fsync on Close)
}

// NewWriter writes records to w. Every Write is a complete line written in one call.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	if f, ok := w.(*os.File); ok {
		wr.f = f
	}
	return wr
}

// Create opens (0600, append) a requests.jsonl file.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return NewWriter(f), nil
}

// Write appends one record as a line.
func (w *Writer) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(b) // unbuffered: one write(2) per record
	return err
}

// Close syncs and closes the underlying file when the Writer owns one.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}

// Read decodes a JSONL record stream. A malformed line, including a final line cut mid-way
// by a crash during the last write, is an error naming its line number.
func Read(r io.Reader, f func(*Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if err := f(&rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: record longer than 64 MiB", line+1)
		}
		return err
	}
	return nil
}

// ReadFile reads every record of a requests.jsonl file.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	err = Read(f, func(r *Record) error { out = append(out, *r); return nil })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
