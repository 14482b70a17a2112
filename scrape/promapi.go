package scrape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/scrub"
)

// The Prometheus path reads the series pel would have scraped from a Prometheus server
// (HTTP API v1, https://prometheus.io/docs/prometheus/latest/querying/api/) and turns
// them into the same Samples, so one analysis serves both paths.
//
// query_range evaluates the raw selector at every step: each point is the newest raw
// sample at or before the step (within Prometheus' 5-minute lookback). Compared with
// scraping directly, every value may be up to one Prometheus scrape interval old, so
// window edges shift by at most that much: counter increases differ by what happened in
// ≤ 1 scrape interval at each edge, and gauge means by the change over that interval.

// promNameRegex matches exactly the families the adapters read (histograms with their
// _bucket/_sum/_count series), so a fleet's Prometheus returns only what the analysis uses.
func promNameRegex() string {
	seen := map[string]bool{}
	var names []string
	for _, a := range adapters {
		for _, t := range a.targets {
			for _, f := range t.fams {
				if !seen[f] {
					seen[f] = true
					names = append(names, f)
				}
			}
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = regexp.QuoteMeta(n)
	}
	return "(" + strings.Join(parts, "|") + ")(_bucket|_sum|_count)?"
}

// promSelector builds the series selector from the user's label matchers.
func promSelector(names, userSel string) string {
	sel := strings.TrimSpace(userSel)
	sel = strings.TrimPrefix(sel, "{")
	sel = strings.TrimSuffix(sel, "}")
	sel = strings.TrimSpace(sel)
	q := `{__name__=~"` + names + `"`
	if sel != "" {
		q += "," + sel
	}
	return q + "}"
}

type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
}

type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
	Value  [2]any            `json:"value"`
}

type promData struct {
	ResultType string       `json:"resultType"`
	Result     []promSeries `json:"result"`
}

// promRequestTimeout bounds one Prometheus API call, so a stuck server cannot hold Stop.
const promRequestTimeout = 30 * time.Second

func (c *Collector) promGet(ctx context.Context, path string, params url.Values) (*promData, error) {
	ctx, cancel := context.WithTimeout(ctx, promRequestTimeout)
	defer cancel()
	u := strings.TrimSuffix(c.cfg.Prometheus, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// Decoded as it streams, bounded after decompression (promdecode.go).
	body := &promBodyReader{r: resp.Body, left: MaxPromBody}
	pr, d, err := decodePromAnswer(body)
	switch {
	case errors.Is(err, errPromBody):
		return nil, fmt.Errorf("%s: %w", path, errPromBody)
	case err != nil && pr.Status == "":
		return nil, fmt.Errorf("%s: HTTP %d, not a Prometheus API answer: %.200s", path, resp.StatusCode, body.head)
	case pr.Status != "success" && pr.Status != "":
		return nil, fmt.Errorf("%s: %s: %s", path, pr.ErrorType, pr.Error)
	case err != nil:
		return nil, fmt.Errorf("%s: data: %w", path, err)
	case pr.Status != "success":
		return nil, fmt.Errorf("%s: HTTP %d, not a Prometheus API answer: %.200s", path, resp.StatusCode, body.head)
	}
	return &d, nil
}

func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// promCheck asks Prometheus to evaluate the selector once, so a wrong URL or a selector
// that does not parse fails Start, before any load.
func (c *Collector) promCheck(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(c.cfg.Timeout, 5*time.Second))
	defer cancel()
	q := "count(" + promSelector(promNameRegex(), c.cfg.Selector) + ")"
	if _, err := c.promGet(ctx, "/api/v1/query", url.Values{"query": {q}}); err != nil {
		return fmt.Errorf("prometheus %s: %s", scrub.URL(c.cfg.Prometheus), safeErr(err))
	}
	return nil
}

// promLatest is the newest sample time Prometheus holds for the selected targets
// ("up" included when the selector applies to it, so a dead target still advances).
func (c *Collector) promLatest(ctx context.Context) (time.Time, error) {
	// timestamp() drops __name__; copy it to a label first so series stay distinct.
	q := `max(timestamp(label_replace(` + promSelector("up|"+promNameRegex(), c.cfg.Selector) + `, "pel_name", "$1", "__name__", "(.+)")))`
	d, err := c.promGet(ctx, "/api/v1/query", url.Values{"query": {q}})
	if err != nil {
		return time.Time{}, err
	}
	if len(d.Result) == 0 {
		return time.Time{}, nil
	}
	v, err := parsePromValue(d.Result[0].Value[1])
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(math.Round(v * 1000))), nil
}

// promFetch waits (bounded by MaxPromWait) until Prometheus has scraped past end, then
// reads [start, end] with query_range at step Interval and converts it to Samples.
func (c *Collector) promFetch(ctx context.Context, start, end time.Time) ([]Sample, error) {
	deadline := time.Now().Add(c.cfg.MaxPromWait)
	poll := c.cfg.Interval / 4
	for {
		latest, err := c.promLatest(ctx)
		if err != nil {
			return nil, err
		}
		if !latest.Before(end) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
	queryEnd := time.Now()
	step := c.cfg.Interval
	if n := queryEnd.Sub(start) / step; n > 10000 {
		// Prometheus refuses more than 11,000 points per series.
		step = queryEnd.Sub(start) / 10000
	}
	params := url.Values{
		"query": {promSelector(promNameRegex(), c.cfg.Selector)},
		"start": {promTime(start)},
		"end":   {promTime(queryEnd)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	d, err := c.promGet(ctx, "/api/v1/query_range", params)
	if err != nil {
		return nil, err
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("query_range: result type %q, want matrix", d.ResultType)
	}
	return promToSamples(d.Result, start, queryEnd, step)
}

func parsePromValue(v any) (float64, error) {
	switch x := v.(type) {
	case string:
		return strconv.ParseFloat(x, 64)
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("value %v: not a number", v)
}

// seriesTarget names a series' target (its instance label, else its job), its family name
// and whether it came from a DCGM exporter or an engine.
func seriesTarget(s promSeries) (inst, name, kind string) {
	inst = s.Metric["instance"]
	if inst == "" {
		inst = s.Metric["job"]
	}
	if inst == "" {
		inst = "prometheus"
	}
	name = s.Metric["__name__"]
	kind = KindEngine
	if strings.HasPrefix(name, "DCGM_FI_") {
		kind = KindDCGM
	}
	return inst, name, kind
}

// promToSamples groups matrix series by target (instance label) and step time into
// Samples. A step with no series for a target becomes a failed sample (a gap: the target
// was down, or Prometheus had not scraped it).
func promToSamples(res []promSeries, start, end time.Time, step time.Duration) ([]Sample, error) {
	type point struct {
		name   string
		labels map[string]string
		v      float64
	}
	type target struct {
		id, kind string
		byT      map[int64][]point
	}
	targets := map[string]*target{}
	var order []string
	kinds := map[string]map[string]bool{}
	for _, s := range res {
		inst, _, kind := seriesTarget(s)
		if kinds[inst] == nil {
			kinds[inst] = map[string]bool{}
		}
		kinds[inst][kind] = true
	}
	for _, s := range res {
		inst, name, kind := seriesTarget(s)
		id := "prom:" + inst
		if kind == KindDCGM && len(kinds[inst]) > 1 {
			id += "#dcgm"
		}
		tg, ok := targets[id]
		if !ok {
			tg = &target{id: id, kind: kind, byT: map[int64][]point{}}
			targets[id] = tg
			order = append(order, id)
		}
		labels := without(s.Metric, "__name__", "instance", "job")
		for _, tv := range s.Values {
			ts, err := parsePromValue(tv[0])
			if err != nil {
				return nil, fmt.Errorf("query_range: %s: timestamp: %w", name, err)
			}
			v, err := parsePromValue(tv[1])
			if err != nil {
				return nil, fmt.Errorf("query_range: %s: %w", name, err)
			}
			ms := int64(math.Round(ts * 1000))
			tg.byT[ms] = append(tg.byT[ms], point{name, labels, v})
		}
	}
	sort.Strings(order)
	var steps []int64
	for t := start; !t.After(end); t = t.Add(step) {
		steps = append(steps, t.UnixMilli())
	}
	var out []Sample
	for _, id := range order {
		tg := targets[id]
		returned := make([]int64, 0, len(tg.byT))
		for t := range tg.byT {
			returned = append(returned, t)
		}
		times := stepTimes(steps, returned, step)
		for _, ms := range times {
			pts := tg.byT[ms]
			s := Sample{T: time.UnixMilli(ms).UTC(), Endpoint: tg.id, Kind: tg.kind, Origin: OriginPrometheus}
			if len(pts) == 0 {
				s.Err = "no data in Prometheus at this step (target down or not scraped yet)"
				out = append(out, s)
				continue
			}
			fams := map[string]*Family{}
			var names []string
			for _, p := range pts {
				f, ok := fams[p.name]
				if !ok {
					typ := "untyped"
					if strings.HasSuffix(p.name, "_total") {
						typ = "counter"
					}
					f = &Family{Name: p.name, Type: typ}
					fams[p.name] = f
					names = append(names, p.name)
				}
				lb := p.labels
				if len(lb) == 0 {
					lb = nil
				}
				f.Metrics = append(f.Metrics, Metric{Labels: lb, V: numPtr(p.v)})
			}
			list := make([]Family, 0, len(names))
			for _, n := range names {
				list = append(list, *fams[n])
			}
			list = regroupHistograms(list)
			sortFamilies(list)
			s.OK, s.Families = true, list
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out, nil
}

// stepTimes is every timestamp Prometheus returned for a target plus the requested
// steps it returned nothing for (those become gaps). Prometheus evaluates at
// start + k×step, so both sets normally coincide; a requested step within a tenth of a
// step of a returned one is the same step.
func stepTimes(steps, returned []int64, step time.Duration) []int64 {
	sort.Slice(returned, func(i, j int) bool { return returned[i] < returned[j] })
	tol := max(step.Milliseconds()/10, 2)
	out := append([]int64(nil), returned...)
	for _, s := range steps {
		i := sort.Search(len(returned), func(k int) bool { return returned[k] >= s })
		near := (i < len(returned) && returned[i]-s <= tol) || (i > 0 && s-returned[i-1] <= tol)
		if !near {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
