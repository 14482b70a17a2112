package scrape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/scrape/scrapetest"
)

// fullInterp is linear interpolation over every point, held constant outside the range:
// what thin must reproduce at its edges.
func fullInterp(t, v []float64, x float64) float64 {
	n := len(t)
	if x <= t[0] {
		return v[0]
	}
	if x >= t[n-1] {
		return v[n-1]
	}
	i := sort.SearchFloat64s(t, x)
	if t[i] == x {
		return v[i]
	}
	return v[i-1] + (v[i]-v[i-1])*(x-t[i-1])/(t[i]-t[i-1])
}

// Interpolation at an edge over the kept points equals interpolation over all of them, and
// the kept points stay few however long the series.
func TestThinExactAtEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name   string
		n      int
		edges  []float64
		jitter bool
	}{
		{"no edges", 5000, nil, false},
		{"edges on points", 5000, []float64{0, 100, 2500, 4999}, false},
		{"edges between points", 5000, []float64{-3, 0.5, 99.9, 1234.25, 4998.5, 9000}, true},
		{"many edges", 2000, func() []float64 {
			var e []float64
			for i := 0; i < 200; i++ {
				e = append(e, float64(i)*10+0.3)
			}
			return e
		}(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := thin{w: 1, edges: c.edges}
			var ts, vs []float64
			x, v := 0.0, 0.0
			for i := 0; i < c.n; i++ {
				ts, vs = append(ts, x), append(vs, v)
				p.add1(x, v)
				x += 1
				if c.jitter {
					x += rng.Float64() * 0.5
				}
				v += rng.Float64() * 10
			}
			for _, e := range c.edges {
				if got, want := p.at1(e), fullInterp(ts, vs, e); got != want {
					t.Errorf("at %g: %g over the kept points, %g over all", e, got, want)
				}
			}
			if max := 2 + 3*len(c.edges); p.len() > max {
				t.Errorf("%d points kept for %d edges, want at most %d", p.len(), len(c.edges), max)
			}
			if p.t[0] != ts[0] || p.t[p.len()-1] != ts[len(ts)-1] {
				t.Errorf("first or last point dropped")
			}
		})
	}
}

// Past maxChartPoints a chart holds buckets of equal counts whose means, mins and maxes
// are those of their samples (to the 6 digits evidence.json keeps); below it every sample
// is a point.
func TestChartDownsample(t *testing.T) {
	for _, n := range []int{1, maxChartPoints - 1, maxChartPoints, 3600, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var c chart
			sum := 0.0
			for i := 0; i < n; i++ {
				v := float64(i % 7)
				sum += v
				c.add(float64(i), v)
			}
			ts, vs, lo, hi := c.points()
			if len(ts) > maxChartPoints || len(vs) != len(ts) {
				t.Fatalf("%d points, %d values", len(ts), len(vs))
			}
			if n < maxChartPoints {
				if len(ts) != n || lo != nil || hi != nil {
					t.Fatalf("%d samples drawn as %d points (min %v)", n, len(ts), lo != nil)
				}
				return
			}
			if len(lo) != len(ts) || len(hi) != len(ts) {
				t.Fatalf("min/max of %d and %d buckets, %d points", len(lo), len(hi), len(ts))
			}
			per := c.per
			if per < 2 || len(ts) < maxChartPoints/2-1 {
				t.Errorf("%d points of %d samples each", len(ts), per)
			}
			// A full bucket k holds samples k*per .. k*per+per-1.
			for k := 0; k < len(ts)-1; k++ {
				a := k * per
				if want := float64(a + per - 1); math.Abs(ts[k]-want) > 1e-5*want+1e-9 {
					t.Fatalf("bucket %d at t=%g, want %g", k, ts[k], want)
				}
				mn, mx, s := math.Inf(1), math.Inf(-1), 0.0
				for i := a; i < a+per; i++ {
					v := float64(i % 7)
					mn, mx, s = math.Min(mn, v), math.Max(mx, v), s+v
				}
				if lo[k] != mn || hi[k] != mx || math.Abs(vs[k]-s/float64(per)) > 1e-5*s/float64(per) {
					t.Fatalf("bucket %d: mean %g min %g max %g, want %g %g %g", k, vs[k], lo[k], hi[k], s/float64(per), mn, mx)
				}
			}
		})
	}
}

// writeRun writes shape's samples to a file and returns its path.
func writeRun(t testing.TB, shape scrapetest.RunShape) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := shape.WriteJSONL(f, "http://127.0.0.1:8000/metrics", t0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// The file is streamed (two passes, nothing held) to the same evidence as the samples
// decoded into memory, with and without phases, and with more replicas than a chart draws.
func TestStreamedFileMatchesSamples(t *testing.T) {
	for _, c := range []struct {
		name   string
		shape  scrapetest.RunShape
		phases []evidence.Phase
	}{
		{"phases", scrapetest.RunShape{Samples: 1500, Engines: 2, Buckets: 6, Positions: 3, Interval: time.Second},
			[]evidence.Phase{{Name: "cold", StartS: 0, EndS: 60.5}, {Name: "warm", StartS: 60.5, EndS: 1400.25}}},
		{"no phases", scrapetest.RunShape{Samples: 200, Engines: 1, Buckets: 4, Positions: 1, Interval: 2 * time.Second}, nil},
		{"folded replicas", scrapetest.RunShape{Samples: 50, Engines: maxChartReplicas + 3, Buckets: 3, Positions: 0, Interval: time.Second},
			[]evidence.Phase{{Name: "warm", StartS: 5, EndS: 45}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeRun(t, c.shape)
			fromFile, inMemory := evidence.New(), evidence.New()
			for _, ev := range []*evidence.Evidence{fromFile, inMemory} {
				ev.Run.StartedAt = t0
				ev.Run.Phases = c.phases
			}
			if err := FillFromFile(fromFile, p, ""); err != nil {
				t.Fatal(err)
			}
			ss, err := ReadSamples(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := FillSamples(inMemory, ss, ""); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(fromFile)
			b, _ := json.Marshal(inMemory)
			if !bytes.Equal(a, b) {
				t.Fatalf("streamed and in-memory evidence differ:\n%.2000s\n%.2000s", a, b)
			}
			st := fromFile.Stage(evidence.StageServingCache)
			if len(st.Signals) == 0 {
				t.Fatal("no stage-4 signal")
			}
			// Running is 40+e on engine e: the worst replica's mean is 40+engines-1.
			want := float64(40 + c.shape.Engines - 1)
			found := false
			for _, s := range st.Signals {
				if s.Name == evidence.SigRunningMean && s.Labels == nil {
					found = true
					if s.Value != want {
						t.Errorf("%s = %g, want %g", s.Name, s.Value, want)
					}
				}
			}
			if !found {
				t.Errorf("no %s", evidence.SigRunningMean)
			}
			drawn := map[string]bool{}
			for _, s := range st.Series {
				if len(s.T) > maxChartPoints || (s.Min != nil && (len(s.Min) != len(s.T) || len(s.Max) != len(s.T))) {
					t.Errorf("%s: %d points, %d min, %d max", s.Name, len(s.T), len(s.Min), len(s.Max))
				}
				drawn[s.Labels["engine"]] = true
			}
			if c.shape.Engines > maxChartReplicas {
				other := fmt.Sprintf("other %d (max)", c.shape.Engines-maxChartReplicas)
				if !drawn[other] || len(drawn) != maxChartReplicas+2 {
					t.Errorf("replicas drawn %v, want %d and %q", drawn, maxChartReplicas, other)
				}
				if !strings.Contains(strings.Join(st.Notes, "\n"), "drawn one by one") {
					t.Errorf("no note on the fold: %q", st.Notes)
				}
			}
		})
	}
}

// A line past MaxSampleLine, or holding more objects than a page, is refused naming the
// file and line, before it is decoded; a torn last line is still skipped.
func TestSampleLineBounds(t *testing.T) {
	good := `{"t":"2026-01-01T00:00:00Z","ep":"e","kind":"engine","ok":true}` + "\n"
	for _, c := range []struct {
		name, body, want string
	}{
		{"long line", good + `{"t":"2026-01-01T00:00:01Z","ep":"e","err":"` + strings.Repeat("x", MaxSampleLine) + `"}` + "\n", ":2: line longer than 16 MiB"},
		{"long last line", good + good + strings.Repeat(" ", MaxSampleLine+10), ":3: line longer than 16 MiB"},
		{"many objects", good + `{"t":"2026-01-01T00:00:01Z","ep":"e","fam":[{"n":"x","m":[` + strings.Repeat(`{},`, maxLineObjects) + `{}]}]}` + "\n", ":2: more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "metrics.jsonl")
			if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadSamples(p)
			if err == nil || !strings.Contains(err.Error(), p+c.want) {
				t.Fatalf("ReadSamples: %v, want %q", err, p+c.want)
			}
			ev := evidence.New()
			if err := FillFromFile(ev, p, ""); err == nil || !strings.Contains(err.Error(), p+c.want) {
				t.Fatalf("FillFromFile: %v, want %q", err, p+c.want)
			}
		})
	}
	// Braces inside strings are not objects.
	body := good + `{"t":"2026-01-01T00:00:01Z","ep":"e","err":"` + strings.Repeat(`{`, maxLineObjects+5) + `"}` + "\n"
	if ss, err := DecodeSamples(strings.NewReader(body)); err != nil || len(ss) != 2 {
		t.Fatalf("%d samples, %v", len(ss), err)
	}
}

// A page whose JSON line the reader would refuse is written as a failed sample (a gap
// naming the bound), so pel never writes what it cannot read back.
func TestWriterKeepsOversizedPageAsGap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	w, err := CreateWriter(p)
	if err != nil {
		t.Fatal(err)
	}
	var ms []Metric
	for i := 0; i < maxLineObjects; i++ {
		v := Num(i)
		ms = append(ms, Metric{Labels: map[string]string{"i": fmt.Sprint(i)}, V: &v})
	}
	if err := w.Write(&Sample{T: t0, Endpoint: "e", Kind: KindEngine, OK: true, Families: []Family{{Name: "g", Type: "gauge", Metrics: ms}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ss, err := ReadSamples(p)
	if err != nil || len(ss) != 1 {
		t.Fatalf("%d samples, %v", len(ss), err)
	}
	if ss[0].OK || !strings.Contains(ss[0].Err, "MaxSampleLine") || len(ss[0].Families) != 0 {
		t.Errorf("sample ok=%v err=%q with %d families", ss[0].OK, ss[0].Err, len(ss[0].Families))
	}
}

// Endpoints keep the order they first appear in the samples (a file's order), whatever
// their times: the first engine endpoint names the run's engine.
func TestEndpointOrderIsFirstAppearance(t *testing.T) {
	one := Num(1)
	sample := func(ep, fam string, s int) Sample {
		return Sample{T: t0.Add(time.Duration(s) * time.Second), Endpoint: ep, Kind: KindEngine, OK: true,
			Families: []Family{{Name: fam, Type: "gauge", Metrics: []Metric{{V: &one}}}}}
	}
	var ss []Sample
	for s := 5; s < 10; s++ {
		ss = append(ss, sample("http://b/metrics", "sglang:num_running_reqs", s))
	}
	for s := 0; s < 10; s++ {
		ss = append(ss, sample("http://a/metrics", "vllm:num_requests_running", s))
	}
	ev := evidence.New()
	ev.Run.StartedAt = t0
	if err := FillSamples(ev, ss, ""); err != nil {
		t.Fatal(err)
	}
	if ev.Run.Engine != "sglang" {
		t.Errorf("engine %q, want the first endpoint's (sglang)", ev.Run.Engine)
	}
}

// A sample older than its endpoint's previous one (a file no single sampler wrote) is left
// out of the streamed read, with a note; the others are read.
func TestStreamedOutOfOrderSample(t *testing.T) {
	var b bytes.Buffer
	for _, s := range []float64{0, 1, 2, 1.5, 3} {
		v := Num(10 * s)
		line, _ := json.Marshal(&Sample{T: t0.Add(time.Duration(s * float64(time.Second))), Endpoint: "http://e/metrics", Kind: KindEngine, OK: true, Engine: "vllm",
			Families: []Family{{Name: "vllm:num_requests_running", Type: "gauge", Metrics: []Metric{{V: &v}}}}})
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := evidence.New()
	ev.Run.StartedAt = t0
	if err := FillFromFile(ev, p, ""); err != nil {
		t.Fatal(err)
	}
	st := ev.Stage(evidence.StageServingCache)
	if !strings.Contains(strings.Join(st.Notes, "\n"), "1 samples older than the one before them left out") {
		t.Errorf("no note: %q", st.Notes)
	}
	found := false
	for _, s := range st.Signals {
		if s.Name == evidence.SigRunningMean {
			found = true
			if s.Value != 15 {
				t.Errorf("%s = %g, want 15 (samples at 0, 1, 2, 3 s)", s.Name, s.Value)
			}
		}
	}
	if !found {
		t.Errorf("no %s", evidence.SigRunningMean)
	}
}
