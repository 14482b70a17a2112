// Command loadgen-bench measures pel's load driver against a minimal local SSE server on
// loopback (run.sh drives it; see BENCHMARKS.md):
//
//	loadgen-bench server -addr 127.0.0.1:18080 [-hold 15s]   the SSE server (own process)
//	loadgen-bench tokens -addr 127.0.0.1:18090 -ttft 5ms -itl 1ms -tokens 8
//	                                                          a timed token server (loadgentest)
//	loadgen-bench rate -target URL -rate R -duration 5s       open loop at R req/s
//	loadgen-bench streams -target URL -n 10000                memory per open stream
//
// "rate" prints the achieved send rate, schedule lag p50/p99, errors, and CPU time per
// request of the client process (getrusage). "streams" opens n streams that the server
// holds open (-hold), measures the client's memory with all of them open, and prints the
// per-stream figure (heap + stacks after GC, and RSS growth).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/stats"
	"github.com/pel-ladder/pel/workload"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen-bench server|rate|streams [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = server(os.Args[2:])
	case "tokens":
		err = tokens(os.Args[2:])
	case "rate":
		err = rate(os.Args[2:])
	case "streams":
		err = streams(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen-bench:", err)
		os.Exit(1)
	}
}

// server answers every completion with a short stream: a role delta, 4 one-token content
// chunks, a usage chunk and [DONE], written at once (or the first chunk, then -hold, then
// the rest).
func server(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18080", "listen address (loopback)")
	hold := fs.Duration("hold", 0, "keep each stream open this long after its first chunk")
	fs.Parse(args)
	first := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":null}]}\n\n")
	var rest strings.Builder
	for i := 0; i < 3; i++ {
		rest.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":null}]}\n\n")
	}
	rest.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
	rest.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4,\"total_tokens\":12}}\n\n")
	rest.WriteString("data: [DONE]\n\n")
	restB := []byte(rest.String())
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"bench","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(first)
		if *hold > 0 {
			w.(http.Flusher).Flush()
			time.Sleep(*hold)
		}
		w.Write(restB)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(os.Stderr, "serving on", *addr)
	return srv.ListenAndServe()
}

// tokens serves pel's own test token server (loadgentest.Handler) with one timing for
// every request: the first token ttft after the headers, then one token every itl, each
// token its own SSE event, then usage and [DONE]. It keeps no per-request history, so a
// long benchmark does not grow it.
func tokens(args []string) error {
	fs := flag.NewFlagSet("tokens", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18090", "listen address (loopback)")
	ttft := fs.Duration("ttft", 5*time.Millisecond, "first token after the headers")
	itl := fs.Duration("itl", time.Millisecond, "between tokens")
	n := fs.Int("tokens", 8, "tokens per answer")
	pt := fs.Int("prompt-tokens", 8, "prompt tokens reported in usage")
	fs.Parse(args)
	if !strings.HasPrefix(*addr, "127.0.0.1:") {
		return fmt.Errorf("-addr %s: the bench server binds loopback only", *addr)
	}
	h := &loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior {
		return loadgentest.Behavior{FirstTokenDelay: *ttft, InterTokenDelay: *itl, Tokens: *n, PromptTokens: *pt}
	}, Forget: true}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(os.Stderr, "serving tokens on", *addr)
	return srv.ListenAndServe()
}

// constSchedule is an open-loop constant-rate schedule of n short chat requests.
type constSchedule struct {
	n, i  int
	every time.Duration
}

func (s *constSchedule) Next() (workload.Request, bool) {
	if s.i >= s.n {
		return workload.Request{}, false
	}
	r := workload.Request{Seq: s.i, At: time.Duration(s.i) * s.every, Task: "short", Phase: "warm",
		MaxTokens: 4, PromptTokens: 8, Messages: []workload.Message{{Role: "user", Content: "say four words " + strconv.Itoa(s.i)}}}
	s.i++
	return r, true
}
func (s *constSchedule) Closed() int { return 0 }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rate(args []string) error {
	fs := flag.NewFlagSet("rate", flag.ExitOnError)
	target := fs.String("target", "http://127.0.0.1:18080", "server")
	r := fs.Float64("rate", 1000, "requests per second")
	dur := fs.Duration("duration", 5*time.Second, "schedule length")
	write := fs.Bool("write", true, "append records to a requests.jsonl in a temp dir, as pel run does")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the measured run")
	spin := fs.Duration("spin", 0, "pacer: timer then busy-wait this margin (0: nanosleep on Linux)")
	timers := fs.Bool("timers", false, "pacer: Go runtime timers only")
	fs.Parse(args)
	clock := loadgen.RealClock{Spin: *spin, TimerOnly: *timers}
	n := int(*r * dur.Seconds())
	sched := &constSchedule{n: n, every: time.Duration(float64(time.Second) / *r)}
	client := loadgen.NewClient(loadgen.ClientConfig{BaseURL: *target, Model: "bench", Timeout: 30 * time.Second})
	var mu sync.Mutex
	lag := stats.NewDist()
	failed := 0
	var sink func(*record.Record) error
	if *write {
		dir, err := os.MkdirTemp("", "pel-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		w, err := record.Create(filepath.Join(dir, rundir.RequestsFile))
		if err != nil {
			return err
		}
		defer w.Close()
		sink = w.Write
	}
	drv := loadgen.NewDriver(loadgen.DriverConfig{Clock: clock, Doer: client, Sink: sink, OnRecord: func(rec *record.Record) {
		mu.Lock()
		if v, ok := rec.ScheduleLag(); ok {
			lag.Add(v)
		}
		if !rec.OK() {
			failed++
		}
		mu.Unlock()
	}})
	// Warm the connection pool briefly so the figure is steady state, not dial storms.
	warm := &constSchedule{n: int(*r / 10), every: sched.every}
	loadgen.NewDriver(loadgen.DriverConfig{Doer: client}).Run(context.Background(), warm)
	runtime.GC()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	c0 := cpuTime()
	res := drv.Run(context.Background(), sched)
	cpu := cpuTime() - c0
	wall := res.End.Sub(res.Start)
	load, _ := os.ReadFile("/proc/loadavg")
	mode := "nanosleep"
	if *timers {
		mode = "timers"
	} else if *spin != 0 {
		mode = "spin " + spin.String()
	}
	fmt.Printf("pacer %s, load average %s: ", mode, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("rate %.0f/s target: %d requests in %.2fs (%.0f/s completed), failed %d, schedule lag p50 %.3f ms p99 %.3f ms max %.3f ms, client CPU %.1f µs/request (%.2f cores)\n",
		*r, n, wall.Seconds(), float64(n)/wall.Seconds(), failed, lag.QuantileMs(50), lag.QuantileMs(99), lag.Quantiles().Max,
		float64(cpu.Microseconds())/float64(n), cpu.Seconds()/wall.Seconds())
	return nil
}

func rssKiB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func memSplit() (heap, stack uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

func streams(args []string) error {
	fs := flag.NewFlagSet("streams", flag.ExitOnError)
	target := fs.String("target", "http://127.0.0.1:18080", "server started with -hold")
	n := fs.Int("n", 10000, "concurrent streams")
	r := fs.Float64("rate", 2000, "open them at this rate")
	tokensFor := fs.Duration("tokens-for", 500*time.Millisecond, "measure after the streams have sent tokens this long (a tokens server with a long answer)")
	memprof := fs.String("memprofile", "", "write a heap profile when measuring")
	fs.Parse(args)
	if *memprof != "" {
		runtime.MemProfileRate = 4096 // every stream's few allocations show
	}
	client := loadgen.NewClient(loadgen.ClientConfig{BaseURL: *target, Model: "bench", Timeout: 5 * time.Minute})
	baseHeap, baseStack := memSplit()
	base, baseRSS := baseHeap+baseStack, rssKiB()
	drv := loadgen.NewDriver(loadgen.DriverConfig{Doer: client})
	sched := &constSchedule{n: *n, every: time.Duration(float64(time.Second) / *r)}
	done := make(chan loadgen.Result, 1)
	go func() { done <- drv.Run(context.Background(), sched) }()
	deadline := time.Now().Add(2 * time.Minute)
	for drv.Progress().InFlight < int64(*n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d streams open after 2 minutes (failed %d); raise ulimit -n?", drv.Progress().InFlight, *n, drv.Progress().Failed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(*tokensFor)
	open := drv.Progress().InFlight
	rssAll := rssKiB() // before memSplit's GC: what a reader of /proc sees
	heap, stack := memSplit()
	live, rss := heap+stack, rssKiB()
	if *memprof != "" {
		if f, err := os.Create(*memprof); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	fmt.Printf("%d streams open after %v of tokens: RSS %.1f MiB = %.1f KiB per stream (RSS ÷ streams)\n", open, *tokensFor, float64(rssAll)/1024, float64(rssAll)/float64(open))
	fmt.Printf("%d streams open: heap+stacks %.1f KiB/stream (heap %.1f, goroutine stacks %.1f; after GC), RSS growth %.1f KiB/stream, goroutines %d\n",
		open, float64(live-base)/1024/float64(open), float64(heap-baseHeap)/1024/float64(open), float64(stack-baseStack)/1024/float64(open),
		float64(rss-baseRSS)/float64(open), runtime.NumGoroutine())
	res := <-done
	fmt.Printf("all ended after %.1fs, failed %d\n", res.End.Sub(res.Start).Seconds(), drv.Progress().Failed)
	return nil
}
