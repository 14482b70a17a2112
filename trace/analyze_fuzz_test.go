package trace

import (
	"bytes"
	"os"
	"testing"

	"github.com/pel-ladder/pel/trace/kineto"
)

// FuzzAnalyze: whatever a Kineto trace holds, a trace that loads must analyse without a
// panic and without a negative duration, share or idle time (the readers reject negative
// times; overlaps, rounding and missing launches must not produce one either).
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[
		{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":100},
		{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","ts":100,"dur":100},
		{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":10,"dur":5,"args":{"correlation":1}},
		{"ph":"X","cat":"kernel","name":"sm80_gemm","ts":20,"dur":30,"args":{"stream":7,"correlation":1}},
		{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce","ts":25,"dur":10.5,"args":{"stream":9,"correlation":2}},
		{"ph":"X","cat":"cuda_sync","name":"Stream Sync","ts":40,"dur":20,"args":{"stream":7,"correlation":3}},
		{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","ts":45.2,"dur":0.3,"args":{"stream":7,"correlation":4}}]}`))
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"a","ts":1.9,"dur":0.05,"args":{"stream":7}},{"ph":"X","cat":"kernel","name":"b","ts":1.2,"dur":3,"args":{"stream":7}}]`))
	for _, p := range []string{"testdata/kineto/a100-event-sync.trace.json.gz", "testdata/kineto/a100-triton-compiled.trace.json.gz"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, exact := range []bool{false, true} {
			tl, _, err := kineto.Load(bytes.NewReader(data), kineto.LoadOptions{HTATime: !exact})
			if err != nil {
				continue
			}
			for _, keep := range []bool{false, true} {
				opts := DefaultOptions()
				opts.ExactTime, opts.KeepLastStep = exact, keep
				r := AnalyzeTimeline(tl, opts)
				if err := checkNonNegative(r); err != nil {
					t.Fatalf("exact=%v keep=%v: %v", exact, keep, err)
				}
				Findings(r)
			}
		}
	})
}
