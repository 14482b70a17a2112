package hostile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pel canary against a Prometheus answering a 0.5 MiB gzip that inflates to 500 MiB
// (1.78 GB unbounded) or 2 M one-point series (2.21 GB). The answer is decoded as it
// streams, bounded after decompression and in series; the error names the bound.
func TestCanaryHostilePrometheus(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:num_requests_running","pad":"`))
	pad := bytes.Repeat([]byte("a"), 1<<20)
	for range 500 {
		zw.Write(pad)
	}
	zw.Write([]byte(`"},"values":[[1,"1"]]}]}}`))
	zw.Close()
	t.Logf("gzip answer: %.2f MiB, 500 MiB inflated", float64(bomb.Len())/(1<<20))
	series := func(w http.ResponseWriter) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
		var b bytes.Buffer
		for i := range 2_000_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":"vllm:num_requests_running","instance":"i%d"},"values":[[1,"1"]]}`, i)
			if b.Len() > 1<<20 {
				if _, err := w.Write(b.Bytes()); err != nil {
					return
				}
				b.Reset()
			}
		}
		b.WriteString(`]}}`)
		w.Write(b.Bytes())
	}
	for _, c := range []struct {
		name, bound string
		h           http.HandlerFunc
	}{
		{"gzip bomb", "MaxPromBody", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		}},
		{"2M one-point series", "MaxPromSeries", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			series(w)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prom := serve(t, c.h)
			res := pel(t, 2*time.Minute, nil, "canary", "--prometheus", prom, "--baseline", `job="base"`, "--candidate", `job="cand"`, "--window", "10m")
			if res.code == 0 || !strings.Contains(res.stderr, c.bound) {
				t.Errorf("exit %d, want a failure naming %s; stderr %s", res.code, c.bound, tail(res.stderr))
			}
		})
	}
}
