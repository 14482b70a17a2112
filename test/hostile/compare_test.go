package hostile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/scrape"
)

// compareContract is the contract both sides of a long comparison ran.
const compareContract = `name: long
version: 1
model: m
arrival: {process: constant, rate: 100}
duration: 1h
timeout: 60s
tasks:
  - {name: chat, prompt_tokens: 16, output_tokens: 16}
`

// longRun describes a synthetic run directory written one record at a time (the test holds
// one record, never the run).
type longRun struct {
	tasks    int
	interval time.Duration // between scheduled arrivals
	tokens   int           // output tokens per task, one per chunk...
	perChunk int           // ...unless a chunk claims this many (0: one)
	seed     uint64
	scale    float64 // latency multiplier
	// series, when above 0, adds a metrics.jsonl sampled every second over the run, each
	// sample holding this many engine series.
	series int
}

func (l longRun) write(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "contract.yaml", compareContract)
	w, err := record.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(l.seed, 7))
	lat := func(median time.Duration) time.Duration {
		return time.Duration(float64(median) * l.scale * (0.5 + rng.Float64()))
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range l.tasks {
		sched := start.Add(time.Duration(i) * l.interval)
		ttft := lat(100 * time.Millisecond)
		r := record.Record{Seq: i, ID: fmt.Sprintf("t-%d", i), Task: "chat", Phase: record.PhaseWarm,
			ScheduledAt: sched, SentAt: sched, FirstSentAt: sched, HeadersAt: sched.Add(ttft / 2), FirstTokenAt: sched.Add(ttft),
			PromptTokens: 16, OutputTokens: l.tokens, TokenSource: record.TokensUsage, Attempts: 1, Status: record.StatusOK,
			FinishReason: "length", Accepted: true, PromptHash: fmt.Sprintf("%016x%016x", l.seed, i)}
		at := ttft
		for k := range l.tokens {
			if k > 0 {
				at += lat(10 * time.Millisecond)
			}
			r.ChunkUS = append(r.ChunkUS, at.Microseconds())
			r.ChunkTokens = append(r.ChunkTokens, max(1, l.perChunk*min(k, 1)))
		}
		r.LastTokenAt = sched.Add(at)
		r.DoneAt = r.LastTokenAt.Add(time.Millisecond)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if l.series > 0 {
		l.writeMetrics(t, dir, start, start.Add(time.Duration(l.tasks)*l.interval))
	}
	return dir
}

// writeMetrics writes one engine sample a second from..to, each with l.series counter and
// gauge series (request counters per model and status, KV usage per rank), one at a time.
func (l longRun) writeMetrics(t *testing.T, dir string, from, to time.Time) {
	t.Helper()
	w, err := scrape.CreateWriter(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	labels := make([]map[string]string, l.series)
	for i := range labels {
		labels[i] = map[string]string{"rank": fmt.Sprint(i % 64), "bucket": fmt.Sprint(i)}
	}
	s := scrape.Sample{Endpoint: "http://127.0.0.1:8000/metrics", Kind: scrape.KindEngine, Origin: scrape.OriginScrape, OK: true}
	counter := make([]scrape.Metric, l.series/2)
	gauge := make([]scrape.Metric, l.series-l.series/2)
	step := 0
	for at := from; !at.After(to); at = at.Add(time.Second) {
		step++
		for i := range counter {
			v := scrape.Num(step * (i + 1))
			counter[i] = scrape.Metric{Labels: labels[i], V: &v}
		}
		for i := range gauge {
			v := scrape.Num(float64(i%100) / 100)
			gauge[i] = scrape.Metric{Labels: labels[len(counter)+i], V: &v}
		}
		s.T = at
		s.Families = []scrape.Family{
			{Name: "vllm:request_success_total", Type: "counter", Metrics: counter},
			{Name: "vllm:gpu_cache_usage_perc", Type: "gauge", Metrics: gauge},
		}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
}

// compareJSON runs pel compare --json on two run directories and checks the bounded
// comparison still counted every task: it ends by itself under the memory limit, with a
// verdict (exit 0 or 1), and both sides' task counts are the files'.
func compareJSON(t *testing.T, base, cand string, tasks int, extra ...string) result {
	t.Helper()
	res := pel(t, 20*time.Minute, nil, append([]string{"compare", "--json", base, cand}, extra...)...)
	if res.code != 0 && res.code != 1 {
		t.Fatalf("exit %d, want a verdict (0 or 1): %s", res.code, tail(res.stderr))
	}
	var out compare.Result
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("compare --json: %v: %.500s", err, res.stdout)
	}
	if b, c := out.Base.Tasks[record.PhaseWarm], out.Candidate.Tasks[record.PhaseWarm]; b != tasks || c != tasks {
		t.Errorf("compared %d and %d warm tasks, want %d on each side (every record counted)", b, c, tasks)
	}
	if len(out.Phases) == 0 || out.Phases[0].BaseCompleted != tasks {
		t.Errorf("phases %+v: want %d completed base tasks", out.Phases, tasks)
	}
	return res
}

// pel compare of two 300 k-task runs (1.81 GB while every record was held): the comparison
// streams each run into a bounded summary.
func TestCompareTwoLongRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two 300 k-task runs")
	}
	tmp := t.TempDir()
	base := longRun{tasks: 300_000, interval: 10 * time.Millisecond, tokens: 16, seed: 1, scale: 1}.write(t, filepath.Join(tmp, "base"))
	cand := longRun{tasks: 300_000, interval: 10 * time.Millisecond, tokens: 16, seed: 2, scale: 1.05}.write(t, filepath.Join(tmp, "cand"))
	res := compareJSON(t, base, cand, 300_000)
	// A 5% slower candidate over 300 k tasks is a significant TTFT change.
	if !strings.Contains(res.stdout, `"change": "worse"`) {
		t.Errorf("a 5%% slower candidate shows no worse row: %.2000s", res.stdout)
	}
}

// Records whose chunks claim 2^62 tokens each (a count no server streams in one event): the
// reader caps a record's tokens at record.MaxTokens, and a comparison counts a chunk's equal
// latencies once, so 2,000 such records (2^35 inter-token latencies) finish quickly in
// bounded memory instead of being expanded one value at a time.
func TestCompareChunksClaimingHugeTokens(t *testing.T) {
	tmp := t.TempDir()
	base := longRun{tasks: 2000, interval: 100 * time.Millisecond, tokens: 4, perChunk: 1 << 62, seed: 3, scale: 1}.write(t, filepath.Join(tmp, "base"))
	compareJSON(t, base, base, 2000)
}

// pel compare on a one-hour, 3,000-series run (out of memory at 2,128 MB in
// resample.NewClustered): 36,000 tasks of 256 tokens (9.2 M inter-token latencies) and a
// metrics.jsonl of 3,601 samples × 3,000 series, compared with itself.
func TestCompareOneHourRun(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a one-hour run with a 3,000-series metrics.jsonl")
	}
	dir := longRun{tasks: 36_000, interval: 100 * time.Millisecond, tokens: 256, seed: 4, scale: 1, series: 3000}.write(t, filepath.Join(t.TempDir(), "run"))
	if st, err := os.Stat(filepath.Join(dir, "metrics.jsonl")); err != nil || st.Size() < 200<<20 {
		t.Fatalf("metrics.jsonl: %v (size %v): want the size of a one-hour 3,000-series run", err, st)
	}
	compareJSON(t, dir, dir, 36_000)
}
