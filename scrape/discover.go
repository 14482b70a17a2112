package scrape

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// DiscoverTimeout bounds the probe of a target's own /metrics page: a server that answers
// its API at once answers this in milliseconds, and a run does not wait on one that does not.
const DiscoverTimeout = 3 * time.Second

// Discover fetches the /metrics page at url (vLLM, SGLang, TGI and llama.cpp serve it on the
// API's own port) and names the serving engine whose metric families it holds. An error says
// why the page is not usable as stage 4: not served, not Prometheus text, or no engine's
// metrics on it (a DCGM exporter's page is not an engine's).
func Discover(ctx context.Context, hc *http.Client, url string) (engine string, err error) {
	ctx, cancel := context.WithTimeout(ctx, DiscoverTimeout)
	defer cancel()
	c := &Collector{client: hc}
	fams, err := c.fetch(ctx, url)
	if err != nil {
		return "", fmt.Errorf("%s", safeErr(err))
	}
	names := make(map[string]bool, len(fams))
	for _, f := range fams {
		names[f.Name] = true
	}
	a := Detect(names)
	if a == nil || a.Kind != "engine" {
		return "", fmt.Errorf("no serving engine's metrics on the page (%d families)", len(fams))
	}
	return a.Engine, nil
}
