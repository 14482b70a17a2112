// Command simbench measures how many concurrent streams and tokens per second `pel sim`
// sustains on this machine before its own step loop lags (pel_sim_step_lag_seconds): it runs
// closed-loop streaming clients in the same process against the healthy scenario (Llama-3-8B
// on H100 with the tiny model by default, max_num_seqs raised to admit every stream) at
// increasing concurrency. At 2,000 streams the virtual GPU itself takes ~14 ms a step even
// with the tiny model (decode attention costs a fixed 1.5 µs a sequence a layer), so at
// speed 1 it, not the simulator, caps delivery near 143k tokens/s; -speed 4 runs the
// virtual clock four times as fast and leaves the simulator's own cost in the figure.
//
//	go run ./bench/simbench -streams 250,500,1000,2000 -duration 5s
//	go run ./bench/simbench -streams 2000 -duration 4s -speed 4
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pel-ladder/pel/sim"
)

func main() {
	streams := flag.String("streams", "250,500,1000,2000", "concurrency levels")
	dur := flag.Duration("duration", 5*time.Second, "measured time per level (after 2 s of ramp-up)")
	tokens := flag.Int("tokens", 256, "max_tokens per request")
	scenario := flag.String("scenario", "healthy", "scenario")
	modelName := flag.String("model", "tiny", "model override: the tiny model keeps the virtual GPU's weights and KV traffic negligible (its per-sequence attention time remains: see -speed)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run")
	speed := flag.Float64("speed", 1, "virtual seconds per wall second (pel sim --speed): above 1 the virtual GPU's steps take less wall time, so the figure measures the simulator rather than the GPU it models")
	hostCosts := flag.Bool("host-costs", false, "keep the virtual engine's calibrated host costs (scheduler CPU per sequence, API-server CPU per streamed token), which cap a virtual vLLM near 13k tokens/s; off, the figures measure the simulator")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("%8s %12s %12s %14s %14s %10s %14s %10s %10s  %s\n", "streams", "tokens/s", "events/s", "lag p50 (ms)", "lag max (ms)", "errors",
		"tokens/CPU-s", "user s", "sys s", "load average")
	for _, f := range strings.Split(*streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := level(*scenario, *modelName, n, *tokens, *dur, *speed, *hostCosts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
	}
}

func level(name, modelName string, n, maxTokens int, dur time.Duration, speed float64, hostCosts bool) error {
	sc, err := sim.LoadScenario(name)
	if err != nil {
		return err
	}
	if modelName != "" {
		sc.Engine.Model, sc.Engine.ServedModelName = modelName, modelName
	}
	sc.Engine.MaxNumSeqs = n + 16
	sc.Engine.MaxNumBatchedTokens = 16384
	if !hostCosts {
		zero := 0.0
		sc.Engine.Scheduler.SeqUS, sc.Engine.Frontend.TokenUS = &zero, &zero
	}
	srv, err := sim.NewServer(sc, sim.Options{Speed: speed, Seed: 1})
	if err != nil {
		return err
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		return err
	}
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: n + 10, MaxConnsPerHost: 0,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	var counting atomic.Bool
	var events, toks, errs atomic.Int64
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true,"ignore_eos":true}`,
		sc.Engine.ServedModelName, strings.Repeat("word ", 64), maxTokens)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL()+"/v1/chat/completions", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				br := bufio.NewReaderSize(resp.Body, 4096)
				for {
					line, err := br.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte("data: {")) && counting.Load() {
						events.Add(1)
						toks.Add(int64(bytes.Count(line, []byte(`"content":" `)))) // one token per event here
					}
					if err != nil {
						break
					}
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(2 * time.Second) // ramp-up: every stream connected and past its first prefill
	counting.Store(true)
	start, cpu0 := time.Now(), cpuTime()
	var lags []float64
	for time.Since(start) < dur {
		time.Sleep(100 * time.Millisecond)
		lags = append(lags, lagGauge(client, srv.URL()))
	}
	counting.Store(false)
	el, cpu := time.Since(start).Seconds(), cpuTime().Sub(cpu0)
	cancel()
	wg.Wait()
	sort.Float64s(lags)
	fmt.Printf("%8d %12.0f %12.0f %14.2f %14.2f %10d %14.0f %10.2f %10.2f  %s\n", n, float64(toks.Load())/el, float64(events.Load())/el,
		lags[len(lags)/2]*1e3, lags[len(lags)-1]*1e3, errs.Load(), float64(toks.Load())/cpu.total(), cpu.user, cpu.sys, loadAverage())
	return nil
}

func lagGauge(c *http.Client, base string) float64 {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "pel_sim_step_lag_seconds{") {
			v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			return v
		}
	}
	return -1
}

// rusage is the process's CPU time (server and client both: they share the process).
type rusage struct{ user, sys float64 }

func (r rusage) total() float64 { return r.user + r.sys }

func (r rusage) Sub(o rusage) rusage { return rusage{r.user - o.user, r.sys - o.sys} }

func cpuTime() rusage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return rusage{float64(ru.Utime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9}
}

// loadAverage is the machine's 1, 5 and 15-minute load averages: with other work on the
// cores, tokens/s falls and tokens per CPU-second much less.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "-"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
