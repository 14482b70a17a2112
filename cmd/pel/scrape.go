package main

import (
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/scrape"
)

// The scrape wiring of `pel run`: --metrics, --dcgm, --prometheus and --selector build one
// scrape.Collector that samples every endpoint during the load (or reads the run window
// from Prometheus afterwards) and fills stages 4, 2 and 5.
func init() {
	runCollectors = func(metrics, dcgm []string, prom, selector, engine string) ([]runner.Collector, error) {
		c, err := scrape.NewCollector(scrape.Config{Engine: metrics, DCGM: dcgm, Prometheus: prom, Selector: selector, EngineOverride: engine})
		if err != nil {
			return nil, err
		}
		return []runner.Collector{c}, nil
	}
}
