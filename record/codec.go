package record

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/pel-ladder/pel/internal/safefile"
)

// Writer appends records as JSON lines and flushes each one, so a crash loses nothing
// already recorded. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	f   *os.File // non-nil when we own a file (fsync on Close)
	err error    // first write error (sticky)
}

// NewWriter writes records to w. Every Write is a complete line written in one call.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	if f, ok := w.(*os.File); ok {
		wr.f = f
	}
	return wr
}

// Create creates (0600, for appending) a requests.jsonl file that must not exist; a link
// planted at path is refused, not followed.
func Create(path string) (*Writer, error) {
	f, err := safefile.Create(path)
	if err != nil {
		return nil, err
	}
	return NewWriter(f), nil
}

// Write appends one record as a line. After a failed write (a full disk) every later Write
// fails too: a line cut by the failure stays the file's last, which Read can skip, instead
// of sitting torn between complete records.
func (w *Writer) Write(r *Record) error {
	bp := lineBufs.Get().(*[]byte)
	defer func() {
		// A buffer a --keep-text line grew is left to the collector rather than kept.
		if cap(*bp) <= maxPooledLine {
			lineBufs.Put(bp)
		}
	}()
	b, err := appendLine((*bp)[:0], r)
	*bp = b
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	_, err = w.w.Write(b) // unbuffered: one write(2) per record
	w.err = err
	return err
}

// lineBufs holds the buffers Write encodes lines into, so a run writing thousands of
// records a second allocates none for them; the io.Writer contract forbids w.w to keep b.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledLine is the largest buffer lineBufs keeps: a record of a few thousand chunk
// timings, not a kept prompt of megabytes.
const maxPooledLine = 256 << 10

// encodeLine is r's line, newline included (see appendLine).
func encodeLine(r *Record) ([]byte, error) { return appendLine(nil, r) }

// appendLine appends r's line, newline included, to dst; it is never longer than MaxLine:
// the writer writes no line its own reader refuses. Text kept with --keep-text (a 14 M-token
// prompt is a 75 MB line) is cut until the line fits, and the record is flagged FlagTextCut;
// its length is still in prompt_chars and output_chars, its hash in prompt_sha256.
func appendLine(dst []byte, r *Record) ([]byte, error) {
	n0 := len(dst)
	b, err := encodeRecord(dst, r)
	if err != nil {
		return dst, err
	}
	// A cut prompt and output of limit bytes each are at most 6×limit escaped (\u0000).
	for limit := MaxLine / 16; len(b)-n0+1 > MaxLine && limit > 0 && (r.Prompt != "" || r.Output != ""); limit /= 4 {
		c := *r
		c.Prompt, c.Output = cutText(r.Prompt, limit), cutText(r.Output, limit)
		c.Flags = slices.Clone(r.Flags)
		c.AddFlag(FlagTextCut)
		if b, err = encodeRecord(b[:n0], &c); err != nil {
			return dst, err
		}
	}
	if len(b)-n0+1 > MaxLine {
		return dst, fmt.Errorf("record %s: %d bytes encoded, over the %d MiB a line of requests.jsonl may hold", r.ID, len(b)-n0, MaxLine>>20)
	}
	return append(b, '\n'), nil
}

// cutText is the first at most n bytes of s, cut at a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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

// MaxLine bounds one JSONL line: a record with MaxChunkTimings timings is ~1 MiB, so 64 MiB
// is only ever reached by a file that is not pel's.
const MaxLine = 64 << 20

// TornLine describes a last line cut mid-write (a crash or a full disk during the final
// Write): it does not end in a newline and does not decode. The lines before it are used.
type TornLine struct {
	Line  int // 1-based
	Bytes int // bytes of the cut line
}

func (t *TornLine) String() string {
	return fmt.Sprintf("line %d is cut mid-write (%d bytes, no newline): ignored; the %d complete lines before it are used", t.Line, t.Bytes, t.Line-1)
}

// Read decodes a JSONL record stream. A malformed line is an error naming its line number,
// except a torn last line (see TornLine), which is skipped and returned.
func Read(r io.Reader, f func(*Record) error) (*TornLine, error) { return ReadFiltered(r, nil, f) }

// ReadFiltered is Read with a look at each complete line first: a line skip returns true
// for is not decoded (a pass that needs a few records of a long file saves the decoding).
func ReadFiltered(r io.Reader, skip func(line []byte) bool, f func(*Record) error) (*TornLine, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				if len(long) > MaxLine {
					return nil, fmt.Errorf("line %d: record longer than %d MiB", line+1, MaxLine>>20)
				}
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(b) > 0 {
			line++
			complete := b[len(b)-1] == '\n'
			if t := bytes.TrimSpace(b); len(t) > 0 && !(complete && skip != nil && skip(t)) {
				var rec Record
				jerr := decodeLine(t, &rec)
				if jerr == nil {
					jerr = rec.checkBounds() // bounds.go
				}
				if jerr != nil {
					if !complete {
						return &TornLine{Line: line, Bytes: len(b)}, nil
					}
					return nil, fmt.Errorf("line %d: %w", line, jerr)
				}
				rec.line = line
				if ferr := f(&rec); ferr != nil {
					return nil, ferr
				}
			}
		}
		if err == io.EOF {
			return nil, nil
		}
	}
}

// ReadFile reads the task records of a requests.jsonl file, skipping a torn last line
// silently; ReadFileTorn also says which line that was. A multi-step task's step records
// are attached to its task record (Record.StepRecords), not returned on their own, so every
// record returned is one task.
func ReadFile(path string) ([]Record, error) {
	recs, _, err := ReadFileTorn(path)
	return recs, err
}

// ReadFileTorn reads the task records of a requests.jsonl file (see ReadFile) and reports
// a torn last line.
func ReadFileTorn(path string) ([]Record, *TornLine, error) {
	all, torn, err := ReadAllFile(path)
	if err != nil {
		return nil, nil, err
	}
	tasks, _ := Group(all)
	return tasks, torn, nil
}

// ReadAllFile reads every line of a requests.jsonl file as it is: task and step records.
func ReadAllFile(path string) ([]Record, *TornLine, error) {
	f, err := safefile.OpenNamed(path) // a FIFO would block the open
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var out []Record
	torn, err := Read(f, func(r *Record) error { out = append(out, *r); return nil })
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, torn, nil
}

// Group returns the task records of all (in their order) with each multi-step task's step
// records attached in order of their index (Joiner). orphans counts step records whose task
// record does not follow them: the run ended (a crash, a kill) while their task was still
// running, so the task has no verdict; the finished steps stay in the file.
func Group(all []Record) (tasks []Record, orphans int) {
	j := NewJoiner()
	for i := range all {
		r := all[i]
		if t := j.Add(&r); t != nil {
			tasks = append(tasks, *t)
		}
	}
	return tasks, j.Orphans()
}
