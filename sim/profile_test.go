package sim

import (
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/trace"
)

// Slow stretches each step's span by exactly its factor: the gaps between one sequence's
// tokens (a decode step each) are factor times those of the same engine unslowed.
func TestEngineSlowStretchesSteps(t *testing.T) {
	for _, slow := range []float64{1.25, 2} {
		gaps := func(f float64) []float64 {
			e := testEngine(t, "h100-sxm", "llama-3-8b", EngineConfig{}, DefaultCostParams())
			e.Slow = f
			sink := newRecSink()
			s := submit(e, sink, 100, 20, 1, 0)
			drain(t, e, 100)
			ts := sink.times[s]
			out := make([]float64, 0, len(ts))
			for i := 1; i < len(ts); i++ {
				out = append(out, ts[i]-ts[i-1])
			}
			return out
		}
		base, slowed := gaps(1), gaps(slow)
		if len(base) != 19 || len(slowed) != len(base) {
			t.Fatalf("slow %g: %d and %d gaps, want 19 each", slow, len(base), len(slowed))
		}
		for i := range base {
			if r := slowed[i] / base[i]; math.Abs(r-slow) > 1e-9 {
				t.Errorf("slow %g: gap %d is ×%.6f", slow, i, r)
			}
		}
	}
}

func TestProfileOptions(t *testing.T) {
	sc, err := LoadScenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"below one", Options{ProfileDir: dir, ProfileSlowdown: 0.5}, "outside [1, 10]"},
		{"above ten", Options{ProfileDir: dir, ProfileSlowdown: 11}, "outside [1, 10]"},
		{"NaN", Options{ProfileDir: dir, ProfileSlowdown: math.NaN()}, "outside [1, 10]"},
		{"missing dir", Options{ProfileDir: filepath.Join(dir, "none")}, "profile directory"},
		{"a file", Options{ProfileDir: file}, "is not a directory"},
	} {
		_, err := NewServer(sc, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func postEmpty(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The profiler control answers as vLLM's does (404 unless the engine was started with a
// profiler directory; 200 for start and stop), refuses a second start or a stop without a
// start, and the stop leaves one complete Kineto trace that pel's trace package reads.
func TestProfileEndpoints(t *testing.T) {
	off := startSim(t, "healthy", 1, nil)
	if code := postEmpty(t, off.URL()+"/start_profile"); code != http.StatusNotFound {
		t.Errorf("start without a profile directory: HTTP %d, want 404", code)
	}

	sc, err := LoadScenario("healthy")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv, err := NewServer(sc, Options{Seed: 1, Hostname: "testhost", ProfileDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if code := postEmpty(t, srv.URL()+"/stop_profile"); code != http.StatusConflict {
		t.Errorf("stop before start: HTTP %d, want 409", code)
	}
	if code := postEmpty(t, srv.URL()+"/start_profile"); code != http.StatusOK {
		t.Fatalf("start: HTTP %d", code)
	}
	if code := postEmpty(t, srv.URL()+"/start_profile"); code != http.StatusConflict {
		t.Errorf("second start: HTTP %d, want 409", code)
	}
	// A few requests so that the profiled steps have kernels.
	for i := range 3 {
		if r := complete(t, srv.URL(), 40, 8, true, string(rune('a'+i))); r.status != http.StatusOK {
			t.Fatalf("request %d: HTTP %d", i, r.status)
		}
	}
	if code := postEmpty(t, srv.URL()+"/stop_profile"); code != http.StatusOK {
		t.Fatalf("stop: HTTP %d", code)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), ".pt.trace.json") {
		t.Fatalf("profile directory holds %v, want one .pt.trace.json", ents)
	}
	r, err := trace.Analyze(filepath.Join(dir, ents[0].Name()), trace.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ranks) != 1 || r.Ranks[0].GPUEvents == 0 {
		t.Fatalf("trace has %d ranks, GPU events %v", len(r.Ranks), r.Ranks)
	}
	if srv.prof.factor() != 1 {
		t.Errorf("steps still slowed (×%g) after the stop", srv.prof.factor())
	}
}
