package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/loadgen"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// progress shows a live line on a terminal (redrawn with a carriage return a few times a
// second) or a plain line every 5 s otherwise (logs, CI), plus a final line.
type progress struct {
	w       io.Writer
	tty     bool
	total   time.Duration // expected length (duration + warm-up is inside it), 0 unknown
	count   int           // expected tasks, 0 unknown
	planned contract.Planned
	drv     *loadgen.Driver
	began   time.Time
	mu      sync.Mutex
	ttft    *stats.Dist
	// With a warm-up the figures are the warm phase's, named so, as the summary's are:
	// warmDone and warmAcc count warm tasks; ttft holds warm tasks only.
	warmup            bool
	warmDone, warmAcc int
	stopCh            chan struct{}
	done              chan struct{}
}

func newProgress(w io.Writer, tty bool, c *contract.Contract) *progress {
	return &progress{w: w, tty: tty, total: c.Duration, count: c.Requests, planned: c.Planned(), ttft: stats.NewDist(), warmup: c.Warmup > 0}
}

func (p *progress) record(r *record.Record) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.warmup && r.Phase != record.PhaseWarm {
		return
	}
	p.warmDone++
	if r.Accepted {
		p.warmAcc++
	}
	if !r.OK() {
		return
	}
	if v, ok := r.TTFT(); ok {
		p.ttft.Add(v)
	}
}

func (p *progress) start(d *loadgen.Driver) {
	if p.w == nil {
		return
	}
	p.drv, p.began = d, time.Now()
	p.stopCh, p.done = make(chan struct{}), make(chan struct{})
	every := 5 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stopCh:
				return
			case <-t.C:
				p.print(false)
			}
		}
	}()
}

func (p *progress) stop() {
	if p.w == nil {
		return
	}
	close(p.stopCh)
	<-p.done
	p.print(true)
}

func (p *progress) print(final bool) {
	g := p.drv.Progress()
	el := time.Since(p.began)
	p.mu.Lock()
	ttft := "-"
	if p.ttft.N() > 0 {
		ttft = fmt.Sprintf("%.0f ms", p.ttft.QuantileMs(50))
	}
	acc := "-"
	if p.warmDone > 0 {
		acc = fmt.Sprintf("%.1f%%", 100*float64(p.warmAcc)/float64(p.warmDone))
	}
	p.mu.Unlock()
	phase := ""
	if p.warmup {
		phase = "warm " // the cold phase is reported apart, here as in the summary
	}
	line := fmt.Sprintf("%6.1fs  sent %d  done %d%s  in-flight %d  errors %d  %saccepted %s  %sp50 TTFT %s",
		el.Seconds(), g.Sent, g.Done, p.plannedText(), g.InFlight, g.Failed, phase, acc, phase, ttft)
	if !final {
		line += p.eta(el, g)
	}
	if g.Queued > 0 {
		line += fmt.Sprintf("  queued %d", g.Queued)
	}
	frac := -1.0
	switch {
	case p.count > 0:
		frac = float64(g.Done) / float64(p.count)
	case p.total > 0:
		frac = el.Seconds() / p.total.Seconds()
	}
	if p.tty {
		if frac >= 0 {
			n := int(min(frac, 1) * 20)
			line = "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "] " + line
		}
		// \r redraws; \x1b[K clears what a longer previous line left behind.
		fmt.Fprint(p.w, "\r"+line+"\x1b[K")
		if final {
			fmt.Fprintln(p.w)
		}
		return
	}
	if final {
		line = "done: " + line
	}
	fmt.Fprintln(p.w, line)
}

// plannedText is " of N planned" ("~N" for an expectation), empty when the schedule does not
// fix its count.
func (p *progress) plannedText() string {
	if !p.planned.Known || p.planned.Tasks <= 0 {
		return ""
	}
	if p.planned.Exact {
		return fmt.Sprintf(" of %.0f planned", p.planned.Tasks)
	}
	return fmt.Sprintf(" of ~%.0f planned", p.planned.Tasks)
}

// eta is how long the run has left: the schedule's remaining time while arrivals are due
// (tasks then drain, bounded by the contract's timeout), or, for a schedule bounded by its
// count alone, the time the tasks done so far took per task.
func (p *progress) eta(el time.Duration, g loadgen.Progress) string {
	switch {
	case p.total > 0 && el < p.total && (p.count == 0 || g.Sent < int64(p.count)):
		return fmt.Sprintf("  ETA %s", (p.total - el).Round(time.Second))
	case p.planned.Known && g.Sent < int64(p.planned.Tasks) && g.Done > 0:
		left := time.Duration(float64(el) * (p.planned.Tasks - float64(g.Done)) / float64(g.Done))
		return fmt.Sprintf("  ETA ~%s", left.Round(time.Second))
	case g.InFlight > 0:
		return fmt.Sprintf("  draining %d", g.InFlight)
	}
	return ""
}
