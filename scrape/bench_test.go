package scrape

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// BenchmarkParsePage: one vLLM-V1-shaped page with two data-parallel engines (the
// sampler's per-request parsing cost).
func BenchmarkParsePage(b *testing.B) {
	s := scrapetest.KVThrash()
	s.Engines = 2
	page := s.PageAt(100, 0)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if _, err := ParsePage(strings.NewReader(page), "text/plain; version=0.0.4"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFillHour: the analysis of one hour of 1 Hz samples of that page, with a cold
// and a warm phase (what pel analyze does per run directory).
func BenchmarkFillHour(b *testing.B) {
	s := scrapetest.KVThrash()
	s.Engines = 2
	fams, err := ParsePage(strings.NewReader(s.PageAt(0, 0)), "")
	if err != nil {
		b.Fatal(err)
	}
	var samples []Sample
	for i := 0; i < 3600; i++ {
		f, _ := ParsePage(strings.NewReader(s.PageAt(float64(i), 0)), "")
		samples = append(samples, Sample{T: t0.Add(time.Duration(i) * time.Second), Endpoint: "http://e/metrics", Kind: KindEngine, OK: true, Families: f})
	}
	line, _ := json.Marshal(&Sample{T: t0, Endpoint: "http://e/metrics", Kind: KindEngine, OK: true, Families: fams})
	b.ResetTimer()
	for b.Loop() {
		ev := evidence.New()
		ev.Run.StartedAt = t0
		ev.Run.Phases = []evidence.Phase{{Name: "cold", StartS: 0, EndS: 60}, {Name: "warm", StartS: 60, EndS: 3600}}
		if err := FillSamples(ev, samples, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(line)), "jsonl-bytes/sample")
}

// BenchmarkFillFileHour: pel analyze's stage-4 read of a one-hour, 3,000-series
// metrics.jsonl (scrapetest.Hour, ~490 MB): both streaming passes over the file, with a
// cold and a warm phase. MB/s is of the file; peak RSS of the whole command is measured by
// test/hostile (BENCHMARKS.md).
func BenchmarkFillFileHour(b *testing.B) {
	shape := scrapetest.Hour()
	p := writeRun(b, shape)
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ResetTimer()
	for b.Loop() {
		ev := evidence.New()
		ev.Run.StartedAt = t0
		ev.Run.Phases = []evidence.Phase{{Name: "cold", StartS: 0, EndS: 60}, {Name: "warm", StartS: 60, EndS: 3600}}
		if err := FillFromFile(ev, p, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(shape.Series()), "series/page")
}
