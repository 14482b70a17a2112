package main

import (
	"os"
	"runtime/debug"

	"github.com/pel-ladder/pel/contract"
)

// runMemory is the soft memory limit of `pel run` (unless GOMEMLIMIT sets one). What
// responses hold is bounded by loadgen.MaxHeldBytes, but Go's collector lets the heap grow
// to twice what is live before it runs, so a run holding its budget would reach twice that.
// The limit makes the collector run earlier instead; the per-stream state of a large
// closed loop (~36 KiB a stream, contract.MaxConcurrency) is added so that such a run does
// not spend its time collecting.
const runMemory = 400 << 20

// streamMemory is one open stream's client state, with room: RSS ÷ streams at 5,000 streams
// after 15 s of tokens measures 28.6–35.9 KiB (BENCHMARKS.md, bench/vs-vegeta.sh).
const streamMemory = 36 << 10

// boundRunMemory sets the run's soft memory limit for the contract c.
func boundRunMemory(c *contract.Contract) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	streams := int64(max(c.Arrival.Concurrency, c.MaxInFlight))
	if streams == 0 {
		// Open loop without a cap: the rate times the timeout is the most in flight.
		rate := max(c.Arrival.Rate, c.Arrival.From, c.Arrival.To)
		streams = int64(min(rate*c.Timeout.Seconds(), contract.MaxConcurrency))
	}
	debug.SetMemoryLimit(runMemory + streams*streamMemory)
}

// traceGCPercent is pel trace's GOGC (unless GOGC sets one): a trace's operations are
// pointer-free slices the collector does not scan, so collecting at half the default
// growth costs little CPU and keeps the peak near what the analysis holds.
const traceGCPercent = 50

func boundTraceMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(traceGCPercent)
	}
}
