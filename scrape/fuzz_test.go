package scrape

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
)

// fillAny runs the analysis on samples from outside input; it must never panic.
func fillAny(t *testing.T, ss []Sample) {
	ev := evidence.New()
	ev.Run.StartedAt = t0
	ev.Run.Phases = []evidence.Phase{{Name: "cold", StartS: 0, EndS: 1}, {Name: "warm", StartS: 1, EndS: 5}}
	_ = FillSamples(ev, ss, "")
}

// FuzzDecodeSamples: a metrics.jsonl handed to `pel analyze` is outside input. Decoding
// never panics, a rejection names the line, and whatever decodes can be analysed.
func FuzzDecodeSamples(f *testing.F) {
	var good bytes.Buffer
	for _, s := range pages(f, "http://127.0.0.1:8000/metrics", KindEngine, every(0, 3, 1), func(t float64) string {
		return "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{engine=\"0\"} " + string(rune('0'+int(t))) + "\n" +
			"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n"
	}, func(t float64) bool { return t == 2 }) {
		b, err := json.Marshal(&s)
		if err != nil {
			f.Fatal(err)
		}
		good.Write(append(b, '\n'))
	}
	f.Add(good.Bytes())
	f.Add([]byte(`{"t":"2026-11-29T12:00:00Z","ep":"x","kind":"dcgm","ok":true,"fam":[{"n":"DCGM_FI_DEV_GPU_UTIL","y":"gauge","m":[{"l":{"gpu":"0"},"v":"NaN"}]}]}` + "\n"))
	f.Add([]byte(`{"t":"2026-11-29T12:00:00Z","ep":"x","kind":"engine","ok":true,"fam":[{"n":"h","y":"histogram","m":[{"le":[2,1],"b":[5],"c":-1,"s":"+Inf"}]}]}` + "\n"))
	f.Add([]byte("{not json}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The streamed read (pel analyze's: two passes over the file) accepts what the
		// in-memory decoder accepts, and never panics on the rest.
		ev := evidence.New()
		ev.Run.StartedAt = t0
		ev.Run.Phases = []evidence.Phase{{Name: "warm", StartS: 0, EndS: 5}}
		ferr := fillFrom(ev, bytes.NewReader(data), "m.jsonl", "")
		ss, err := DecodeSamples(bytes.NewReader(data))
		if err != nil {
			return
		}
		if ferr != nil {
			t.Fatalf("decoded in memory, refused streamed: %v", ferr)
		}
		fillAny(t, ss)
	})
}

// FuzzPromMatrix: a Prometheus server's query_range answer is outside input too.
func FuzzPromMatrix(f *testing.F) {
	f.Add([]byte(`{"resultType":"matrix","result":[
	 {"metric":{"__name__":"vllm:num_preemptions_total","instance":"e:8000","engine":"0"},"values":[[1000,"0"],[1001,"4"],[1003,"8"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","instance":"e:8000","le":"0.5"},"values":[[1000,"1"],[1002,"2"]]},
	 {"metric":{"__name__":"vllm:time_to_first_token_seconds_bucket","instance":"e:8000","le":"+Inf"},"values":[[1000,"2"],[1002,"4"]]},
	 {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","instance":"e:8000","gpu":"0"},"values":[[1000,"NaN"],[1001,"91"]]}]}`))
	f.Add([]byte(`{"resultType":"matrix","result":[{"metric":{},"values":[["x",1],[1e300,"-Inf"]]}]}`))
	f.Add([]byte(`{"resultType":"matrix","result":[{"metric":{"__name__":"h_bucket","le":"nope"},"values":[[1000,"1"]]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d promData
		if json.Unmarshal(data, &d) != nil {
			return
		}
		start := time.Unix(1000, 0)
		ss, err := promToSamples(d.Result, start, start.Add(4*time.Second), time.Second)
		if err != nil {
			return
		}
		fillAny(t, ss)
	})
}
