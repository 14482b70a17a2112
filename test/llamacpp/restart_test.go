package llamacpp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// busyFell reports whether llamacpp:n_busy_slots_per_decode went down between two samples of
// dir/metrics.jsonl: llama.cpp types it as a counter, but it is an average.
func busyFell(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	prev := -1.0
	for sc.Scan() {
		var s struct {
			Fam []struct {
				N string `json:"n"`
				M []struct {
					V *float64 `json:"v"`
				} `json:"m"`
			} `json:"fam"`
		}
		if json.Unmarshal(sc.Bytes(), &s) != nil {
			continue
		}
		for _, fam := range s.Fam {
			if fam.N == "llamacpp:n_busy_slots_per_decode" && len(fam.M) == 1 && fam.M[0].V != nil {
				v := *fam.M[0].V
				if prev >= 0 && v < prev {
					return true
				}
				prev = v
			}
		}
	}
	return false
}

// TestMultiSlotServersAreNotRestarted: two identical llama-servers with four slots each, one run
// of the same contract against each. Neither restarted, so pel compare finds no restart on
// either side, although the busy-slots average (typed counter) falls while they serve.
func TestMultiSlotServersAreNotRestarted(t *testing.T) {
	a, b := start(t, "-np", "4", "-c", "4096"), start(t, "-np", "4", "-c", "4096")
	// Bursty arrivals: bursts fill the four slots, lulls leave one busy, so the average of
	// busy slots per decode rises and falls inside the window.
	c := `name: twins
version: 1
arrival: {process: gamma, rate: 3, cv: 3}
duration: 15s
warmup: 2s
seed: 5
tasks:
  - name: chat
    prompt_tokens: {dist: uniform, min: 20, max: 120}
    output_tokens: {dist: uniform, min: 4, max: 48}
    ignore_eos: true
`
	ra, rb := pel(t, a.url, a.url+"/metrics", c), pel(t, b.url, b.url+"/metrics", c)
	if ra.ev == nil || rb.ev == nil {
		t.Fatalf("runs: exit %d, %d\n%s\n%s", ra.code, rb.code, ra.stdout, rb.stdout)
	}
	if !busyFell(t, ra.dir) && !busyFell(t, rb.dir) {
		t.Fatal("n_busy_slots_per_decode never fell on either server: the case does not hold what it tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, pelBin, "compare", ra.dir, rb.dir, "--json").Output()
	var res struct {
		Preconditions []struct {
			Name, Base, Candidate, Reason string
			OK, Known, Blocking           bool
		} `json:"preconditions"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pel compare --json: %v\n%s", err, out)
	}
	for _, p := range res.Preconditions {
		if p.Name != "engine_restarts" {
			continue
		}
		if !p.Known || !p.OK || p.Base != "0" || p.Candidate != "0" {
			t.Errorf("engine_restarts: %+v, want 0 on both sides", p)
		}
		return
	}
	t.Errorf("no engine_restarts precondition in %s", strings.TrimSpace(string(out)))
}
