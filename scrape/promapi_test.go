package scrape

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/rundir"
)

// matrix builds a query_range result: one series per (name, labels) with values at the
// given unix seconds (missing steps omitted by the caller).
func matrix(t *testing.T, js string) []promSeries {
	t.Helper()
	var d promData
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	return d.Result
}

// TestPromToSamples: series are grouped by instance into samples per step, histograms
// regrouped from _bucket/_sum/_count, DCGM kept apart, and a step without data is a gap.
func TestPromToSamples(t *testing.T) {
	start := time.Unix(1000, 0)
	res := matrix(t, `{"resultType":"matrix","result":[
	 {"metric":{"__name__":"vllm:num_requests_waiting","instance":"e:8000","job":"v","engine":"0"},"values":[[1000,"2"],[1001,"3"],[1003,"5"]]},
	 {"metric":{"__name__":"vllm:num_preemptions_total","instance":"e:8000","job":"v","engine":"0"},"values":[[1000,"0"],[1001,"4"],[1003,"8"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","instance":"e:8000","job":"v","engine":"0","le":"0.5"},"values":[[1000,"1"],[1001,"2"],[1003,"4"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","instance":"e:8000","job":"v","engine":"0","le":"+Inf"},"values":[[1000,"2"],[1001,"4"],[1003,"8"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_count","instance":"e:8000","job":"v","engine":"0"},"values":[[1000,"2"],[1001,"4"],[1003,"8"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_sum","instance":"e:8000","job":"v","engine":"0"},"values":[[1000,"1"],[1001,"2"],[1003,"4"]]},
	 {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","instance":"g:9400","job":"v","gpu":"0"},"values":[[1000,"90"],[1001,"91"],[1002,"NaN"],[1003,"92"]]}
	]}`)
	ss, err := promToSamples(res, start, start.Add(3*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		line := fmt.Sprintf("%d %s %s ok=%v", s.T.Unix(), s.Endpoint, s.Kind, s.OK)
		for _, f := range s.Families {
			line += " " + f.Name + ":" + f.Type
		}
		got = append(got, line)
	}
	want := []string{
		"1000 prom:e:8000 engine ok=true vllm:num_preemptions_total:counter vllm:num_requests_waiting:untyped vllm:time_to_first_token_seconds:histogram",
		"1000 prom:g:9400 dcgm ok=true DCGM_FI_DEV_GPU_UTIL:untyped",
		"1001 prom:e:8000 engine ok=true vllm:num_preemptions_total:counter vllm:num_requests_waiting:untyped vllm:time_to_first_token_seconds:histogram",
		"1001 prom:g:9400 dcgm ok=true DCGM_FI_DEV_GPU_UTIL:untyped",
		"1002 prom:e:8000 engine ok=false",
		"1002 prom:g:9400 dcgm ok=true DCGM_FI_DEV_GPU_UTIL:untyped",
		"1003 prom:e:8000 engine ok=true vllm:num_preemptions_total:counter vllm:num_requests_waiting:untyped vllm:time_to_first_token_seconds:histogram",
		"1003 prom:g:9400 dcgm ok=true DCGM_FI_DEV_GPU_UTIL:untyped",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	h := ss[0].Families[2].Metrics[0]
	if h.Labels["engine"] != "0" || h.Labels["instance"] != "" || len(h.LE) != 1 || *h.C != 2 || *h.S != 1 {
		t.Errorf("regrouped histogram %+v", h)
	}
	ev := evidence.New()
	ev.Run.StartedAt = start
	if err := FillSamples(ev, ss, ""); err != nil {
		t.Fatal(err)
	}
	if s, _ := ev.Signal(evidence.SigPreemptionRate); !near(s.Value, 8.0/3, 1e-5) {
		t.Errorf("preemptions/s %g", s.Value)
	}
	if s, _ := ev.Signal(evidence.SigScrapeGaps); s.Value != 1 {
		t.Errorf("gaps %g (%s)", s.Value, s.Note)
	}
	if s, _ := ev.Signal(evidence.SigGPUUtil); !near(s.Value, 0.91, 1e-9) {
		t.Errorf("util %g (NaN step skipped)", s.Value)
	}
}

// TestPromErrors: a Prometheus error answer and a non-Prometheus answer fail Start with
// the server's message.
func TestPromErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if strings.Contains(r.Form.Get("query"), "bad") {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected identifier"}`)
			return
		}
		fmt.Fprint(w, "<html>not prometheus</html>")
	}))
	defer srv.Close()
	for _, tc := range []struct{ sel, want string }{
		{`bad`, "bad_data: parse error"},
		{`job="x"`, "not a Prometheus API answer"},
	} {
		c, err := NewCollector(Config{Prometheus: srv.URL, Selector: tc.sel})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Start(context.Background(), &rundir.Dir{Path: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("selector %s: %v, want %q", tc.sel, err, tc.want)
		}
	}
	if got := promSelector("a|b", ` {job="x", pod=~"v.*"} `); got != `{__name__=~"a|b",job="x", pod=~"v.*"}` {
		t.Errorf("selector %s", got)
	}
}
