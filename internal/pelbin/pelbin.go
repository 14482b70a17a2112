// Package pelbin serves the tests that run pel as a process (test/canary, test/shard,
// test/hostile, test/llamacpp, test/vllmsim): it builds the binary once per test binary,
// finds free loopback addresses and re-diagnoses recorded run directories.
package pelbin

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Main builds cmd/pel into a temporary directory, stores its path in *bin, runs the tests
// and exits with their code. The binary is built without -race whatever the test binary is:
// the tests measure pel's own figures (memory, timing) in processes that share the machine.
// When *bin is already set (a binary given by the caller, e.g. from an environment
// variable), nothing is built. name prefixes the temporary directory and error messages.
func Main(m *testing.M, name string, bin *string) {
	var tmp string
	if *bin == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "pel-"+name+"-"); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		*bin = filepath.Join(tmp, "pel")
		build := exec.Command("go", "build", "-o", *bin, "github.com/pel-ladder/pel/cmd/pel")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Printf("%s: building pel: %v\n", name, err)
			os.RemoveAll(tmp)
			os.Exit(1)
		}
	}
	code := m.Run()
	if tmp != "" {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Run runs bin with args until it exits or ctx ends and returns its exit code and its
// output (stdout and stderr interleaved); err is set only when it could not run at all.
func Run(ctx context.Context, bin string, args ...string) (code int, out string, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), buf.String(), nil
	}
	return 0, buf.String(), err
}

// StartSim runs `pel sim --addr <free loopback address>` with args until the test ends and
// returns its base URL once /v1/models answers (bounded: 10 s).
func StartSim(t testing.TB, bin string, args ...string) string {
	t.Helper()
	addr := FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"sim", "--addr", addr}, args...)...)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	url := "http://" + addr
	for range 200 {
		if resp, err := http.Get(url + "/v1/models"); err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pel sim %v did not answer on %s", args, addr)
	return ""
}

// Reanalyze copies the run directory src (a recorded run kept in testdata) into a
// temporary directory, runs `pel analyze` on the copy (bounded: 2 minutes) and returns the
// copy's path, where evidence.json now is, and pel's output.
func Reanalyze(t testing.TB, bin, src string) (dir, out string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, out, err := Run(ctx, bin, "analyze", dir)
	if err != nil {
		t.Fatalf("pel analyze %s: %v\n%s", src, err, out)
	}
	return dir, out
}
