package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pel-ladder/pel/rundir"
)

// writeMetrics writes dir/metrics.jsonl as pel run's scraper would over [t0, t0+dur]: one
// sample a second of one vLLM endpoint whose page has series series (the engine gauges the
// adapters read, a TTFT histogram, and per-LoRA gauges making up the rest), the shape of a
// one-hour run against a large engine (3,600 samples × 3,000 series is ~470 MB).
func writeMetrics(dir string, t0 time.Time, dur time.Duration, series int) error {
	f, err := os.OpenFile(filepath.Join(dir, rundir.MetricsFile), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	les := []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	for s := 0; time.Duration(s)*time.Second <= dur; s++ {
		t := t0.Add(time.Duration(s) * time.Second)
		fmt.Fprintf(w, `{"t":%q,"ep":"http://127.0.0.1:8000/metrics","kind":"engine","origin":"scrape","engine":"vllm","ok":true,"dur_ms":3.2,"fam":[`, t.Format(time.RFC3339Nano))
		fmt.Fprintf(w, `{"n":"vllm:num_requests_running","y":"gauge","m":[{"l":{"model_name":"m"},"v":%d}]},`, 40+s%7)
		fmt.Fprintf(w, `{"n":"vllm:num_requests_waiting","y":"gauge","m":[{"l":{"model_name":"m"},"v":%d}]},`, s%3)
		fmt.Fprintf(w, `{"n":"vllm:kv_cache_usage_perc","y":"gauge","m":[{"l":{"model_name":"m"},"v":0.%02d}]},`, 30+s%50)
		fmt.Fprintf(w, `{"n":"vllm:generation_tokens_total","y":"counter","m":[{"l":{"model_name":"m"},"v":%d}]},`, s*1600)
		w.WriteString(`{"n":"vllm:time_to_first_token_seconds","y":"histogram","m":[{"l":{"model_name":"m"},"c":`)
		w.WriteString(strconv.Itoa(s * 100))
		w.WriteString(`,"s":`)
		w.WriteString(strconv.Itoa(s * 12))
		w.WriteString(`,"le":[`)
		for i, le := range les {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(le, 'g', -1, 64))
		}
		w.WriteString(`],"b":[`)
		for i := range les {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(strconv.Itoa(s * 100 * (i + 1) / len(les)))
		}
		w.WriteString(`]}]},{"n":"vllm:lora_requests_info","y":"gauge","m":[`)
		for i := range max(series-16, 1) {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"l":{"lora":"a%04d"},"v":%d}`, i, (s+i)%5)
		}
		w.WriteString("]}]}\n")
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
