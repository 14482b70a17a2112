package profiling

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/contract"
)

// The engine controls POST the documented routes (with the key as a bearer token and,
// for SGLang, a JSON body), and a refusal is a refused error that quotes a bounded,
// key-free answer.
func TestHTTPControl(t *testing.T) {
	const key = "sk-secret-123"
	type call struct{ method, path, body, auth string }
	var calls []call
	status := http.StatusOK
	answer := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, call{r.Method, r.URL.Path, string(b), r.Header.Get("Authorization")})
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		control, trace, wantBody string
	}{
		{contract.ProfileVLLM, "", ""},
		{contract.ProfileSGLang, "", "{}"},
		{contract.ProfileSGLang, "/traces", `{"output_dir": "/traces"}`},
	} {
		calls = nil
		status, answer = http.StatusOK, ""
		ctl, err := NewControl(contract.Profile{Set: true, For: time.Second, Control: tc.control, Trace: tc.trace}, srv.URL, key, srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		if err := ctl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := ctl.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []call{{"POST", "/start_profile", tc.wantBody, "Bearer " + key}, {"POST", "/stop_profile", tc.wantBody, "Bearer " + key}}
		if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
			t.Errorf("%s: calls %+v, want %+v", tc.control, calls, want)
		}
	}

	status, answer = http.StatusNotFound, "no such route "+key+" "+strings.Repeat("x", 100_000)
	ctl, _ := NewControl(contract.Profile{Set: true, For: time.Second}, srv.URL, key, srv.Client())
	err := ctl.Start(context.Background())
	var no refused
	if !errors.As(err, &no) {
		t.Fatalf("HTTP 404 gave %v, want a refusal", err)
	}
	msg := err.Error()
	if strings.Contains(msg, key) || len(msg) > 2*maxShown || !strings.Contains(msg, "HTTP 404") || !strings.Contains(msg, "VLLM_TORCH_PROFILER_DIR") {
		t.Errorf("refusal message (%d bytes): %.400s", len(msg), msg)
	}
}

// A command control runs argv without a shell; a failing command is a refusal quoting
// its output's tail; a command past its deadline is not.
func TestCommandControl(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "started")
	ctl, err := NewControl(contract.Profile{Set: true, For: time.Second, Control: contract.ProfileCommand,
		Start: []string{sh, "-c", `touch "$0"`, mark}, Stop: []string{sh, "-c", "echo the profiler is gone >&2; exit 3"}}, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("start command did not run: %v", err)
	}
	err = ctl.Stop(context.Background())
	var no refused
	if !errors.As(err, &no) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "the profiler is gone") {
		t.Errorf("stop: %v", err)
	}
	slow, _ := NewControl(contract.Profile{Set: true, For: time.Second, Control: contract.ProfileCommand,
		Start: []string{sh, "-c", "sleep 5"}, Stop: []string{sh, "-c", "true"}}, "", "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = slow.Start(ctx)
	if err == nil || errors.As(err, &no) {
		t.Errorf("a start past its deadline gave %v, want an error that is not a refusal", err)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	b.Write([]byte("0123456789"))
	b.Write([]byte("ab"))
	if got := string(b.Bytes()); got != "456789ab" {
		t.Errorf("tail %q", got)
	}
}

// FindTrace takes a file modified during the window, or the newest trace file written
// during it in a directory (older ones, other names, links and directories left out).
func TestFindTrace(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.pt.trace.json")
	os.WriteFile(old, []byte("{}"), 0o600)
	since := time.Now()
	os.Chtimes(old, since.Add(-time.Hour), since.Add(-time.Hour))
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.Mkdir(filepath.Join(dir, "sub.json"), 0o700)
	ctx := context.Background()
	if f, note := FindTrace(ctx, dir, since, 300*time.Millisecond); f != "" || !strings.Contains(note, "no .json or .json.gz file") {
		t.Errorf("only an old trace: %q, %q", f, note)
	}
	if f, note := FindTrace(ctx, old, since, 300*time.Millisecond); f != "" || !strings.Contains(note, "not modified during the window") {
		t.Errorf("an old file: %q, %q", f, note)
	}
	a := filepath.Join(dir, "a.pt.trace.json.gz")
	b := filepath.Join(dir, "b.pt.trace.json")
	os.WriteFile(a, []byte("aaaa"), 0o600)
	os.WriteFile(b, []byte("bbbb"), 0o600)
	os.Chtimes(a, since.Add(time.Second), since.Add(time.Second))
	os.Symlink(a, filepath.Join(dir, "z.json"))
	os.Chtimes(b, since.Add(2*time.Second), since.Add(2*time.Second))
	if f, _ := FindTrace(ctx, dir, since, 5*time.Second); f != b {
		t.Errorf("newest trace %q, want %q", f, b)
	}
	if f, _ := FindTrace(ctx, a, since, 5*time.Second); f != a {
		t.Errorf("named file %q, want %q", f, a)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if f, note := FindTrace(cctx, filepath.Join(dir, "none"), since, time.Minute); f != "" || !strings.Contains(note, "interrupted") {
		t.Errorf("interrupted: %q, %q", f, note)
	}
	if f, note := FindTrace(cctx, dir, since, time.Minute); f != b || !strings.Contains(note, "when the run was interrupted") {
		t.Errorf("interrupted with a trace there: %q, %q", f, note)
	}
}

// What an engine or a command answers is quoted bounded, on one line, valid UTF-8, and
// never with the API key in it.
func FuzzShown(f *testing.F) {
	f.Add([]byte("HTTP 500: Failed to start profiler: sk-key\n\x00\xff"), "sk-key")
	f.Add([]byte(strings.Repeat("é", 400)), "")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		if len(key) < 4 || strings.ContainsAny(key, " \n") {
			key = ""
		}
		s := shown(b, key)
		if len(s) > maxShown+len("…") {
			t.Errorf("%d bytes shown", len(s))
		}
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r\x00") {
			t.Errorf("shown %q", s)
		}
		if key != "" && strings.Contains(s, key) {
			t.Errorf("the key is in %q", s)
		}
	})
}
