package record

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// ReadParallel is ReadFiltered with the lines decoded by several goroutines: f still sees
// the records one at a time, in file order, and the result (records, torn last line,
// errors and their line numbers) is Read's. A pass over an hour-long requests.jsonl is
// bound by decoding; this spreads it over the machine's cores. workers <= 0: GOMAXPROCS.
func ReadParallel(r io.Reader, workers int, skip func(line []byte) bool, f func(*Record) error) (*TornLine, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 {
		return ReadFiltered(r, skip, f)
	}
	stop := make(chan struct{})
	work := make(chan *batch, workers)
	order := make(chan *batch, 2*workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.decode(skip)
				close(b.done)
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(work)
		readBatches(r, stop, work, order)
	}()
	defer func() {
		close(stop) // an early return: the reader stops handing out batches
		wg.Wait()
	}()
	for b := range order {
		<-b.done
		for i := range b.lines {
			l := &b.lines[i]
			switch {
			case l.skipped:
			case l.err != nil && !l.complete:
				return &TornLine{Line: l.n, Bytes: l.raw}, nil
			case l.err != nil:
				return nil, fmt.Errorf("line %d: %w", l.n, l.err)
			default:
				l.rec.line = l.n
				if err := f(&l.rec); err != nil {
					return nil, err
				}
			}
		}
		if b.err != nil {
			return nil, b.err
		}
		if b.eof {
			return nil, nil
		}
	}
	return nil, nil
}

// A batch is batchLines lines (~1 MiB of pel's usual records) or batchBytes of lines,
// whichever comes first: the batches read ahead are then a few MiB whatever the lines'
// length (1,024 records of 390 KB each would be 400 MB a batch).
const (
	batchLines = 1024
	batchBytes = 1 << 20
)

type pline struct {
	text     []byte // trimmed
	n, raw   int    // line number, bytes read
	complete bool
	skipped  bool
	rec      Record
	err      error
}

type batch struct {
	lines []pline
	err   error // a read error after the lines
	eof   bool
	done  chan struct{}
}

func (b *batch) decode(skip func([]byte) bool) {
	for i := range b.lines {
		l := &b.lines[i]
		if l.complete && skip != nil && skip(l.text) {
			l.skipped = true
			continue
		}
		l.err = decodeLine(l.text, &l.rec)
		if l.err == nil {
			l.err = l.rec.checkBounds() // bounds.go
		}
	}
}

// readBatches splits r into lines as Read does and hands them out in batches.
func readBatches(r io.Reader, stop <-chan struct{}, work, order chan<- *batch) {
	br := bufio.NewReaderSize(r, 64<<10)
	send := func(b *batch) bool {
		select {
		case order <- b:
		case <-stop:
			return false
		}
		select {
		case work <- b:
			return true
		case <-stop:
			return false
		}
	}
	b := &batch{done: make(chan struct{})}
	var long []byte
	line, size := 0, 0
	for {
		data, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], data...)
			for err == bufio.ErrBufferFull {
				if len(long) > MaxLine {
					b.err = fmt.Errorf("line %d: record longer than %d MiB", line+1, MaxLine>>20)
					send(b)
					return
				}
				data, err = br.ReadSlice('\n')
				long = append(long, data...)
			}
			data = long
		}
		if err != nil && err != io.EOF {
			b.err = err
			send(b)
			return
		}
		if len(data) > 0 {
			line++
			if t := bytes.TrimSpace(data); len(t) > 0 {
				b.lines = append(b.lines, pline{text: bytes.Clone(t), n: line, raw: len(data), complete: data[len(data)-1] == '\n'})
				size += len(t)
			}
		}
		if err == io.EOF {
			b.eof = true
			send(b)
			return
		}
		if len(b.lines) >= batchLines || size >= batchBytes {
			if !send(b) {
				return
			}
			b, size = &batch{done: make(chan struct{})}, 0
		}
	}
}
