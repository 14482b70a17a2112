package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/diagnose"
	"github.com/pel-ladder/pel/evidence"
)

// FuzzRenderEvidence: any evidence.json that decodes must diagnose and render as text and
// HTML without panicking (pel report and pel analyze read files from other machines).
func FuzzRenderEvidence(f *testing.F) {
	var b bytes.Buffer
	synthetic(30, 60).Encode(&b)
	f.Add(b.Bytes())
	files, _ := filepath.Glob("testdata/*.evidence.json")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"schema_version":1,"stages":[{"stage":9,"signals":[{"name":"gpu.util_ratio","value":1e308}],"series":[{"name":"x","t":[1,2],"v":[3]}]}],"workload":{"histograms":{"a":{"bounds":[1],"counts":[5,6]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := evidence.Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := Text(io.Discard, ev); err != nil {
			t.Fatal(err)
		}
		if err := HTML(io.Discard, ev); err != nil {
			t.Fatal(err)
		}
		diagnose.Diagnose(ev, nil, diagnose.Options{Resamples: 10})
		if err := HTML(io.Discard, ev); err != nil {
			t.Fatal(err)
		}
	})
}
