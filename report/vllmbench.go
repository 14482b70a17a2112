package report

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// VLLMBenchPercentiles are the percentiles vllm bench serve writes by default
// (--metric-percentiles 99); a run's own --percentiles are added.
var VLLMBenchPercentiles = []float64{99}

// VLLMBench writes a run as vllm bench serve --save-result --save-detailed JSON, so what
// reads those files (dashboards, scripts) reads pel's runs: the run's figures under vllm's
// keys and, per request in file order, input_lens, output_lens, ttfts, itls, e2els,
// start_times and errors. Each streams the run's task records (rundir.Dir.Each); it is called twice, so
// the per-token itls are written as they are read instead of held.
//
// The figures follow vllm's definitions: TTFT, E2E and ITL count from the send (vllm has no
// schedule), ITL is the gap between streamed chunks, TPOT (E2E − TTFT)/(output tokens − 1)
// per request; means and percentiles are over completed requests only, as vllm's are. The
// percentiles come from package stats (nearest rank) rather than numpy's interpolation:
// the two may differ by the spread between adjacent order statistics. A record whose events
// an importing tool summarized (first and last token only) has no chunk gaps to give: its
// itls list is empty and it adds nothing to the ITL figures (its TPOT still counts).
func VLLMBench(w io.Writer, ev *evidence.Evidence, c *contract.Contract, each func(func(*record.Record) error) error, percentiles []float64) error {
	type perReq struct {
		in, out int
		ttft    float64 // s, 0 for a failed request
		e2e     float64 // s
		err     string
		sent    time.Time
	}
	var reqs []perReq
	dists := map[string]*stats.Dist{"ttft": stats.NewDist(), "tpot": stats.NewDist(), "itl": stats.NewDist(), "e2el": stats.NewDist()}
	moments := map[string]*moment{"ttft": {}, "tpot": {}, "itl": {}, "e2el": {}}
	add := func(k string, d time.Duration) {
		dists[k].Add(d)
		moments[k].add(float64(d) / 1e6)
	}
	var first, last time.Time
	completed, inTok, outTok := 0, 0, 0
	err := each(func(r *record.Record) error {
		if r.Step != nil {
			return nil
		}
		q := perReq{in: r.PromptTokens, sent: r.SentAt}
		if !r.SentAt.IsZero() && (first.IsZero() || r.SentAt.Before(first)) {
			first = r.SentAt
		}
		if r.DoneAt.After(last) {
			last = r.DoneAt
		}
		ttft, ok := r.TTFTFromSent()
		if !r.OK() || !ok {
			q.err = r.Error
			if q.err == "" {
				q.err = r.Status
			}
			reqs = append(reqs, q)
			return nil
		}
		completed++
		q.out = r.OutputTokens
		inTok += r.PromptTokens
		outTok += r.OutputTokens
		e2e := r.DoneAt.Sub(r.SentAt)
		q.ttft, q.e2e = ttft.Seconds(), e2e.Seconds()
		add("ttft", ttft)
		add("e2el", e2e)
		if r.OutputTokens > 1 {
			add("tpot", (e2e-ttft)/time.Duration(r.OutputTokens-1))
		}
		if !r.HasFlag(record.FlagEventsSummarized) {
			r.ChunkGaps(func(g time.Duration) { add("itl", g) })
		}
		reqs = append(reqs, q)
		return nil
	})
	if err != nil {
		return err
	}
	dur := last.Sub(first).Seconds()
	if ev.Run.DurationS > 0 {
		dur = ev.Run.DurationS
	}
	per := func(n float64) float64 {
		if dur <= 0 {
			return 0
		}
		return n / dur
	}
	type kv struct {
		k string
		v any
	}
	head := []kv{
		{"date", ev.Run.StartedAt.UTC().Format("20060102-150405")},
		{"backend", "pel"},
		{"label", "pel " + ev.Contract.Name + " v" + strconv.Itoa(ev.Contract.Version) + " sha256 " + ev.Contract.SHA256},
		{"model_id", orNull(firstOf(c.Model, ev.Run.Model))},
		{"tokenizer_id", nil},
		{"num_prompts", len(reqs)},
	}
	rate, burst, conc := any("inf"), 1.0, any(nil)
	switch a := c.Arrival; a.Process {
	case contract.Poisson, contract.Constant:
		rate = a.Rate
	case contract.Gamma:
		rate, burst = a.Rate, 1/(a.CV*a.CV) // gamma's shape k has CV 1/√k
	case contract.Closed:
		conc = a.Concurrency
	}
	if c.MaxInFlight > 0 {
		conc = c.MaxInFlight
	}
	head = append(head, kv{"request_rate", rate}, kv{"burstiness", burst}, kv{"max_concurrency", conc},
		kv{"duration", dur}, kv{"completed", completed}, kv{"failed", len(reqs) - completed},
		kv{"total_input_tokens", inTok}, kv{"total_output_tokens", outTok},
		kv{"request_throughput", per(float64(completed))}, kv{"request_goodput", per(float64(ev.Workload.Accepted))},
		kv{"output_throughput", per(float64(outTok))}, kv{"total_token_throughput", per(float64(inTok + outTok))})
	ps := append(append([]float64{}, VLLMBenchPercentiles...), percentiles...)
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		d, mo := dists[m], moments[m]
		head = append(head, kv{"mean_" + m + "_ms", mo.mean()}, kv{"median_" + m + "_ms", quantile(d, 50)}, kv{"std_" + m + "_ms", mo.std()})
		seen := map[string]bool{}
		for _, p := range ps {
			k := "p" + pyNum(p) + "_" + m + "_ms"
			if !seen[k] {
				seen[k] = true
				head = append(head, kv{k, quantile(d, p)})
			}
		}
	}
	bw := bufio.NewWriter(w)
	enc := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("null")
		}
		bw.Write(b)
	}
	bw.WriteString("{")
	for i, h := range head {
		if i > 0 {
			bw.WriteString(", ")
		}
		enc(h.k)
		bw.WriteString(": ")
		enc(h.v)
	}
	arr := func(key string, n int, f func(i int)) {
		bw.WriteString(", ")
		enc(key)
		bw.WriteString(": [")
		for i := 0; i < n; i++ {
			if i > 0 {
				bw.WriteString(", ")
			}
			f(i)
		}
		bw.WriteString("]")
	}
	arr("input_lens", len(reqs), func(i int) { enc(reqs[i].in) })
	arr("output_lens", len(reqs), func(i int) { enc(reqs[i].out) })
	arr("ttfts", len(reqs), func(i int) { enc(reqs[i].ttft) })
	arr("e2els", len(reqs), func(i int) { enc(reqs[i].e2e) })
	// start_times as vLLM writes them (seconds on one clock), counted from the first send.
	arr("start_times", len(reqs), func(i int) {
		if reqs[i].sent.IsZero() {
			enc(0)
		} else {
			enc(reqs[i].sent.Sub(first).Seconds())
		}
	})
	// itls: a second pass, written as read.
	bw.WriteString(`, "itls": [`)
	i := 0
	err = each(func(r *record.Record) error {
		if r.Step != nil {
			return nil
		}
		if i > 0 {
			bw.WriteString(", ")
		}
		i++
		bw.WriteString("[")
		if _, ok := r.TTFTFromSent(); r.OK() && ok && !r.HasFlag(record.FlagEventsSummarized) {
			j := 0
			r.ChunkGaps(func(g time.Duration) {
				if j > 0 {
					bw.WriteString(", ")
				}
				j++
				enc(g.Seconds())
			})
		}
		bw.WriteString("]")
		return nil
	})
	if err != nil {
		return err
	}
	bw.WriteString("]")
	arr("generated_texts", len(reqs), func(int) { enc("") })
	arr("errors", len(reqs), func(i int) { enc(reqs[i].err) })
	bw.WriteString("}\n")
	return bw.Flush()
}

// quantile is the p-th percentile in ms, null (nil) without values, as vllm writes NaN's
// absence.
func quantile(d *stats.Dist, p float64) any {
	if d.N() == 0 {
		return nil
	}
	return d.QuantileMs(p)
}

// moment accumulates a mean and a (population, as numpy's std) standard deviation.
type moment struct{ n, sum, sumSq float64 }

func (m *moment) add(v float64) { m.n++; m.sum += v; m.sumSq += v * v }

func (m *moment) mean() any {
	if m.n == 0 {
		return nil
	}
	return m.sum / m.n
}

func (m *moment) std() any {
	if m.n == 0 {
		return nil
	}
	mu := m.sum / m.n
	return math.Sqrt(max(0, m.sumSq/m.n-mu*mu))
}

// pyNum writes a percentile as vllm names its key: 99 → "99", 99.9 → "99.9".
func pyNum(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
