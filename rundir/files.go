package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/internal/version"
	"github.com/pel-ladder/pel/record"
)

// File names inside a run directory. No other package spells them: each reads and writes
// them through a Dir.
const (
	ContractFile = "contract.yaml"
	RequestsFile = "requests.jsonl"
	EvidenceFile = "evidence.json"
	ReportFile   = "report.html"
	// MetricsFile holds the engine and GPU /metrics samples (package scrape writes them).
	MetricsFile = "metrics.jsonl"
	// SpansFile holds the engine's OTLP spans, one JSON per line (package otlp writes them).
	SpansFile = "spans.jsonl"
)

// Write errors, tested with errors.Is: a target that is a symbolic link or another kind of
// non-regular file is always refused; an existing output is replaced only with Force.
var (
	ErrSymlink    = safefile.ErrSymlink
	ErrNotRegular = safefile.ErrNotRegular
	ErrExists     = safefile.ErrExists
)

// The one -o rule of every command that writes a run directory (run, sweep, demo, merge):
// -o DIR names a directory that must be absent or empty (runs never mix); without -o the
// command writes ./pel-<command>-<UTC yyyymmdd-hhmmss>, a name it announces before it starts.

// OutFlagHelp is the -o flag's help, the same for every such command (%s: the command).
const OutFlagHelp = "directory to write (absent or empty; default ./pel-%s-<UTC time>)"

// OutPath is o, or when o is empty the default directory of command, announced on w.
func OutPath(w io.Writer, command, o string) string {
	d, def := DefaultOut(command, o)
	if def {
		AnnounceOut(w, command, d)
	}
	return d
}

// DefaultOut is o, or when o is empty the default directory of command (def true), for a
// command that announces it (AnnounceOut) only once its inputs are checked and the
// directory exists: nothing is said of a directory that is never written.
func DefaultOut(command, o string) (dir string, def bool) {
	if o != "" {
		return o, false
	}
	return "pel-" + command + "-" + time.Now().UTC().Format("20060102-150405"), true
}

// AnnounceOut says on w that command writes the default directory dir.
func AnnounceOut(w io.Writer, command, dir string) {
	fmt.Fprintf(w, "pel %s: no -o given: writing to ./%s\n", command, dir)
}

// CheckOut refuses an output that exists and is not an empty directory (nothing is made).
// what names the kind of directory in the message ("output", "sweep").
func CheckOut(path, what string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return bad(fmt.Errorf("%s directory %s: %v", what, path, err))
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		if st, err = os.Stat(path); err != nil {
			return bad(fmt.Errorf("%s directory %s: %v", what, path, err))
		}
	}
	if !st.IsDir() {
		if what != "output" {
			what += " output"
		}
		return bad(fmt.Errorf("%s %s exists and is not a directory", what, path))
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return bad(fmt.Errorf("%s directory %s: %v", what, path, err))
	}
	if len(ents) > 0 {
		return bad(fmt.Errorf("%s directory %s is not empty: choose a new -o DIR (%s are never mixed)", what, path, mixed(what)))
	}
	return nil
}

func mixed(what string) string {
	if what == "sweep" {
		return "sweeps"
	}
	return "runs"
}

// Create makes path the run directory of a new run under the one -o rule: absent (it is
// created, mode 0700) or an empty directory (its mode is tightened to 0700). Discard undoes
// it after a failed start.
func Create(path string) (*Dir, error) { return create(path, "output") }

func create(path, what string) (*Dir, error) {
	if err := CheckOut(path, what); err != nil {
		return nil, err
	}
	d := &Dir{Path: path}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return nil, bad(fmt.Errorf("%s directory %s: %v", what, path, err))
		}
		d.created = true
	}
	if err := os.Chmod(path, 0o700); err != nil {
		return nil, bad(fmt.Errorf("%s directory %s: %v", what, path, err))
	}
	return d, nil
}

// CreateSweep is Create for a sweep's directory (its points are run directories inside).
func CreateSweep(path string) (*Dir, error) { return create(path, "sweep") }

// Discard removes what a failed start left: the directory when Create made it, else its
// contents (an empty directory given with -o stays, empty).
func (d *Dir) Discard() {
	if d.created {
		os.RemoveAll(d.Path)
		return
	}
	ents, _ := os.ReadDir(d.Path)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(d.Path, e.Name()))
	}
}

// Sub is the run directory name inside d (a sweep's point), not yet created.
func (d *Dir) Sub(name string) string { return filepath.Join(d.Path, name) }

// WriteFile writes path (a file the user named, such as --html FILE) atomically, mode
// 0600: a temporary file made exclusively in path's directory, synced, then renamed over
// path. A symbolic link at path is refused; an existing file is replaced only when force.
func WriteFile(path string, force bool, write func(io.Writer) error) error {
	return safefile.Write(path, force, write)
}

// WriteFilePerm is WriteFile giving the file perm instead of 0600.
func WriteFilePerm(path string, force bool, perm fs.FileMode, write func(io.Writer) error) error {
	return safefile.WritePerm(path, force, perm, write)
}

// CheckWrite says, before anything is computed, whether WriteFile(path, force, ...) would
// be refused for what is at path now (a link, a non-regular file, a file without force).
func CheckWrite(path string, force bool) error { return safefile.Check(path, force) }

// Write writes the directory's file name atomically (see WriteFile), replacing the file a
// rebuild recomputes (evidence.json, report.html); a link at its name is refused.
func (d *Dir) Write(name string, write func(io.Writer) error) error {
	return safefile.Write(d.File(name), true, write)
}

// WriteEvidence writes evidence.json.
func (d *Dir) WriteEvidence(ev *evidence.Evidence) error {
	ev.PelVersion = version.Read().String()
	if err := d.Write(EvidenceFile, ev.Encode); err != nil {
		return fmt.Errorf("writing %s: %w", EvidenceFile, err)
	}
	return nil
}

// WriteContract writes contract.yaml (a new run's, or a merge's), which must not exist.
func (d *Dir) WriteContract(raw []byte) error {
	if err := safefile.WriteBytes(d.File(ContractFile), false, raw); err != nil {
		return fmt.Errorf("writing %s: %w", ContractFile, err)
	}
	return nil
}

// CreateRequests creates requests.jsonl for a new run: the records are appended as they end.
func (d *Dir) CreateRequests() (*record.Writer, error) {
	f, err := d.Append(RequestsFile)
	if err != nil {
		return nil, err
	}
	return record.NewWriter(f), nil
}

// Append creates the directory's file name, which must not exist, for appending (records,
// samples, spans written as they come); a link planted at the name is refused.
func (d *Dir) Append(name string) (*os.File, error) {
	f, err := safefile.Create(d.File(name))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	return f, nil
}

// OpenFile opens the directory's file name for reading; only a regular file is opened (a
// link, FIFO or device planted at the name is refused).
func (d *Dir) OpenFile(name string) (*os.File, error) { return safefile.Open(d.File(name)) }

// Has reports whether the directory holds name as a regular file; a link or another kind
// of file at the name is an error.
func (d *Dir) Has(name string) (bool, error) { return safefile.Regular(d.File(name)) }

// OpenRegular opens a file given by path for reading when it is a regular file (see OpenFile).
func OpenRegular(path string) (*os.File, error) { return safefile.Open(path) }

// ReadEvidence reads an evidence.json: path is a run directory or the file itself. A
// missing file wraps fs.ErrNotExist.
func ReadEvidence(path string) (*evidence.Evidence, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, EvidenceFile)
	}
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ev, err := evidence.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// Tasks is Each as an iterator: the task records of requests.jsonl in file order, each
// multi-step task with its steps attached. A read error is yielded once, last.
func (d *Dir) Tasks() iter.Seq2[*record.Record, error] {
	return func(yield func(*record.Record, error) bool) {
		errStop := errors.New("stopped")
		err := d.Each(func(r *record.Record) error {
			if !yield(r, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			yield(nil, err)
		}
	}
}

// MaxJSONLine bounds one line of a JSON-lines file other than requests.jsonl.
const MaxJSONLine = 4 << 20

// JSONLines streams the directory's JSON-lines file name, one value of T per non-empty
// line, holding one line at a time. A line longer than MaxJSONLine or that does not decode
// is an error naming the file and line (yielded once, last), except a cut last line (the
// writer died mid-line), which ends the stream. A missing file yields an error wrapping
// fs.ErrNotExist.
func JSONLines[T any](d *Dir, name string) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		path := d.File(name)
		f, err := safefile.Open(path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, 64<<10)
		var long []byte
		for line := 1; ; line++ {
			b, rerr := br.ReadSlice('\n')
			if rerr == bufio.ErrBufferFull {
				long = append(long[:0], b...)
				for rerr == bufio.ErrBufferFull {
					if len(long) > MaxJSONLine {
						yield(nil, bad(fmt.Errorf("%s:%d: line longer than %d MiB", path, line, MaxJSONLine>>20)))
						return
					}
					b, rerr = br.ReadSlice('\n')
					long = append(long, b...)
				}
				if len(long) > MaxJSONLine {
					yield(nil, bad(fmt.Errorf("%s:%d: line longer than %d MiB", path, line, MaxJSONLine>>20)))
					return
				}
				b = long
			}
			if rerr != nil && rerr != io.EOF {
				yield(nil, fmt.Errorf("%s: %w", path, rerr))
				return
			}
			if t := bytes.Trim(b, jsonSpace); len(t) > 0 {
				var v T
				if err := json.Unmarshal(t, &v); err != nil {
					if rerr == io.EOF && b[len(b)-1] != '\n' {
						return // a cut last line
					}
					yield(nil, bad(fmt.Errorf("%s:%d: %v", path, line, err)))
					return
				}
				if !yield(&v, nil) {
					return
				}
			}
			if rerr == io.EOF {
				return
			}
		}
	}
}

// jsonSpace is the whitespace JSON allows around a value (RFC 8259 §2).
const jsonSpace = " \t\r\n"
