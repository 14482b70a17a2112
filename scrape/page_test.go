package scrape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/golden"
	"github.com/pel-ladder/pel/rundir"
)

func FuzzParsePage(f *testing.F) {
	files, _ := filepath.Glob("testdata/fixtures/*.prom")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b, false)
		}
	}
	f.Add([]byte("# TYPE a counter\na_total 1\n# EOF\n"), true)
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n# EOF\n"), true)
	f.Add([]byte("x_bucket{le=\"0.5\"} NaN\nx_bucket{le=\"+Inf\"} 1\nx_count 1\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, openMetrics bool) {
		ct := "text/plain; version=0.0.4"
		if openMetrics {
			if len(data) > 4096 {
				// expfmt's OpenMetrics decoder is superlinear in line length (its doc says
				// so); the sampler prefers the text format and caps page size.
				return
			}
			ct = "application/openmetrics-text; version=1.0.0"
		}
		fams, err := ParsePage(bytes.NewReader(data), ct)
		if err != nil {
			var pe *PageError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		// Whatever parsed must survive the JSONL round trip and the analysis.
		s := Sample{T: t0, Endpoint: "http://fuzz/metrics", Kind: KindEngine, OK: true, Families: fams}
		line, err := json.Marshal(&s)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		buf := bytes.NewBuffer(append(line, '\n'))
		back, err := DecodeSamples(buf)
		if err != nil || len(back) != 1 {
			t.Fatalf("round trip: %v (%d samples)", err, len(back))
		}
		s2 := s
		s2.T = t0.Add(1e9)
		ev := evidence.New()
		if err := FillSamples(ev, []Sample{s, s2}, ""); err != nil {
			t.Fatalf("fill: %v", err)
		}
		if err := ev.Encode(io.Discard); err != nil {
			t.Fatalf("evidence.json: %v", err)
		}
		if _, err := Snapshot(fams, KindEngine, ""); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	})
}

func TestParsePageFormats(t *testing.T) {
	om := "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total{engine=\"0\"} 7\nvllm:num_preemptions_created{engine=\"0\"} 1.7e9\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 3\n# EOF\n"
	fams, err := ParsePage(strings.NewReader(om), "application/openmetrics-text; version=1.0.0; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]float64{}
	for _, f := range fams {
		names[f.Name] = float64(*f.Metrics[0].V)
	}
	if names["vllm:num_preemptions_total"] != 7 || names["vllm:num_requests_waiting"] != 3 {
		t.Errorf("OpenMetrics families %v", names)
	}
	// A page without TYPE lines: histogram series regrouped.
	flat := "h_bucket{engine=\"0\",le=\"0.1\"} 2\nh_bucket{engine=\"0\",le=\"1\"} 5\nh_bucket{engine=\"0\",le=\"+Inf\"} 6\nh_count{engine=\"0\"} 6\nh_sum{engine=\"0\"} 2.5\n"
	fams, err = ParsePage(strings.NewReader(flat), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].Type != "histogram" || fams[0].Name != "h" {
		t.Fatalf("regrouped %+v", fams)
	}
	m := fams[0].Metrics[0]
	if len(m.LE) != 2 || *m.C != 6 || *m.S != 2.5 || m.Labels["engine"] != "0" || m.Labels["le"] != "" {
		t.Errorf("regrouped metric %+v", m)
	}
	if _, err := ParsePage(strings.NewReader("a{b=\"c} 1\n"), ""); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad page error %v", err)
	}
}

func TestSamplesCodec(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, rundir.MetricsFile)
	w, err := CreateWriter(p)
	if err != nil {
		t.Fatal(err)
	}
	nan := Num(math.NaN())
	inf := Num(math.Inf(1))
	in := []Sample{
		{T: t0, Endpoint: "http://a/metrics", Kind: KindEngine, Origin: OriginScrape, OK: true, DurMs: 1.5,
			Families: []Family{{Name: "g", Type: "gauge", Metrics: []Metric{{V: &nan}, {Labels: map[string]string{"x": "y"}, V: &inf}}}}},
		{T: t0.Add(1e9), Endpoint: "http://a/metrics", Kind: KindEngine, Err: "HTTP 500"},
	}
	for i := range in {
		if err := w.Write(&in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	out, err := ReadSamples(p)
	if err != nil || len(out) != 2 {
		t.Fatalf("%v %d", err, len(out))
	}
	if v := float64(*out[0].Families[0].Metrics[0].V); !math.IsNaN(v) || !math.IsInf(float64(*out[0].Families[0].Metrics[1].V), 1) {
		t.Errorf("NaN/Inf round trip: %v", out[0].Families)
	}
	if out[1].OK || out[1].Err != "HTTP 500" {
		t.Errorf("failed sample %+v", out[1])
	}
	// A torn last line (writer killed mid-line) is skipped; a bad line in the middle is
	// an error naming file and line.
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, []byte(`{"t":"2026-11-29T12:00:02Z","ep":"x`)...), 0o600)
	if out, err := ReadSamples(p); err != nil || len(out) != 2 {
		t.Errorf("torn line: %v %d", err, len(out))
	}
	os.WriteFile(p, append([]byte("{not json}\n"), b...), 0o600)
	if _, err := ReadSamples(p); err == nil || !strings.Contains(err.Error(), rundir.MetricsFile+":1: ") {
		t.Errorf("bad line error %v", err)
	}
}

// TestDocMappingTable keeps the package doc's mapping table in step with the adapters.
func TestDocMappingTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "//\t|") {
			lines = append(lines, strings.TrimPrefix(l, "//\t"))
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	if golden.Update() && got != MappingTable() {
		old := "//\t" + strings.ReplaceAll(strings.TrimSuffix(got, "\n"), "\n", "\n//\t")
		repl := "//\t" + strings.ReplaceAll(strings.TrimSuffix(MappingTable(), "\n"), "\n", "\n//\t")
		if err := os.WriteFile("doc.go", []byte(strings.Replace(string(doc), old, repl, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := MappingTable(); got != want {
		t.Errorf("doc.go mapping table is stale; it should read:\n%s", want)
	}
}

// The runner's sampler seam, matched structurally (scrape does not import runner).
var _ interface {
	Start(ctx context.Context, dir *rundir.Dir) error
	Stop(ctx context.Context) error
	Fill(ev *evidence.Evidence, dir *rundir.Dir) error
} = (*Collector)(nil)
