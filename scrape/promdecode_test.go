package scrape

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPromAnswerBounds: a gzip answer that inflates past MaxPromBody and an answer of more
// than MaxPromSeries series are errors naming the bound, read as they stream; an ordinary
// answer and an error answer read as before.
func TestPromAnswerBounds(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","pad":"`))
	zero := bytes.Repeat([]byte("a"), 1<<20)
	for range MaxPromBody>>20 + 4 {
		zw.Write(zero)
	}
	zw.Write([]byte(`"},"values":[]}]}}`))
	zw.Close()
	var many strings.Builder
	many.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range MaxPromSeries + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"metric":{"__name__":"vllm:num_requests_running","instance":"i%d"},"values":[[1,"1"]]}`, i)
	}
	many.WriteString(`]}}`)
	for _, c := range []struct {
		name, errHas string
		gz           bool
		body         []byte
	}{
		{"gzip bomb", "MaxPromBody", true, bomb.Bytes()},
		{"too many series", "MaxPromSeries", false, []byte(many.String())},
		{"error answer", "bad_data: parse error", false, []byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`)},
		{"not JSON", "not a Prometheus API answer: <html>", false, []byte(`<html>nope</html>`)},
		{"one series", "", false, []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"vllm:num_requests_running","instance":"a"},"values":[[1,"1"],[2,"2"]]}]}}`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if c.gz {
					w.Header().Set("Content-Encoding", "gzip")
				}
				w.Write(c.body)
			}))
			defer srv.Close()
			_, err := QueryRange(context.Background(), nil, srv.URL, `job="x"`, time.Unix(0, 0), time.Unix(60, 0), 15*time.Second)
			switch {
			case c.errHas == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
				t.Fatalf("error %v, want one naming %q", err, c.errHas)
			}
		})
	}
}
