package hostile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/scrape"
)

// vllmPage is a small, plausible vLLM /metrics page.
const vllmPage = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 1000
`

// seriesPage is a text page of n samples of one gauge, 35 bytes a line.
func seriesPage(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 40)
	b.WriteString("# TYPE vllm:lora_requests gauge\n")
	for i := range n {
		fmt.Fprintf(&b, "vllm:lora_requests{id=\"%07d\"} 1\n", i)
	}
	return b.Bytes()
}

// emptyMetricsPage is a delimited protobuf page of one gauge family with n empty metrics.
func emptyMetricsPage(n int) []byte {
	var fam []byte
	fam = protowire.AppendTag(fam, 1, protowire.BytesType) // name
	fam = protowire.AppendString(fam, "vllm:x")
	for range n {
		fam = append(fam, 4<<3|2, 0) // metric: an empty message
	}
	return append(protowire.AppendVarint(nil, uint64(len(fam))), fam...)
}

// A /metrics page of 52 MB with 1.5M series (under a 64 MiB byte cap) needs over 2 GB to
// parse: out of memory, every file empty. An oversized page is a gap of its own endpoint,
// named, while the run and the other endpoint go on.
func TestHugeMetricsPage(t *testing.T) {
	for _, c := range []struct {
		name, bound string
		page        []byte
	}{
		{"1.5M series, 52 MB", "MaxPageBytes", seriesPage(1_500_000)},
		{"400k series, 15 MB (under the byte bound)", "MaxPageSamples", seriesPage(400_000)},
		// A protobuf page of one family with 8 M empty metrics (2 bytes each on the wire):
		// 1.89 GB while Go's protobuf decoder allocated them, before the count rejected it.
		{"protobuf, 8M empty metrics in 16 MB", "pel's bound of 320000", emptyMetricsPage(8_000_000 - 8)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("page: %.1f MB", float64(len(c.page))/1e6)
			huge := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.page[0] != '#' {
					w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
				}
				w.Write(c.page)
			}))
			good := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(vllmPage)) }))
			target := api(t, okStream)
			d, to := 3*time.Second, 5*time.Second
			res, dir := run(t, target, contractYAML(4, d, to, ""), d, to,
				"--metrics", huge+"/metrics", "--metrics", good+"/metrics", "--metrics-interval", "500ms")
			if res.code != 0 {
				t.Errorf("exit %d: %s", res.code, tail(res.stderr))
			}
			records(t, dir)
			samples, err := scrape.ReadSamples(filepath.Join(dir, rundir.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			var gaps, ok int
			for _, s := range samples {
				switch {
				case strings.HasPrefix(s.Endpoint, huge) && !s.OK && strings.Contains(s.Err, c.bound):
					gaps++
				case strings.HasPrefix(s.Endpoint, good) && s.OK:
					ok++
				}
			}
			if gaps < 2 || ok < 2 {
				t.Errorf("%d gaps naming %s of the huge endpoint, %d samples of the good one", gaps, c.bound, ok)
			}
		})
	}
}

// user:pass@ and ?token= of a --metrics URL (and of --target) must not reach
// metrics.jsonl, evidence.json or report.html.
func TestCredentialsInURLs(t *testing.T) {
	metrics := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(vllmPage)) }))
	target := api(t, okStream)
	withCreds := func(u string) string { return strings.Replace(u, "http://", "http://scraper:hunter2pw@", 1) }
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, withCreds(target), contractYAML(4, d, to, ""), d, to,
		"--metrics", withCreds(metrics)+"/metrics?token=tok3nvalue&gpu=0", "--metrics-interval", "250ms")
	if res.code != 0 {
		t.Errorf("exit %d: %s", res.code, tail(res.stderr))
	}
	records(t, dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range append(files, "stdout", "stderr") {
		var b []byte
		switch f {
		case "stdout":
			b = []byte(res.stdout)
		case "stderr":
			b = []byte(res.stderr)
		default:
			b, _ = os.ReadFile(f)
		}
		for _, secret := range []string{"hunter2pw", "tok3nvalue", "scraper:"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q", filepath.Base(f), secret)
			}
		}
	}
}

// 32 concurrent 8 MB OTLP posts for 15 s: unbounded, they hold 3.4 GB and write 302 MB of
// spans that join no task.
func TestOTLPFlood(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// Valid protobuf: 3 MB of spans of another client's traces, and 8 MB bodies (over the
	// body bound).
	var spans []*tracepb.Span
	for i := range 6000 {
		id := make([]byte, 16)
		for j := range id {
			id[j] = byte(rand.Uint32())
		}
		spans = append(spans, &tracepb.Span{TraceId: id, SpanId: id[:8], Name: "llm_request", StartTimeUnixNano: uint64(i), EndTimeUnixNano: uint64(i + 1),
			Attributes: nil, Status: &tracepb.Status{Message: strings.Repeat("z", 400)}})
	}
	valid, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat(valid, 3)
	target := api(t, okStream)
	d, to := 5*time.Second, 5*time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := valid
			if i%2 == 1 {
				body = big
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					time.Sleep(20 * time.Millisecond) // not listening yet, or gone
					continue
				}
				resp.Body.Close()
			}
		}()
	}
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to, "--otlp", addr)
	close(stop)
	wg.Wait()
	if res.code != 0 {
		t.Errorf("exit %d: %s", res.code, tail(res.stderr))
	}
	recs := records(t, dir)
	every(t, recs, "ok", func(r *record.Record) bool { return r.OK() })
	if st, err := os.Stat(filepath.Join(dir, "spans.jsonl")); err != nil || st.Size() > 1<<20 {
		t.Errorf("spans.jsonl: %v, %d bytes of spans that join no task", err, st.Size())
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "evidence.json"))
	if !bytes.Contains(ev, []byte("of trace ids this run did not send")) {
		t.Error("evidence.json does not say what the OTLP receiver dropped")
	}
}
