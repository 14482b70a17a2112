package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/rundir"
)

// Config says what a Collector samples.
type Config struct {
	Engine         []string      // engine /metrics URLs (--metrics)
	DCGM           []string      // dcgm-exporter /metrics URLs (--dcgm)
	Prometheus     string        // Prometheus server base URL (--prometheus)
	Selector       string        // label matchers for the Prometheus path, e.g. job="vllm" (--selector)
	Interval       time.Duration // sampling interval and query_range step; default 1 s
	EngineOverride string        // engine adapter to use instead of auto-detection (--engine)

	// Timeout bounds one request; default 80 % of Interval, and never ≥ Interval, so a
	// slow endpoint costs that endpoint a sample, never a stall.
	Timeout time.Duration
	// Client is the HTTP client (default: a private one without keep-alive limits).
	Client *http.Client
	// MaxPromWait bounds how long Stop waits for Prometheus to scrape past the end of the
	// load (default max(3×Interval, 5 s)).
	MaxPromWait time.Duration
	// File is the samples file's name in the run directory (default rundir.MetricsFile); an
	// interleaved canary run samples its candidate into a file of its own.
	File string
}

// Collector samples engine and DCGM endpoints during a run and writes DIR/metrics.jsonl.
// It satisfies the runner's sampler seam: Start, Stop, Fill.
type Collector struct {
	cfg    Config
	client *http.Client
	eps    []endpointCfg

	mu      sync.Mutex // guards w and the state below
	w       *Writer
	dir     *rundir.Dir
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	state   int // 0 new, 1 started, 2 stopped
	startAt time.Time
	werr    error
}

type endpointCfg struct {
	url   string // fetched
	shown string // stored and printed: url without credentials (scrub.URL)
	kind  string
}

// NewCollector checks cfg and returns a Collector. Bad URLs, an unknown engine, a
// selector without Prometheus, or nothing to sample are errors.
func NewCollector(cfg Config) (*Collector, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 || cfg.Timeout >= cfg.Interval {
		cfg.Timeout = cfg.Interval * 8 / 10
	}
	if cfg.MaxPromWait <= 0 {
		cfg.MaxPromWait = max(3*cfg.Interval, 5*time.Second)
	}
	if cfg.EngineOverride != "" {
		if _, err := AdapterFor(cfg.EngineOverride); err != nil {
			return nil, fmt.Errorf("--engine: %w", err)
		}
	}
	if cfg.File == "" {
		cfg.File = rundir.MetricsFile
	}
	c := &Collector{cfg: cfg, client: cfg.Client}
	if c.client == nil {
		c.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 4}}
	}
	for _, x := range []struct {
		flag, kind string
		urls       []string
	}{{"--metrics", KindEngine, cfg.Engine}, {"--dcgm", KindDCGM, cfg.DCGM}} {
		for _, u := range x.urls {
			if err := checkURL(u); err != nil {
				return nil, fmt.Errorf("%s %q: %w", x.flag, scrub.URL(u), err)
			}
			c.eps = append(c.eps, endpointCfg{u, scrub.URL(u), x.kind})
		}
	}
	if cfg.Prometheus != "" {
		if err := checkURL(cfg.Prometheus); err != nil {
			return nil, fmt.Errorf("--prometheus %q: %w", scrub.URL(cfg.Prometheus), err)
		}
	} else if cfg.Selector != "" {
		return nil, errors.New("--selector needs --prometheus")
	}
	if len(c.eps) == 0 && cfg.Prometheus == "" {
		return nil, errors.New("nothing to sample: give --metrics, --dcgm or --prometheus")
	}
	return c, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("scheme must be http or https")
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// Start creates DIR/metrics.jsonl, takes the first sample of every endpoint (before the
// load starts; each bounded by the timeout), then samples each endpoint on its own
// goroutine every Interval until Stop. With --prometheus it checks the server answers.
// An endpoint that is down is not an error: its failed samples are recorded as gaps.
func (c *Collector) Start(ctx context.Context, dir *rundir.Dir) error {
	c.mu.Lock()
	if c.state != 0 {
		c.mu.Unlock()
		return errors.New("scrape: Start called twice")
	}
	f, err := dir.Append(c.cfg.File)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.w, c.dir, c.state, c.startAt = newWriter(f), dir, 1, time.Now()
	c.mu.Unlock()
	if c.cfg.Prometheus != "" {
		if err := c.promCheck(ctx); err != nil {
			c.mu.Lock()
			c.state = 2
			c.w.Close()
			c.mu.Unlock()
			return err
		}
	}
	c.sampleAll(ctx)
	lctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	for _, ep := range c.eps {
		c.wg.Add(1)
		go c.loop(lctx, ep)
	}
	return nil
}

func (c *Collector) loop(ctx context.Context, ep endpointCfg) {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.write(c.sample(ctx, ep))
		}
	}
}

// sampleAll takes one sample of every endpoint concurrently and waits for them.
func (c *Collector) sampleAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ep := range c.eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.write(c.sample(ctx, ep))
		}()
	}
	wg.Wait()
}

func (c *Collector) write(s *Sample) {
	if s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil || c.state == 2 {
		return // closed: a late write is dropped, never a write to a closed file
	}
	if err := c.w.Write(s); err != nil && c.werr == nil {
		c.werr = err
	}
}

// sample fetches and parses one page. Every outcome is a Sample with its error kept,
// except a request cut short because sampling is stopping (nil: Stop takes the last
// sample itself, and that cut is no gap of the endpoint).
func (c *Collector) sample(parent context.Context, ep endpointCfg) *Sample {
	start := time.Now()
	s := &Sample{T: start, Endpoint: ep.shown, Kind: ep.kind, Origin: OriginScrape}
	if ep.kind == KindEngine {
		s.Engine = c.cfg.EngineOverride
	}
	ctx, cancel := context.WithTimeout(parent, c.cfg.Timeout)
	defer cancel()
	fams, err := c.fetch(ctx, ep.url)
	s.DurMs = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		if parent.Err() != nil {
			return nil
		}
		// Only an error the deadline caused is a timeout: a page refused for its size just
		// before the deadline keeps the bound's name.
		var pe *PageError
		if ctx.Err() == context.DeadlineExceeded && !errors.As(err, &pe) {
			err = fmt.Errorf("timeout after %v", c.cfg.Timeout)
		}
		s.Err = safeErr(err)
		return s
	}
	s.OK, s.Families = true, fams
	return s
}

func (c *Collector) fetch(ctx context.Context, u string) ([]Family, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Prefer the classic text format (fast parser); accept OpenMetrics.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	// ParsePage bounds the body (MaxPageBytes) and the samples (MaxPageSamples).
	fams, err := ParsePage(resp.Body, resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	return fams, nil
}

// safeErr is an error's text fit for metrics.jsonl and a terminal: without the URL net/http
// puts in front (it may carry a token; the sample names its endpoint anyway) and without
// control characters (a parse error quotes the page).
func safeErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 1024 {
		msg = msg[:1024] + "..."
	}
	return scrub.Text(msg)
}

// Stop ends the periodic sampling, takes the last sample of every endpoint (after the
// load), reads the run window from Prometheus when configured, and closes the file.
func (c *Collector) Stop(ctx context.Context) error {
	c.mu.Lock()
	if c.state != 1 {
		c.mu.Unlock()
		return nil
	}
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	c.sampleAll(ctx)
	var perr error
	if c.cfg.Prometheus != "" {
		samples, err := c.promFetch(ctx, c.startAt.Add(-c.cfg.Interval), time.Now())
		if err != nil {
			perr = fmt.Errorf("prometheus: %s", safeErr(err))
		}
		for i := range samples {
			if samples[i].Kind == KindEngine {
				samples[i].Engine = c.cfg.EngineOverride
			}
			c.write(&samples[i])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = 2
	cerr := c.w.Close()
	return errors.Join(perr, c.werr, cerr)
}

// Fill reads DIR/metrics.jsonl and fills stages 4, 2 and 5 of ev (see FillSamples).
func (c *Collector) Fill(ev *evidence.Evidence, dir *rundir.Dir) error {
	if dir == nil {
		dir = c.dir
	}
	return FillFromDir(ev, dir, c.cfg.File, c.cfg.EngineOverride)
}
