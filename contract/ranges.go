package contract

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/pel-ladder/pel/record"
)

// Ranges a contract is held to. A value outside them is an error with file:line at
// `pel contract check`, never a run that sends ~93k requests or runs out of memory.
const (
	// MaxRate bounds an open-loop rate (rate, ramp from/to), in requests/s: about three
	// times the highest rate one pel process sends on schedule (BENCHMARKS.md, 7,000/s with
	// lag p99 under 1 ms). Faster than that, pel measures itself; run several.
	MaxRate = 20_000
	// MaxConcurrency bounds a closed loop's concurrency and max_in_flight: 100,000 open
	// streams are ~1.6 GiB of client memory (16 KiB each, BENCHMARKS.md).
	MaxConcurrency = 100_000
	// MaxPlannedRequests bounds the requests a contract plans (requests, or rate × duration,
	// or a ramp's integral): ten hours at 1,000/s, ~35 GB of requests.jsonl at ~1 KB a task.
	// The analysis streams the records in bounded memory (package rundir), so disk, not
	// memory, sets it.
	MaxPlannedRequests = 36_000_000
	// MaxTokens bounds every length (prompt and output tokens, shared prefixes, token
	// checks): record.MaxTokens, beyond any served context. A longer draw is an error, never
	// capped silently at plan time.
	MaxTokens = record.MaxTokens
)

// versionRE is a version number: 1, 2.1, 1.0.3. It is recorded with every result, so
// "x" is a typo, not a version.
var versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)

// PlannedRequests is how many requests the contract's schedule plans at most, and whether
// that is known before running (a closed loop bounded only by duration, or a replay
// trace, is not).
func (c *Contract) PlannedRequests() (n float64, known bool) {
	a := &c.Arrival
	secs := c.Duration.Seconds()
	switch a.Process {
	case Poisson, Constant, Gamma:
		if secs > 0 {
			n, known = a.Rate*secs, true
		}
	case Ramp:
		if secs > 0 {
			over := a.Over.Seconds()
			ramp := math.Min(secs, over)
			// Rate at the end of the part of the ramp that runs, then the hold at To.
			end := a.From + (a.To-a.From)*ramp/math.Max(over, 1e-9)
			n = (a.From+end)/2*ramp + a.To*math.Max(secs-over, 0)
			known = true
		}
	}
	if c.Requests > 0 && (!known || float64(c.Requests) < n) {
		n, known = float64(c.Requests), true
	}
	return n, known
}

// checkRate reports a rate beyond MaxRate.
func (m *mapping) checkRate(key string, v float64) {
	if v > MaxRate {
		m.errf(key, "%g requests/s is over pel's bound of %d/s per process (it would measure its own lag); run several pel processes", v, MaxRate)
	}
}

// checkLength reports a token length that is not a whole number or beyond MaxTokens.
func (d *decoder) checkLength(n *yaml.Node, path string, v float64) {
	switch {
	case v != math.Trunc(v):
		d.errf(n, path, "a length in tokens is a whole number, got %v", v)
	case v > MaxTokens:
		d.errf(n, path, "%g tokens is over pel's bound of %d (beyond any served context)", v, MaxTokens)
	}
}

// checkLengthKey is checkLength for the value of key in m.
func (m *mapping) checkLengthKey(key string, v float64) {
	if m != nil && m.has(key) {
		m.d.checkLength(m.line(key), join(m.path, key), v)
	}
}

// checkPlanned reports a schedule that plans more than MaxPlannedRequests.
func (m *mapping) checkPlanned(c *Contract) {
	n, known := c.PlannedRequests()
	if !known || n <= MaxPlannedRequests {
		return
	}
	key := "duration"
	if !m.has(key) {
		key = "requests"
	}
	m.errf(key, "the schedule plans %s requests, over pel's bound of %d per run: shorten the run, lower the rate, or set requests", humanCount(n), MaxPlannedRequests)
}

func humanCount(n float64) string {
	if math.IsInf(n, 1) {
		return "more than 1e308"
	}
	if n >= 1e15 {
		return fmt.Sprintf("%.3g", n)
	}
	return fmt.Sprintf("%.0f", n)
}

// OpenFile opens a file a run reads (a contract, the dataset or replay trace it names),
// refusing anything but a regular file: a FIFO or a device would block the open or never
// end. The open itself does not block (O_NONBLOCK), so even a path swapped for a FIFO after
// a check cannot hang pel.
func OpenFile(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a regular file (%s): give a file", path, kindOf(st.Mode()))
	}
	return f, st, nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0 || m&os.ModeCharDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
