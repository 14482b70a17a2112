package redact

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pel-ladder/pel/internal/ctxio"
	"github.com/pel-ladder/pel/internal/safefile"
)

// sqliteMagic starts every SQLite 3 database file (an Nsight Systems export).
var sqliteMagic = []byte("SQLite format 3\x00")

// TraceResult says what TraceFile did.
type TraceResult struct {
	Format string // "kineto" or "nsys"
	Nsys   *NsysResult
	Counts []Count
}

// TraceFile writes a redacted copy of the profiler trace src (a Kineto JSON(.gz), or an
// Nsight Systems SQLite export, told apart by their first bytes) to dst, atomically and
// without following a link (an existing dst is replaced only when force). A Kineto dst
// whose name ends in .gz is compressed. The copy is searched for every original replaced
// before it is put in place: one found is an error and dst is not written. A stop of the
// context (SetContext) ends every step, the copy, the search and the final write included,
// with ErrInterrupted; dst is then left as it was.
func (r *Redactor) TraceFile(src, dst string, force bool) (_ *TraceResult, err error) {
	defer func() {
		if err != nil && r.Stopped() != nil {
			err = fmt.Errorf("%s: %w", src, r.interrupted(err))
		}
	}()
	if err := safefile.Check(dst, force); err != nil {
		return nil, err
	}
	if a, err1 := filepath.Abs(src); err1 == nil {
		if b, err2 := filepath.Abs(dst); err2 == nil && a == b {
			return nil, fmt.Errorf("%s: the redacted copy must be another file than the trace", dst)
		}
	}
	f, err := safefile.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "pel-redact-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res := &TraceResult{}
	out := filepath.Join(tmp, "out")
	if bytes.Equal(head[:n], sqliteMagic) {
		res.Format = "nsys"
		f.Close()
		if res.Nsys, err = r.Nsys(src, out); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
	} else {
		res.Format = "kineto"
		err := safefile.Write(out, false, func(w io.Writer) error {
			return r.Kineto(f, w, strings.HasSuffix(dst, ".gz"))
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if strings.HasSuffix(dst, ".gz") {
			// Searching the compressed bytes proves nothing: search the JSON.
			if err := checkGzip(r, out); err != nil {
				return nil, err
			}
		}
	}
	if leaks, err := CheckFile(r, out); err != nil {
		return nil, err
	} else if len(leaks) > 0 {
		return nil, fmt.Errorf("%w: %s: %s at byte %d (nothing written)", ErrLeak, dst, leaks[0].Kind, leaks[0].Offset)
	}
	o, err := safefile.Open(out)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	err = safefile.Write(dst, force, func(w io.Writer) error { _, err := io.Copy(w, ctxio.Reader(r.context(), o)); return err })
	if err != nil {
		return nil, err
	}
	res.Counts = r.Counts()
	return res, nil
}

// IsSQLite reports whether head starts an SQLite 3 database (an Nsight Systems export).
func IsSQLite(head []byte) bool { return bytes.HasPrefix(head, sqliteMagic) }

// CheckGzipFile is CheckFile of a gzip file's decompressed bytes.
func CheckGzipFile(r *Redactor, file string) ([]Leak, error) {
	f, err := safefile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return checkReader(r, f, true)
}

func checkGzip(r *Redactor, file string) error {
	leaks, err := CheckGzipFile(r, file)
	if err != nil {
		return err
	}
	if len(leaks) > 0 {
		return fmt.Errorf("%w: %s at byte %d of the JSON (nothing written)", ErrLeak, leaks[0].Kind, leaks[0].Offset)
	}
	return nil
}

// CheckFile searches a file for the originals r replaced, a chunk at a time with an
// overlap longer than any original, so an occurrence across two chunks is still found.
func CheckFile(r *Redactor, file string) ([]Leak, error) {
	f, err := safefile.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return checkReader(r, f, false)
}

func checkReader(r *Redactor, in io.Reader, gz bool) ([]Leak, error) {
	if gz {
		z, err := gzipReader(in)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		in = z
	}
	const chunk, overlap = 4 << 20, 64 << 10
	buf := make([]byte, chunk+overlap)
	keep, base := 0, 0
	for {
		if err := r.Stopped(); err != nil {
			return nil, err
		}
		n, err := io.ReadFull(in, buf[keep:])
		data := buf[:keep+n]
		if leaks := r.Check(string(data)); len(leaks) > 0 {
			for i := range leaks {
				leaks[i].Offset += base
			}
			return leaks, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		keep = min(overlap, len(data))
		base += len(data) - keep
		copy(buf, data[len(data)-keep:])
	}
}
