package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/loadgen"

	"github.com/pel-ladder/pel/otlp"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
	"github.com/spf13/pflag"
)

// collectorFlags are the evidence-source flags shared by `pel run` and `pel sweep`:
// --metrics, --dcgm, --prometheus, --selector, --engine, --metrics-interval and --otlp.
type collectorFlags struct {
	metrics, dcgm   []string
	otlpAddr        string
	prom, selector  string
	engine          string
	interval        time.Duration
	metricsPerPoint bool // help text says "each point" (sweep) rather than "the run"
	// noDiscover turns off the probe of TARGET/metrics (discover); found and notFound say
	// what the probe saw.
	noDiscover      bool
	found, notFound string
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
	f.StringVar(&cf.otlpAddr, "otlp", "", "receive the engine's OTLP/HTTP trace spans on this loopback host:port "+during+" (e.g. 127.0.0.1:4318; point vLLM's --otlp-traces-endpoint at http://ADDR/v1/traces with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf) and join them per request")
	f.BoolVar(&cf.noDiscover, "no-discover", false, "without --metrics, do not probe the target's own /metrics page for the engine's metrics (stage 4)")
	f.DurationVar(&cf.interval, "metrics-interval", time.Second, "sampling interval for --metrics/--dcgm (use ≤ 1/10 of a short run's duration)")
}

// any reports whether an evidence source beyond the client was asked for.
func (cf *collectorFlags) any() bool {
	return cf.scrapes() || cf.otlpAddr != ""
}

// scrapes reports whether a /metrics or Prometheus source was asked for.
func (cf *collectorFlags) scrapes() bool {
	return len(cf.metrics) > 0 || len(cf.dcgm) > 0 || cf.prom != "" || cf.selector != ""
}

// collectors builds one scrape.Collector that samples every endpoint during the load (or
// reads the run window from Prometheus afterwards) and fills stages 4, 2 and 5. Each run
// needs its own (a sweep calls this once per point). With --otlp an OTLP receiver runs
// alongside it and joins the engine's spans to the records.
func (cf *collectorFlags) collectors() ([]runner.Collector, error) {
	var cols []runner.Collector
	if cf.otlpAddr != "" {
		r, err := otlp.New(otlp.Config{Addr: cf.otlpAddr})
		if err != nil {
			return nil, usageError(err)
		}
		cols = append(cols, r)
	}
	if !cf.scrapes() {
		return cols, nil
	}
	if cf.interval <= 0 {
		return nil, usageErrorf("--metrics-interval must be positive, got %v", cf.interval)
	}
	c, err := scrape.NewCollector(scrape.Config{Engine: cf.metrics, DCGM: cf.dcgm, Prometheus: cf.prom,
		Selector: cf.selector, EngineOverride: cf.engine, Interval: cf.interval})
	if err != nil {
		return nil, usageError(err)
	}
	// The scrape collector goes first: runner stops collectors in order, and the receiver's
	// wait for late spans must not stretch the /metrics sampling window past the load.
	return append([]runner.Collector{c}, cols...), nil
}

// discover looks for stage 4 where the engines serve it, the API's own port: when no
// /metrics, DCGM or Prometheus source was given and discovery is on, it probes
// TARGET/metrics and samples it if an engine's metrics are there. It returns the line that
// says which stages the run gathers and which flag adds the rest.
func (cf *collectorFlags) discover(ctx context.Context, target string) string {
	if !cf.scrapes() && !cf.noDiscover && (strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://")) {
		u := loadgen.Endpoint(target, "/metrics")
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		eng, err := scrape.Discover(ctx, hc, u)
		if err == nil {
			cf.metrics = []string{u}
			cf.found = fmt.Sprintf("%s /metrics found at %s", eng, scrub.URL(u))
		} else {
			cf.notFound = fmt.Sprintf("%s: %v", scrub.URL(u), err)
		}
	}
	var got, miss []string
	got = append(got, "1 client records")
	switch {
	case cf.found != "":
		got = append(got, "4 "+cf.found)
	case len(cf.metrics) > 0 || cf.prom != "":
		got = append(got, "4 engine /metrics")
	case cf.notFound != "":
		miss = append(miss, "4 engine /metrics (--metrics URL; nothing usable at "+cf.notFound+")")
	default:
		miss = append(miss, "4 engine /metrics (--metrics URL)")
	}
	if len(cf.dcgm) > 0 || cf.prom != "" {
		got = append(got, "2 GPU counters")
	} else {
		miss = append(miss, "2 GPU counters (--dcgm URL)")
	}
	if cf.otlpAddr != "" {
		got = append(got, "engine spans (OTLP)")
	}
	s := "evidence stages gathered: " + strings.Join(got, "; ")
	if len(miss) > 0 {
		s += "; not gathered: " + strings.Join(miss, "; ")
	}
	return s
}
