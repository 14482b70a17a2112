package scrapetest

import (
	"bufio"
	"io"
	"strconv"
	"time"
)

// RunShape sizes a metrics.jsonl like one of a long run of a vLLM V1 data-parallel server:
// Engines engine label values, each with the gauges and counters pel reads, six latency
// histograms of Buckets finite bounds, and Positions per-position speculative acceptance
// counters (vllm:spec_decode_num_accepted_tokens_per_pos_total, one series per draft
// position: the scalar series that make real pages long). Every histogram bucket is one
// series, as Prometheus counts them.
type RunShape struct {
	Samples, Engines, Buckets, Positions int
	Interval                             time.Duration
}

// Hour is a one-hour run sampled every second with 3,000 series per page: 8 engines ×
// (3 gauges + 5 counters + 6 histograms × (38 buckets + +Inf, sum, count) + 122 positions).
func Hour() RunShape {
	return RunShape{Samples: 3600, Engines: 8, Buckets: 38, Positions: 122, Interval: time.Second}
}

// Series is the number of series on each page.
func (s RunShape) Series() int { return s.Engines * (3 + 5 + 6*(s.Buckets+3) + s.Positions) }

// histNames are the six latency histograms, in seconds.
var histNames = []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
	"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds"}

// WriteJSONL writes the run's samples (pel's metrics.jsonl format, endpoint ep, the first at
// start) to w, one line at a time: the file is never held. Values evolve with the sample
// index i: each engine e has 5+e waiting and 40+e running requests, KV usage 0.5 to 0.9,
// 2 preemptions/s, and 4 requests/s observed in every histogram (bucket k holds the k-th
// share of them: a uniform distribution over the bounds).
func (s RunShape) WriteJSONL(w io.Writer, ep string, start time.Time) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	const model = "meta-llama/Llama-3.1-70B-Instruct"
	bounds := make([]float64, s.Buckets)
	for k := range bounds {
		bounds[k] = 0.001 * float64(int(1)<<(k/3)) * float64(1+k%3)
	}
	var b []byte
	for i := 0; i < s.Samples; i++ {
		b = b[:0]
		t := start.Add(time.Duration(i) * s.Interval)
		b = append(b, `{"t":"`...)
		b = t.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","ep":`...)
		b = strconv.AppendQuote(b, ep)
		b = append(b, `,"kind":"engine","origin":"scrape","ok":true,"dur_ms":4.2,"fam":[`...)
		lbl := func(e int) {
			b = append(b, `"l":{"engine":"`...)
			b = strconv.AppendInt(b, int64(e), 10)
			b = append(b, `","model_name":"`+model+`"}`...)
		}
		scalar := func(name, typ string, v func(e int) float64) {
			b = append(b, `{"n":"`+name+`","y":"`+typ+`","m":[`...)
			for e := 0; e < s.Engines; e++ {
				if e > 0 {
					b = append(b, ',')
				}
				b = append(b, '{')
				lbl(e)
				b = append(b, `,"v":`...)
				b = strconv.AppendFloat(b, v(e), 'g', -1, 64)
				b = append(b, '}')
			}
			b = append(b, `]},`...)
		}
		x := float64(i)
		scalar("vllm:num_requests_waiting", "gauge", func(e int) float64 { return float64(5 + e) })
		scalar("vllm:num_requests_running", "gauge", func(e int) float64 { return float64(40 + e) })
		scalar("vllm:kv_cache_usage_perc", "gauge", func(e int) float64 { return 0.5 + 0.4*x/float64(s.Samples) })
		scalar("vllm:num_preemptions_total", "counter", func(e int) float64 { return 2 * x })
		scalar("vllm:prompt_tokens_total", "counter", func(e int) float64 { return 4000 * x })
		scalar("vllm:generation_tokens_total", "counter", func(e int) float64 { return 1000 * x })
		scalar("vllm:prefix_cache_queries_total", "counter", func(e int) float64 { return 4000 * x })
		scalar("vllm:prefix_cache_hits_total", "counter", func(e int) float64 { return 1000 * x })
		for _, h := range histNames {
			b = append(b, `{"n":"`+h+`","y":"histogram","m":[`...)
			obs := 4 * x
			for e := 0; e < s.Engines; e++ {
				if e > 0 {
					b = append(b, ',')
				}
				b = append(b, '{')
				lbl(e)
				b = append(b, `,"le":[`...)
				for k, le := range bounds {
					if k > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendFloat(b, le, 'g', -1, 64)
				}
				b = append(b, `],"b":[`...)
				for k := range bounds {
					if k > 0 {
						b = append(b, ',')
					}
					b = strconv.AppendFloat(b, float64(int(obs*float64(k+1)/float64(s.Buckets+1))), 'g', -1, 64)
				}
				b = append(b, `],"c":`...)
				b = strconv.AppendFloat(b, obs, 'g', -1, 64)
				b = append(b, `,"s":`...)
				b = strconv.AppendFloat(b, obs*0.05, 'g', -1, 64)
				b = append(b, '}')
			}
			b = append(b, `]},`...)
		}
		b = append(b, `{"n":"vllm:spec_decode_num_accepted_tokens_per_pos_total","y":"counter","m":[`...)
		for e := 0; e < s.Engines; e++ {
			for p := 0; p < s.Positions; p++ {
				if e+p > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"l":{"engine":"`...)
				b = strconv.AppendInt(b, int64(e), 10)
				b = append(b, `","model_name":"`+model+`","position":"`...)
				b = strconv.AppendInt(b, int64(p), 10)
				b = append(b, `"},"v":`...)
				b = strconv.AppendFloat(b, float64(int(x*1000)/(p+1)), 'g', -1, 64)
				b = append(b, '}')
			}
		}
		b = append(b, "]}]}\n"...)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
