package main

import (
	"time"

	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/spf13/pflag"
)

// collectorFlags are the evidence-source flags shared by `pel run` and `pel sweep`:
// --metrics, --dcgm, --prometheus, --selector, --engine and --metrics-interval.
type collectorFlags struct {
	metrics, dcgm   []string
	prom, selector  string
	engine          string
	interval        time.Duration
	metricsPerPoint bool // help text says "each point" (sweep) rather than "the run"
}

func (cf *collectorFlags) register(f *pflag.FlagSet) {
	during := "during the run"
	if cf.metricsPerPoint {
		during = "during each point"
	}
	f.StringArrayVar(&cf.metrics, "metrics", nil, "engine /metrics URL to sample "+during+" (repeatable)")
	f.StringArrayVar(&cf.dcgm, "dcgm", nil, "DCGM exporter /metrics URL to sample (repeatable)")
	f.StringVar(&cf.prom, "prometheus", "", "Prometheus base URL to query over the run window instead of scraping")
	f.StringVar(&cf.selector, "selector", "", "Prometheus label selector for --prometheus (e.g. '{job=\"vllm\"}')")
	f.StringVar(&cf.engine, "engine", "", "engine of the target (vllm, sglang, tgi, triton, trtllm-serve, llamacpp): recorded in evidence and used instead of detecting the /metrics dialect from metric names")
	// Short runs need a finer interval: with 1 s sampling a 2 s run holds only the samples
	// taken before and after the load, so gauges (KV usage, queue) read idle.
	f.DurationVar(&cf.interval, "metrics-interval", time.Second, "sampling interval for --metrics/--dcgm (use ≤ 1/10 of a short run's duration)")
}

// any reports whether an evidence source beyond the client was asked for.
func (cf *collectorFlags) any() bool {
	return len(cf.metrics) > 0 || len(cf.dcgm) > 0 || cf.prom != "" || cf.selector != ""
}

// collectors builds one scrape.Collector that samples every endpoint during the load (or
// reads the run window from Prometheus afterwards) and fills stages 4, 2 and 5. Each run
// needs its own (a sweep calls this once per point).
func (cf *collectorFlags) collectors() ([]runner.Collector, error) {
	if !cf.any() {
		return nil, nil
	}
	if cf.interval <= 0 {
		return nil, usageErrorf("--metrics-interval must be positive, got %v", cf.interval)
	}
	c, err := scrape.NewCollector(scrape.Config{Engine: cf.metrics, DCGM: cf.dcgm, Prometheus: cf.prom,
		Selector: cf.selector, EngineOverride: cf.engine, Interval: cf.interval})
	if err != nil {
		return nil, usageError(err)
	}
	return []runner.Collector{c}, nil
}
