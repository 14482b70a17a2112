// Package safefile writes and opens files so that a link planted where pel writes or reads
// cannot redirect it: every file pel writes is first written in full to a new temporary file
// in the target's directory (created exclusively, never through a symbolic link), synced,
// and then put in place by a rename, which replaces a directory entry and never writes
// through one. A target that is a symbolic link is refused, and an existing target is
// replaced only when the caller says so.
//
// It has no file names of its own: package rundir owns the run directory's.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Errors, tested with errors.Is.
var (
	// ErrSymlink: the path is a symbolic link (refused whether writing or reading).
	ErrSymlink = errors.New("is a symbolic link")
	// ErrNotRegular: the path is not a regular file (a directory, FIFO, device or socket).
	ErrNotRegular = errors.New("is not a regular file")
	// ErrExists: the target exists and replacing it was not asked for (it wraps fs.ErrExist).
	ErrExists = fmt.Errorf("exists (%w)", fs.ErrExist)
)

type pathError struct {
	path string
	err  error
	hint string
}

func (e *pathError) Error() string {
	if e.hint != "" {
		return e.path + " " + e.err.Error() + ": " + e.hint
	}
	return e.path + " " + e.err.Error()
}
func (e *pathError) Unwrap() error { return e.err }

// Mode is the permission of every file written: a run describes a private deployment.
const Mode = 0o600

// Write writes path: write fills a new temporary file next to it, which is synced and then
// renamed over path. A failed write leaves path as it was and removes the temporary file.
// replace allows an existing regular file at path to be replaced; a symbolic link or any
// other non-regular file at path is always refused.
func Write(path string, replace bool, write func(io.Writer) error) error {
	return WritePerm(path, replace, Mode, write)
}

// WritePerm is Write giving the file perm instead of Mode (a file meant to be shared, such
// as an example contract).
func WritePerm(path string, replace bool, perm fs.FileMode, write func(io.Writer) error) error {
	if err := checkTarget(path, replace); err != nil {
		return err
	}
	f, tmp, err := createTemp(path)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if perm != Mode {
		if err := f.Chmod(perm); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := place(tmp, path, replace); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// WriteBytes writes b to path as Write does.
func WriteBytes(path string, replace bool, b []byte) error {
	return Write(path, replace, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Create creates path, which must not exist (nor be a link), for writing at its end: the
// files a run appends to as it goes (records, spans, samples) are new in a new directory.
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, Mode)
	if err != nil {
		return nil, explain(path, err)
	}
	return f, nil
}

// Open opens path for reading when it is a regular file: a symbolic link, FIFO, device,
// socket or directory is refused (a FIFO without blocking on it).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, explain(path, err)
	}
	return regular(f, path, "")
}

// regular returns f when it is a regular file, else closes it and names what it is.
func regular(f *os.File, path, advice string) (*os.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &pathError{path: path, err: ErrNotRegular, hint: "(" + kind(st.Mode()) + ")" + advice}
	}
	return f, nil
}

// OpenNamed opens for reading a file the user named (a trace, an export, a result or
// evidence file given on the command line): a symbolic link is followed, as the user chose
// the path, but only a regular file is opened, and the open never blocks, so a FIFO or a
// device is refused at once instead of hanging pel.
func OpenNamed(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path, ": give a file")
}

// ReadFile reads the whole of a regular file (see Open).
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Regular reports whether path exists as a regular file, refusing a link or another kind of
// file with an error (nil, false: it does not exist).
func Regular(path string) (bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return false, &pathError{path: path, err: ErrSymlink, hint: "refusing to read through it"}
	}
	if !st.Mode().IsRegular() {
		return false, &pathError{path: path, err: ErrNotRegular, hint: "(" + kind(st.Mode()) + ")"}
	}
	return true, nil
}

// Check is Write's refusal of path, made before anything is written: a link or another
// non-regular file at path, or an existing file without replace.
func Check(path string, replace bool) error { return checkTarget(path, replace) }

// checkTarget refuses a target that is a link or not a regular file, and an existing one
// unless replace.
func checkTarget(path string, replace bool) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return &pathError{path: path, err: ErrSymlink, hint: "refusing to replace it (remove the link, or write elsewhere)"}
	case !st.Mode().IsRegular():
		return &pathError{path: path, err: ErrNotRegular, hint: "(" + kind(st.Mode()) + "): refusing to replace it"}
	case !replace:
		return &pathError{path: path, err: ErrExists, hint: "refusing to replace it"}
	}
	return nil
}

// createTemp creates a new file in path's directory, named after path with a random suffix,
// exclusively and without following a link: a file or link planted under any name there is
// never opened.
func createTemp(path string) (*os.File, string, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, Mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, tmp, nil
	}
	return nil, "", fmt.Errorf("%s: no free temporary name in its directory", path)
}

// place puts tmp at path. Without replace it links tmp there, which fails when anything
// (a file or a link made since the check) is at path; with replace the rename replaces the
// directory entry, a link included, and never writes through it.
func place(tmp, path string, replace bool) error {
	if !replace {
		err := os.Link(tmp, path)
		if err == nil {
			return os.Remove(tmp)
		}
		if errors.Is(err, fs.ErrExist) {
			return &pathError{path: path, err: ErrExists, hint: "refusing to replace it"}
		}
		// A file system without hard links: check again and rename.
		if err := checkTarget(path, false); err != nil {
			return err
		}
	}
	return os.Rename(tmp, path)
}

// syncDir makes a rename in dir durable; a directory that cannot be synced (some file
// systems refuse) leaves the rename done but not yet on disk, as before the sync.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// explain names a refusal to open through a link (ELOOP from O_NOFOLLOW, EEXIST from
// O_EXCL).
func explain(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrExist) {
		if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return &pathError{path: path, err: ErrSymlink, hint: "refusing to open it"}
		}
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}
