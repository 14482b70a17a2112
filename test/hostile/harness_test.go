package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/record"
)

const (
	// rssBound is the peak resident memory any case may reach: the bound docs/reliability.md states.
	rssBound = 512 << 20
	// childMemLimitKiB is the virtual-memory limit (ulimit -v) every pel child runs under:
	// the hard backstop that turns "exhausts memory" into a crash the case reports. A Go
	// binary reserves ~1 GiB of address space before it allocates anything.
	childMemLimitKiB = 3 << 20
	// grace is pel run --grace in every case.
	grace = 2 * time.Second
)

var pelBin string

func TestMain(m *testing.M) {
	if runtime.GOOS != "linux" {
		fmt.Println("hostile: skipped (needs Linux: ulimit -v, getrusage of a child)")
		os.Exit(0)
	}
	// PEL_HOSTILE_BIN runs the suite against another build (e.g. one without a bound, to see its case fail).
	// Built without -race whatever the test binary is: the race runtime reserves far more
	// address space than childMemLimitKiB, and the RSS figures are pel's own.
	pelBin = os.Getenv("PEL_HOSTILE_BIN")
	pelbin.Main(m, "hostile", &pelBin)
}

// result is one finished pel child.
type result struct {
	code           int
	stdout, stderr string
	wall           time.Duration
	maxRSS         int64 // bytes
}

// outerBound is how long a pel run may take before the case calls it hung: four times
// duration + timeout + grace, plus a minute for a loaded machine. Generous on purpose.
func outerBound(duration, timeout time.Duration) time.Duration {
	return 4*(duration+timeout+grace) + time.Minute
}

// pel runs the pel binary with args under the memory limit and waits at most bound. The
// child is killed (and the case fails) past the bound. onStart, when set, runs once the
// child started (to send it a signal, say).
func pel(t *testing.T, bound time.Duration, onStart func(*os.Process), args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	script := fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, childMemLimitKiB)
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, pelBin}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-hostile-key-1234")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hwm := watchHWM(cmd.Process.Pid)
	if onStart != nil {
		onStart(cmd.Process)
	}
	err := cmd.Wait()
	r := result{stdout: out.String(), stderr: errb.String(), wall: time.Since(start), maxRSS: hwm()}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		t.Fatalf("pel %s did not end by itself within %v (killed); stderr: %s", strings.Join(args, " "), bound, tail(r.stderr))
	}
	if err != nil && r.code < 0 {
		t.Fatalf("pel %s: %v (signal?); stderr: %s", strings.Join(args, " "), err, tail(r.stderr))
	}
	t.Logf("pel %s: exit %d in %v, peak RSS %.1f MiB", args[0], r.code, r.wall.Round(time.Millisecond), float64(r.maxRSS)/(1<<20))
	if r.maxRSS > rssBound {
		t.Errorf("peak RSS %.1f MiB, over the bound of %d MiB", float64(r.maxRSS)/(1<<20), rssBound>>20)
	}
	if strings.Contains(r.stderr, "fatal error: out of memory") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("pel crashed: %s", tail(r.stderr))
	}
	return r
}

// watchHWM samples the peak resident memory (VmHWM) of process pid every 10 ms until the
// returned function is called, which returns the highest value seen, in bytes.
//
// Not the child's getrusage ru_maxrss: os/exec starts children with vfork (CLONE_VM), so at
// exec the kernel records the parent's mm as the child's high-water mark, and every child
// of this test process would report at least this process's own peak (the hostile pages and
// bodies it serves). VmHWM belongs to the mm the exec created: pel's alone (sh execs pel).
func watchHWM(pid int) func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						if kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil && kib<<10 > peak.Load() {
							peak.Store(kib << 10)
						}
					}
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// contractYAML is a small open-loop contract.
func contractYAML(rate float64, duration, timeout time.Duration, extra string) string {
	return fmt.Sprintf(`name: hostile
version: 1
model: m
arrival: {process: constant, rate: %g}
duration: %s
timeout: %s
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 8}
%s`, rate, duration, timeout, extra)
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run is `pel run` of contract c against target, with extra flags; it returns the result
// and the run directory.
func run(t *testing.T, target, c string, duration, timeout time.Duration, extra ...string) (result, string) {
	t.Helper()
	dir := t.TempDir()
	cf := writeFile(t, dir, "c.yaml", c)
	out := filepath.Join(dir, "run")
	args := append([]string{"run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String()}, extra...)
	return pel(t, outerBound(duration, timeout), nil, args...), out
}

// records reads the run's requests.jsonl; evidence.json must be there too.
func records(t *testing.T, dir string) []record.Record {
	t.Helper()
	recs, err := record.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no record written")
	}
	if _, err := evidence.ReadFile(filepath.Join(dir, "evidence.json")); err != nil {
		t.Fatalf("evidence.json: %v", err)
	}
	return recs
}

// every checks that every record satisfies ok, naming the first that does not.
func every(t *testing.T, recs []record.Record, what string, ok func(*record.Record) bool) {
	t.Helper()
	for i := range recs {
		if !ok(&recs[i]) {
			b, _ := json.Marshal(recs[i])
			t.Fatalf("record %d is not %s: %.600s", i, what, b[max(0, len(b)-600):])
		}
	}
}

// api is an OpenAI-compatible server whose completions are answered by complete; it
// lists model "m".
func api(t *testing.T, complete http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
	})
	mux.HandleFunc("/v1/chat/completions", complete)
	return serve(t, mux)
}

// serve runs h on a loopback port until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// sse writes a 200 event stream of the given data lines (each one event).
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "%s\n\n", e)
	}
}

const (
	content = `data: {"choices":[{"index":0,"delta":{"content":"hello "}}]}`
	finish  = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
	done    = `data: [DONE]`
)

func usage(prompt, completion string) string {
	return fmt.Sprintf(`data: {"choices":[],"usage":{"prompt_tokens":%s,"completion_tokens":%s}}`, prompt, completion)
}

// okStream answers like a healthy server: 8 tokens, usage, [DONE].
func okStream(w http.ResponseWriter, r *http.Request) {
	ev := []string{}
	for range 8 {
		ev = append(ev, content)
	}
	sse(w, append(ev, finish, usage("30", "8"), done)...)
}
