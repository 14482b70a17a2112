package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/internal/scrub"
)

// QueryRange reads, from the Prometheus server at promURL, the series pel's adapters use
// that match selector (label matchers such as job="vllm-canary") over [start, end] at
// step, and returns them as Samples (origin prometheus, one endpoint per instance): the
// same read pel run --prometheus makes after its load, without a load. pel canary reads
// two selectors this way, one per side of a production canary.
func QueryRange(ctx context.Context, client *http.Client, promURL, selector string, start, end time.Time, step time.Duration) ([]Sample, error) {
	if err := checkURL(promURL); err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", scrub.URL(promURL), err)
	}
	if step <= 0 || !end.After(start) {
		return nil, errors.New("query_range: want step > 0 and end after start")
	}
	if end.Sub(start)/step > 10000 {
		// Prometheus refuses more than 11,000 points per series.
		return nil, fmt.Errorf("query_range: %v at step %v is over 10,000 points; use a longer step", end.Sub(start), step)
	}
	if client == nil {
		client = http.DefaultClient
	}
	c := &Collector{cfg: Config{Prometheus: promURL, Selector: selector}, client: client}
	params := url.Values{
		"query": {promSelector(promNameRegex(), selector)},
		"start": {promTime(start)},
		"end":   {promTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	d, err := c.promGet(ctx, "/api/v1/query_range", params)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %s", scrub.URL(promURL), safeErr(err))
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("query_range: result type %q, want matrix", d.ResultType)
	}
	return promToSamples(d.Result, start, end, step)
}
