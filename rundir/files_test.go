package rundir

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// victim is a file outside the run that a planted link points to; it must never change.
func victim(t *testing.T) (path string, check func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "victim")
	const body = "not pel's\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		t.Helper()
		if b, err := os.ReadFile(path); err != nil || string(b) != body {
			t.Errorf("the link's target changed: %q, %v", b, err)
		}
	}
}

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The write rules of every file pel writes: a new temporary file in the target's directory,
// a link at the target refused (with force too), an existing file replaced only with force,
// and links planted at any temporary name never followed.
func TestWriteFileRules(t *testing.T) {
	for _, c := range []struct {
		name    string
		plant   func(t *testing.T, path, victim string)
		force   bool
		wantErr error  // nil: the write succeeds
		want    string // the target's content afterwards (when it is a regular file)
	}{
		{"absent", func(*testing.T, string, string) {}, false, nil, "new"},
		{"exists, no force", func(t *testing.T, p, _ string) { os.WriteFile(p, []byte("old"), 0o600) }, false, ErrExists, "old"},
		{"exists, force", func(t *testing.T, p, _ string) { os.WriteFile(p, []byte("old"), 0o600) }, true, nil, "new"},
		{"link at target", func(t *testing.T, p, v string) { os.Symlink(v, p) }, false, ErrSymlink, ""},
		{"link at target, force", func(t *testing.T, p, v string) { os.Symlink(v, p) }, true, ErrSymlink, ""},
		{"dangling link at target", func(t *testing.T, p, v string) { os.Symlink(v+".none", p) }, true, ErrSymlink, ""},
		{"directory at target", func(t *testing.T, p, _ string) { os.Mkdir(p, 0o700) }, true, ErrNotRegular, ""},
		{"link at path.tmp", func(t *testing.T, p, v string) { os.Symlink(v, p+".tmp") }, false, nil, "new"},
		{"link at path.tmp, existing", func(t *testing.T, p, v string) {
			os.WriteFile(p, []byte("old"), 0o600)
			os.Symlink(v, p+".tmp")
		}, true, nil, "new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			v, unchanged := victim(t)
			p := filepath.Join(dir, "out.html")
			c.plant(t, p, v)
			err := WriteFile(p, c.force, text("new"))
			if c.wantErr == nil && err != nil {
				t.Fatalf("write: %v", err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Fatalf("write: %v, want %v", err, c.wantErr)
			}
			if c.wantErr != nil && !strings.Contains(err.Error(), p) {
				t.Errorf("the error does not name the file: %v", err)
			}
			unchanged()
			if c.want != "" {
				if got := read(t, p); got != c.want {
					t.Errorf("target holds %q, want %q", got, c.want)
				}
				if st, _ := os.Lstat(p); st.Mode().Perm() != 0o600 && c.wantErr == nil {
					t.Errorf("mode %v, want 0600", st.Mode().Perm())
				}
			}
			// Nothing else is left in the directory: no temporary file after success or failure.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if n := e.Name(); n != "out.html" && n != "out.html.tmp" {
					t.Errorf("left behind: %s", n)
				}
			}
		})
	}
}

// A failed write leaves the old file as it was and no temporary file.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, EvidenceFile)
	os.WriteFile(p, []byte("old"), 0o600)
	d := &Dir{Path: dir}
	boom := errors.New("boom")
	if err := d.Write(EvidenceFile, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if got := read(t, p); got != "old" {
		t.Errorf("file now %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries, want only %s", len(ents), EvidenceFile)
	}
}

// A rebuild replaces the directory's own files, but never through a link planted there.
func TestDirWriteRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	v, unchanged := victim(t)
	d := &Dir{Path: dir}
	os.Symlink(v, d.File(ReportFile))
	os.Symlink(v, d.File(EvidenceFile)+".tmp")
	if err := d.Write(ReportFile, text("x")); !errors.Is(err, ErrSymlink) {
		t.Errorf("report.html link: %v, want ErrSymlink", err)
	}
	if err := d.WriteEvidence(evidence.New()); err != nil {
		t.Errorf("evidence.json beside a planted evidence.json.tmp: %v", err)
	}
	unchanged()
	if _, err := ReadEvidence(dir); err != nil {
		t.Errorf("evidence.json written: %v", err)
	}
}

// The files a run appends to are created new: a file or link already at the name is refused.
func TestAppendIsExclusive(t *testing.T) {
	dir := t.TempDir()
	v, unchanged := victim(t)
	d := &Dir{Path: dir}
	os.Symlink(v, d.File(SpansFile))
	if _, err := d.Append(SpansFile); !errors.Is(err, ErrSymlink) {
		t.Errorf("link: %v, want ErrSymlink", err)
	}
	os.WriteFile(d.File(MetricsFile), []byte("x"), 0o600)
	if _, err := d.Append(MetricsFile); !errors.Is(err, fs.ErrExist) {
		t.Errorf("existing file: %v, want fs.ErrExist", err)
	}
	w, err := d.CreateRequests()
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&record.Record{Seq: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(d.File(RequestsFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	unchanged()
}

// Readers open only regular files: a link or a FIFO is refused, the FIFO without blocking.
func TestOpenFileRegularOnly(t *testing.T) {
	dir := t.TempDir()
	v, _ := victim(t)
	d := &Dir{Path: dir}
	os.Symlink(v, d.File(SpansFile))
	if _, err := d.OpenFile(SpansFile); !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("link: %v", err)
	}
	if ok, err := d.Has(SpansFile); ok || !errors.Is(err, ErrSymlink) {
		t.Errorf("Has(link) = %v, %v", ok, err)
	}
	if err := syscall.Mkfifo(d.File(MetricsFile), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := d.OpenFile(MetricsFile); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("FIFO: %v", err)
	}
	if ok, err := d.Has(RequestsFile); ok || err != nil {
		t.Errorf("Has(missing) = %v, %v", ok, err)
	}
}

// The one -o rule: absent or empty, never a file or a directory with something in it.
func TestCreateRule(t *testing.T) {
	root := t.TempDir()
	absent := filepath.Join(root, "a", "b")
	d, err := Create(absent)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(absent); !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("created %v", st.Mode())
	}
	os.WriteFile(d.File(ContractFile), []byte("x"), 0o600)
	d.Discard()
	if _, err := os.Stat(absent); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Discard left the directory it made: %v", err)
	}

	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	d, err = Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(empty); st.Mode().Perm() != 0o700 {
		t.Errorf("an empty directory given keeps mode %v", st.Mode().Perm())
	}
	os.WriteFile(d.File(ContractFile), []byte("x"), 0o600)
	d.Discard()
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("Discard of a given directory: %v entries, %v", len(ents), err)
	}

	full := filepath.Join(root, "full")
	os.Mkdir(full, 0o700)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	for p, want := range map[string]string{full: "is not empty", file: "is not a directory"} {
		if _, err := Create(p); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
	if _, err := CreateSweep(full); err == nil || !strings.Contains(err.Error(), "sweeps are never mixed") {
		t.Errorf("sweep: %v", err)
	}
	var buf bytes.Buffer
	if p := OutPath(&buf, "run", ""); !strings.HasPrefix(p, "pel-run-") || !strings.Contains(buf.String(), p) {
		t.Errorf("OutPath = %q, said %q", p, buf.String())
	}
	if p := OutPath(&buf, "run", "x"); p != "x" {
		t.Errorf("OutPath with -o = %q", p)
	}
}

type line struct {
	A int `json:"a"`
}

func TestJSONLines(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Path: dir}
	collect := func(body string) ([]int, error) {
		os.WriteFile(d.File(SpansFile), []byte(body), 0o600)
		var got []int
		for v, err := range JSONLines[line](d, SpansFile) {
			if err != nil {
				return got, err
			}
			got = append(got, v.A)
		}
		return got, nil
	}
	if got, err := collect("{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}"); err != nil || len(got) != 3 {
		t.Errorf("complete: %v, %v", got, err)
	}
	if got, err := collect("{\"a\":1}\n{\"a\":"); err != nil || len(got) != 1 {
		t.Errorf("cut last line: %v, %v", got, err)
	}
	if _, err := collect("{\"a\":1}\n{oops}\n{\"a\":3}\n"); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), SpansFile+":2:") {
		t.Errorf("bad line: %v", err)
	}
	if _, err := collect("{\"a\":\"" + strings.Repeat("x", MaxJSONLine+1) + "\"}\n"); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long line: %v", err)
	}
	os.Remove(d.File(SpansFile))
	if _, err := collect(""); err != nil {
		t.Errorf("empty file: %v", err)
	}
	os.Remove(d.File(SpansFile))
	for _, err := range JSONLines[line](d, SpansFile) {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v", err)
		}
	}
}

// pel merge carries over only regular files: a shard's spans.jsonl or metrics.jsonl that
// is a link (to /etc/passwd, say) is refused with an error naming it, and nothing is left.
func TestMergeRefusesLinks(t *testing.T) {
	_, tasks := writeRun(t, 20)
	for i := range tasks {
		tasks[i].AttachSteps(nil)
		tasks[i].Steps = 0
	}
	for _, name := range []string{SpansFile, MetricsFile, RequestsFile, ContractFile} {
		t.Run(name, func(t *testing.T) {
			dirs := shardRun(t, tasks, 2, t0, contract.Example())
			v, unchanged := victim(t)
			p := filepath.Join(dirs[1], name)
			if name == RequestsFile || name == ContractFile {
				b, _ := os.ReadFile(p)
				os.WriteFile(v, b, 0o644)
				unchanged = func() {}
			}
			os.Remove(p)
			if err := os.Symlink(v, p); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "m")
			_, err := Merge(out, dirs)
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), p) {
				t.Fatalf("err %v, want a refused link naming %s", err, p)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("%s left behind", out)
			}
			unchanged()
		})
	}
}
