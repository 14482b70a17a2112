package importer

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// importRun imports file and rebuilds stage 1 from the directory, as pel analyze does.
func importRun(t *testing.T, format, file string) (*Result, *evidence.Evidence, []record.Record) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Import(format, file, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := rundir.Rebuild(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Contract.Description, "inferred by pel import") {
		t.Errorf("contract not marked inferred: %q", d.Contract.Description)
	}
	var recs []record.Record
	if err := d.Each(func(r *record.Record) error { recs = append(recs, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	return res, ev, recs
}

// bracket is the interval both estimators of the q-th percentile of xs lie in. The tools
// (numpy's default percentile, which AIPerf and vllm bench serve call) interpolate
// linearly between the order statistics x[a] and x[a+1], a = ⌊(n−1)q⌋ (0-based); pel's
// estimator (package quantile) returns the nearest-rank order statistic x[⌈qn⌉−1] as
// recorded: held at the lower bound of its HDR bucket (3 significant digits: at most 0.1%
// below it), at µs resolution. So the two may differ by at most the spread of those order
// statistics, less 0.1% and 1 µs below it.
func bracket(xs []float64, q float64) (lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	a := int(math.Floor(float64(n-1) * q / 100))
	k := max(0, int(math.Ceil(q/100*float64(n)))-1)
	lo = min(s[a], s[k])*0.999 - 0.001
	hi = max(s[min(a+1, n-1)], s[k]) + 0.001
	return lo, hi
}

// TestAIPerfRun1MatchesItsSummary: the import's TTFT, ITL (per chunk), TPOT and E2E
// percentiles are AIPerf's own (profile_export_aiperf.json, the figures its console
// table prints) within the two estimators' difference, over the same requests.
func TestAIPerfRun1MatchesItsSummary(t *testing.T) {
	file := "testdata/aiperf-run1/profile_export.jsonl"
	res, ev, _ := importRun(t, "aiperf", file)
	if res.Requests != 100 || res.OK != 89 {
		t.Errorf("requests %d ok %d, want 100 and 89 (11 cancelled by --request-cancellation-rate)", res.Requests, res.OK)
	}
	// AIPerf's own per-request values, read here without the importer.
	per := map[string][]float64{}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			Metrics map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"metrics"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Error != nil {
			continue
		}
		for k, m := range line.Metrics {
			var v float64
			var vs []float64
			if json.Unmarshal(m.Value, &v) == nil {
				per[k] = append(per[k], v)
			} else if json.Unmarshal(m.Value, &vs) == nil {
				per[k] = append(per[k], vs...)
			}
		}
	}
	raw, err := os.ReadFile("testdata/aiperf-run1/profile_export_aiperf.json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Records map[string]struct {
			Count int     `json:"count"`
			P50   float64 `json:"p50"`
			P95   float64 `json:"p95"`
			P99   float64 `json:"p99"`
		} `json:"records"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	l := ev.Workload.Latency
	for _, m := range []struct {
		pel   evidence.Quantiles
		tool  string // AIPerf's metric
		pelIs string
	}{
		{l.TTFTms, "ttft", "TTFT"},
		{l.E2Ems, "request_latency", "E2E"},
		{l.ITLms, "inter_chunk_latency", "ITL (one token per chunk)"},
		{l.TPOTms, "inter_token_latency", "TPOT (AIPerf's ITL is a request's mean gap)"},
	} {
		s := sum.Records[m.tool]
		if m.pel.N != s.Count || len(per[m.tool]) != s.Count {
			t.Errorf("%s: pel counts %d, AIPerf's summary %d, its records %d", m.tool, m.pel.N, s.Count, len(per[m.tool]))
			continue
		}
		for _, p := range []struct {
			q          float64
			pel, aiper float64
		}{{50, m.pel.P50, s.P50}, {95, m.pel.P95, s.P95}, {99, m.pel.P99, s.P99}} {
			lo, hi := bracket(per[m.tool], p.q)
			if p.aiper < lo || p.aiper > hi {
				t.Errorf("%s p%g: AIPerf's %.3f outside [%.3f, %.3f]: the bracket misreads its estimator", m.tool, p.q, p.aiper, lo, hi)
			}
			if p.pel < lo || p.pel > hi {
				t.Errorf("%s p%g: pel's %s %.3f outside [%.3f, %.3f] (AIPerf %.3f)", m.tool, p.q, m.pelIs, p.pel, lo, hi, p.aiper)
			}
		}
	}
	if ev.Workload.Requests != 100 || ev.Workload.Cancelled != 11 {
		t.Errorf("workload: %d requests, %d cancelled; want 100 and 11", ev.Workload.Requests, ev.Workload.Cancelled)
	}
	if !hasNote(ev, "not in the file, not measured: server metrics") || !hasNote(ev, "profile_export_aiperf.json") {
		t.Errorf("notes do not name what is missing: %q", ev.Run.Notes)
	}
	c, err := contract.Load(filepath.Join(res.Dir, rundir.ContractFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.Arrival.Process != contract.Closed || c.Arrival.Concurrency != 100 || c.Model != "openai/gpt-oss-20b" || c.Requests != 100 {
		t.Errorf("inferred contract: %+v, model %q", c.Arrival, c.Model)
	}
	if c.Tasks[0].PromptTokens.Kind != contract.DistFixed || c.Tasks[0].PromptTokens.Value != 550 {
		t.Errorf("prompt lengths: %s, want 550 (every request's input_sequence_length)", c.Tasks[0].PromptTokens)
	}
}

// TestAIPerfDocRecords: the two records of AIPerf's own documentation (one streamed, one
// cancelled) import to the values they state.
func TestAIPerfDocRecords(t *testing.T) {
	_, ev, recs := importRun(t, "aiperf", "testdata/aiperf-doc/profile_export.jsonl")
	if len(recs) != 2 || recs[0].Status != record.StatusOK || recs[1].Status != record.StatusCancelled {
		t.Fatalf("records: %+v", recs)
	}
	r := recs[0]
	ttft, _ := r.TTFT()
	e2e, _ := r.E2E()
	tpot, _ := r.TPOT()
	for _, c := range []struct {
		name      string
		got, want float64 // ms
	}{
		{"ttft", ms1(ttft), 255.886568}, {"request_latency", ms1(e2e), 297.525228}, {"inter_token_latency", ms1(tpot), 5.2048325},
		{"time to headers (request_ack_ns)", ms1(r.HeadersAt.Sub(r.SentAt)), 117.830613},
	} {
		if math.Abs(c.got-c.want) > 0.002 {
			t.Errorf("%s: %.4f ms, the record says %.4f", c.name, c.got, c.want)
		}
	}
	if r.PromptTokens != 550 || r.OutputTokens != 9 || len(r.ChunkUS) != 9 {
		t.Errorf("tokens %d/%d, chunks %d; want 550, 9, 9", r.PromptTokens, r.OutputTokens, len(r.ChunkUS))
	}
	if q := ev.Workload.Latency.TTFTms; q.N != 1 || math.Abs(q.P99-255.887) > 0.3 {
		t.Errorf("TTFT quantiles %+v", q)
	}
}

func ms1(d time.Duration) float64 { return float64(d) / 1e6 }

// TestGuideLLMBenchmarks: both published versions of GuideLLM's stripped benchmark import
// to the request they keep, its timings as GuideLLM computed them, and say that the file
// keeps 1 of the benchmark's 46 successful requests.
func TestGuideLLMBenchmarks(t *testing.T) {
	for _, file := range []string{"testdata/guidellm/benchmarks-2025-06.json", "testdata/guidellm/benchmarks-2025-07.json"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, ev, recs := importRun(t, "guidellm", file)
			if len(recs) != 1 {
				t.Fatalf("%d records, want the 1 kept", len(recs))
			}
			r := recs[0]
			ttft, _ := r.TTFTFromSent()
			tpot, _ := r.TPOT()
			e2e := r.DoneAt.Sub(r.SentAt)
			lag, _ := r.ScheduleLag()
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"time_to_first_token_ms", ms1(ttft), 21.281957626342773},
				{"inter_token_latency_ms", ms1(tpot), 5.258346167136365},
				{"request_latency (s)", e2e.Seconds(), 0.6891846656799316},
				{"request_start - targeted_start_time (ms)", ms1(lag), (1749157168.1827004 - 1749157168.179883) * 1000},
			} {
				if math.Abs(c.got-c.want) > 0.002 {
					t.Errorf("%s: %.5f, GuideLLM's %.5f", c.name, c.got, c.want)
				}
			}
			if r.PromptTokens != 257 || r.OutputTokens != 128 {
				t.Errorf("tokens %d/%d, want 257/128", r.PromptTokens, r.OutputTokens)
			}
			if !hasNote(ev, "keeps 1 of the benchmark's 46 successful requests") {
				t.Errorf("sampling not named: %q", ev.Run.Notes)
			}
		})
	}
}

func hasNote(ev *evidence.Evidence, s string) bool {
	return slices.ContainsFunc(ev.Run.Notes, func(n string) bool { return strings.Contains(n, s) })
}

// Constructed files (no published vllm bench serve --save-detailed or genai-perf profile
// export was found to include): the field layout is the tools' own; the values are chosen
// here, so the expected figures are known exactly.
const vllmDetailed = `{"date": "20250530-203806", "backend": "vllm", "model_id": "m", "num_prompts": 3,
 "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 2, "duration": 1.5, "completed": 2,
 "mean_ttft_ms": NaN, "input_lens": [10, 12, 11], "output_lens": [3, 4, 0],
 "ttfts": [0.1, 0.2, 0.0], "itls": [[0.01, 0.03], [0.02, 0.02, 0.02], []],
 "errors": ["", "", "ClientConnectorError: Cannot connect to host"]}`

func TestVLLMDetailed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vllm.json")
	os.WriteFile(file, []byte(vllmDetailed), 0o600)
	_, ev, recs := importRun(t, "vllm-bench", file)
	if len(recs) != 3 || recs[2].Status != record.StatusConnError || recs[2].Error == "" {
		t.Fatalf("records: %+v", recs)
	}
	var itls []float64
	for _, r := range recs {
		r.ITLs(func(d time.Duration) { itls = append(itls, ms1(d)) })
	}
	if !slices.Equal(itls, []float64{10, 30, 20, 20, 20}) {
		t.Errorf("ITLs %v, want the file's itls in ms", itls)
	}
	if e2e, _ := recs[1].E2E(); ms1(e2e) != 260 {
		t.Errorf("E2E %v, want ttft + the sum of itls, 260 ms", e2e)
	}
	if !hasNote(ev, "when each request was sent") {
		t.Errorf("missing send times not named: %q", ev.Run.Notes)
	}
	// request_rate inf with max_concurrency 2: all three due at once, the first two sent
	// at once, the third when the first's slot came free (its ttft + itls, 140 ms).
	t0 := recs[0].SentAt
	for i, want := range []time.Duration{0, 0, 140 * time.Millisecond} {
		if sent := recs[i].SentAt.Sub(t0); sent != want || !recs[i].ScheduledAt.Equal(t0) {
			t.Errorf("request %d sent at +%v, due at +%v; want sent at +%v, due at once", i, sent, recs[i].ScheduledAt.Sub(t0), want)
		}
	}
	if q := recs[2].ClientQueueUS; q != 140_000 {
		t.Errorf("the third request's wait for a slot: %d µs, want 140000", q)
	}
}

const genaiperfExport = `{"experiments": [{"experiment": {"mode": "concurrency", "value": 2},
 "requests": [{"timestamp": 1000000000, "request_inputs": {"payload": "{}"},
   "response_timestamps": [1100000000, 1120000000, 1150000000, 1150000100],
   "response_outputs": [{"response": "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"},
     {"response": "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"},
     {"response": "data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}]}\n\n"},
     {"response": "data: [DONE]\n\n"}]}]}],
 "version": "", "service_kind": "openai", "endpoint": "v1/chat/completions"}`

func TestGenAIPerf(t *testing.T) {
	file := filepath.Join(t.TempDir(), "profile_export.json")
	os.WriteFile(file, []byte(genaiperfExport), 0o600)
	_, _, recs := importRun(t, "genai-perf", file)
	r := recs[0]
	ttft, _ := r.TTFT()
	if len(recs) != 1 || r.OutputTokens != 3 || ms1(ttft) != 100 || len(r.ChunkUS) != 3 || r.ChunkUS[2] != 150000 {
		t.Errorf("record: %+v", r)
	}
}

// TestBadInput: each bad file is refused as bad input naming the file and the field, and
// leaves the directory empty.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		format, data, want string
	}{
		{"vllm-bench", `{"ttfts": [0.1], "input_lens": [1], "output_lens": [1, 2], "itls": [[]]}`, "output_lens: 2 entries"},
		{"vllm-bench", `{"duration": 3}`, "ttfts: no per-request arrays"},
		{"vllm-bench", `{"ttfts": [-1], "input_lens": [1], "output_lens": [1], "itls": [[]]}`, "ttfts[0]"},
		{"vllm-bench", `{"ttfts": [0.1], "input_lens": [1.5], "output_lens": [1], "itls": [[]]}`, "input_lens[0]: 1.5 is not a token count"},
		{"vllm-bench", `{"ttfts": [0.1], "input_lens": [1], "output_lens": [1], "itls": [[0.1, "x"]]}`, "not a vllm bench serve result"},
		{"vllm-bench", `{"ttfts": [0.1, "x", 0.2], "input_lens": [1, 1, 1], "output_lens": [1, 1, 1], "itls": [[], [], []]}`, "ttfts[1], near byte 19: a JSON string where the file format wants a number"},
		{"vllm-bench", `{"ttfts": [0.1, 0.2], "input_lens": [1, 1`, "the file ends at byte 41 inside its JSON value"},
		{"vllm-bench", `{"ttfts": [0.1, 0.2], "input_lens": [1, 1], "output_lens": [1, 3], "itls": [[], [1800, 1900]]}`, "itls[1]: the request's first token and gaps add to 1h1m40s, past the 1h0m0s"},
		{"vllm-bench", `{"ttfts": [0.1, 0.2], "input_lens": [1, 1], "output_lens": [1, 70000], "itls": [[], [` + strings.Repeat("0.001,", record.MaxChunkTimings) + `0.001]]}`, "itls[1]: 65537 inter-token latencies, over the 65535"},
		{"vllm-bench", `{"ttfts": [0.1], "input_lens": [1], "output_lens": [1], "itls": [[]], "request_rate": "fast"}`, "request_rate"},
		{"vllm-bench", `{"ttfts": [0.1], "input_lens": [1], "output_lens": [1], "itls": [[]]} {}`, "data after"},
		{"aiperf", `{"metadata": {}, "metrics": {}}`, ":1: metadata.request_start_ns"},
		{"aiperf", "\n" + `{"metadata": {"request_start_ns": 5}, "metrics": {"ttft": {"value": "x", "unit": "ms"}, "request_latency": {"value": 1, "unit": "ms"}}}`, ":2: metrics.ttft.value"},
		{"aiperf", `{"metadata": {"request_start_ns": 5}, "metrics": {"request_latency": {"value": 1, "unit": "fortnights"}}}`, "metrics.request_latency: 1 fortnights"},
		{"aiperf", `{"metadata": {"request_start_ns": 5}, "metrics": {}}`, "metrics.request_latency: missing"},
		{"aiperf", `not json`, ":1: not an AIPerf record"},
		{"guidellm", `{"benchmarks": []}`, "benchmarks: empty"},
		{"guidellm", `{"benchmarks": [{"requests": {"successful": [{"scheduler_info": {"request_start": 5}, "prompt_tokens": -3}]}}]}`, "benchmarks[0].requests.successful[0].prompt_tokens"},
		{"guidellm", `{"benchmarks": [{"requests": {"successful": [{"scheduler_info": {"request_start": 0}}]}}]}`, "scheduler_info.request_start"},
		{"genai-perf", `{"experiments": [{"requests": [{"timestamp": 5, "response_timestamps": [4]}]}]}`, "experiments[0].requests[0].response_timestamps[0]"},
		{"genai-perf", `{"experiments": [{"requests": []}]}`, "no requests"},
		{"nosuch", `{}`, "unknown format"},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "in.json")
		os.WriteFile(file, []byte(tc.data), 0o600)
		out := filepath.Join(dir, "out")
		_, err := Import(tc.format, file, out, Options{})
		if err == nil || !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %.60s: error %v, want bad input containing %q", tc.format, tc.data, err, tc.want)
			continue
		}
		if tc.format != "nosuch" && !strings.HasPrefix(err.Error(), file) {
			t.Errorf("%s: error %q does not start with the file name", tc.format, err)
		}
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Errorf("%s: a failed import left %d files", tc.format, len(ents))
		}
	}
	// A directory with a run in it is not written into.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o600)
	if _, err := Import("aiperf", "testdata/aiperf-doc/profile_export.jsonl", dir, Options{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty -o: %v", err)
	}
}

func TestPythonJSON(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity], "s": "NaN and Infinity stay \" NaN"}`
	want := `{"a": null, "b": [null, null], "s": "NaN and Infinity stay \" NaN"}`
	if got := string(pythonJSON([]byte(in))); got != want {
		t.Errorf("got %s", got)
	}
}

func TestVLLMStartTimes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vllm.json")
	data := strings.Replace(vllmDetailed, `"errors"`, `"start_times": [353399.5, 353399.75, 353401.5], "errors"`, 1)
	os.WriteFile(file, []byte(data), 0o600)
	_, ev, recs := importRun(t, "vllm-bench", file)
	if d := recs[1].SentAt.Sub(recs[0].SentAt); d != 250*time.Millisecond {
		t.Errorf("second request sent %v after the first, want start_times' 250ms", d)
	}
	if hasNote(ev, "when each request was sent") || !hasNote(ev, "when each request was due") {
		t.Errorf("notes: %q", ev.Run.Notes)
	}
}

func TestImportStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "run")
	_, err := Import("aiperf", "testdata/aiperf-run1/profile_export.jsonl", dir, Options{Ctx: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("a stopped import left %d files", len(ents))
	}
}

// genaiperfSummary is what genai-perf printed of a run, read from the CSV it writes next to
// the profile export: per metric, its statistics by column name ("p99", "avg", ...).
func genaiperfSummary(t *testing.T, file string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	var header []string
	for _, row := range rows {
		if row[0] == "Metric" {
			header = row
			continue
		}
		m := map[string]float64{}
		for i := 1; i < len(row) && i < len(header); i++ {
			v, err := strconv.ParseFloat(strings.ReplaceAll(row[i], ",", ""), 64)
			if err != nil {
				t.Fatalf("%s: %s %s: %v", file, row[0], header[i], err)
			}
			m[header[i]] = v
		}
		out[row[0]] = m
	}
	return out
}

// TestGenAIPerfRealRuns: three genai-perf runs (non-streamed chat completions through
// OpenRouter, concurrency 1) import to the requests genai-perf counted, and pel's TTFT and
// E2E percentiles are genai-perf's printed request latency within the two estimators'
// difference. Each request has one response (the whole answer), so its first response is
// its last: genai-perf's TTFT is its request latency, and no inter-token latency exists.
func TestGenAIPerfRealRuns(t *testing.T) {
	for _, dir := range []string{"testdata/genaiperf-gpt-4o-mini", "testdata/genaiperf-claude-3-haiku", "testdata/genaiperf-llama-3.1-8b"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			file := filepath.Join(dir, "profile_export.json")
			res, ev, recs := importRun(t, "genai-perf", file)
			sum := genaiperfSummary(t, filepath.Join(dir, "profile_export_genai_perf.csv"))
			count := int(sum["Request Count (count)"]["Value"])
			if res.Requests != count || res.OK != count {
				t.Errorf("requests %d ok %d, genai-perf counted %d", res.Requests, res.OK, count)
			}
			// genai-perf's per-request latencies, read here without the importer.
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var export struct {
				Experiments []struct {
					Requests []struct {
						Timestamp          int64   `json:"timestamp"`
						ResponseTimestamps []int64 `json:"response_timestamps"`
					} `json:"requests"`
				} `json:"experiments"`
			}
			if err := json.Unmarshal(raw, &export); err != nil {
				t.Fatal(err)
			}
			var lat []float64
			for _, q := range export.Experiments[0].Requests {
				if len(q.ResponseTimestamps) != 1 {
					t.Fatalf("a request with %d responses: this run is not the non-streamed one the test reads", len(q.ResponseTimestamps))
				}
				lat = append(lat, float64(q.ResponseTimestamps[0]-q.Timestamp)/1e6)
			}
			tool := sum["Request Latency (ms)"]
			l := ev.Workload.Latency
			for _, m := range []struct {
				pel   evidence.Quantiles
				pelIs string
			}{{l.TTFTms, "TTFT"}, {l.E2Ems, "E2E"}} {
				if m.pel.N != count {
					t.Errorf("%s: pel counts %d, genai-perf %d", m.pelIs, m.pel.N, count)
					continue
				}
				for _, p := range []struct {
					q         float64
					pel, tool float64
				}{{50, m.pel.P50, tool["p50"]}, {95, m.pel.P95, tool["p95"]}, {99, m.pel.P99, tool["p99"]}} {
					lo, hi := bracket(lat, p.q)
					t.Logf("%s p%g: pel %.3f, genai-perf %.2f, bracket [%.3f, %.3f]", m.pelIs, p.q, p.pel, p.tool, lo, hi)
					// genai-perf prints two decimals: its figure may sit 0.005 ms outside.
					if p.tool < lo-0.005 || p.tool > hi+0.005 {
						t.Errorf("p%g: genai-perf's %.2f outside [%.3f, %.3f]: the bracket misreads its estimator", p.q, p.tool, lo, hi)
					}
					if p.pel < lo || p.pel > hi {
						t.Errorf("p%g: pel's %s %.3f outside [%.3f, %.3f] (genai-perf %.2f)", p.q, m.pelIs, p.pel, lo, hi, p.tool)
					}
				}
			}
			if l.ITLms.N != 0 || l.TPOTms.N != 0 {
				t.Errorf("ITL n=%d, TPOT n=%d: whole answers have no time between tokens", l.ITLms.N, l.TPOTms.N)
			}
			for _, r := range recs {
				if r.TokenSource != record.TokensUsage || r.OutputTokens < 1 || r.PromptTokens < 1 {
					t.Fatalf("record %d: tokens %d/%d from %q, want the usage block's", r.Seq, r.PromptTokens, r.OutputTokens, r.TokenSource)
				}
			}
			if !hasNote(ev, "answered whole, not streamed") {
				t.Errorf("whole answers not named: %q", ev.Run.Notes)
			}
			c, err := contract.Load(filepath.Join(res.Dir, rundir.ContractFile))
			if err != nil {
				t.Fatal(err)
			}
			if c.Arrival.Process != contract.Closed || c.Arrival.Concurrency != 1 {
				t.Errorf("inferred arrival %+v, want genai-perf's concurrency 1", c.Arrival)
			}
		})
	}
}

// TestVLLMRealRuns: three runs of vllm's benchmarks/benchmark_serving.py (its nightly
// serving suite, 200 ShareGPT prompts: Llama-3.3-70B on 8 A100s, Poisson at 1 req/s and all
// at once; DeepSeek-V2.5 on two such nodes, overloaded at 16 req/s) import to the requests it completed, and pel's TTFT, ITL and TPOT p50/p99 are the
// tool's own median and p99 (the figures its console table prints) within the two
// estimators' difference. The tool printed no E2E figure at that version (its default
// percentile metrics were ttft,tpot,itl): pel's E2E is checked against the bracket of each
// request's TTFT plus its ITLs, the latency the tool measured.
func TestVLLMRealRuns(t *testing.T) {
	for _, tc := range []struct {
		file    string
		model   string
		process string  // the inferred contract's arrival: --request-rate inf is a burst of every request
		rate    float64 // the run's --request-rate; 0: inf
		tasks   int     // the inferred contract's requests (a burst is bounded by its count)
	}{
		{"testdata/vllm-llama70b-tp8/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json", "meta-llama/Llama-3.3-70B-Instruct", contract.Poisson, 1, 200},
		{"testdata/vllm-llama70b-tp8/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json", "meta-llama/Llama-3.3-70B-Instruct", contract.Burst, 0, 200},
		// Overloaded: 16 req/s offered, 1.47 served, on two nodes without InfiniBand.
		{"testdata/vllm-deepseek-v2.5-tp8-pp2/serving_deepseek-ai-DeepSeek-V2.5_tp8_pp2_sharegpt_qps_16.json", "deepseek-ai/DeepSeek-V2.5", contract.Poisson, 16, 0},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			res, ev, _ := importRun(t, "vllm-bench", tc.file)
			raw, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			// The tool's per-request arrays and its summary, read here without the importer.
			var v struct {
				Completed  int         `json:"completed"`
				OutputLens []int       `json:"output_lens"`
				TTFTs      []float64   `json:"ttfts"`
				ITLs       [][]float64 `json:"itls"`
				MedianTTFT float64     `json:"median_ttft_ms"`
				P99TTFT    float64     `json:"p99_ttft_ms"`
				MedianTPOT float64     `json:"median_tpot_ms"`
				P99TPOT    float64     `json:"p99_tpot_ms"`
				MedianITL  float64     `json:"median_itl_ms"`
				P99ITL     float64     `json:"p99_itl_ms"`
				OutputTput float64     `json:"output_throughput"`
				ReqTput    float64     `json:"request_throughput"`
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if res.Requests != len(v.TTFTs) || res.OK != v.Completed {
				t.Errorf("requests %d ok %d; the file has %d, completed %d", res.Requests, res.OK, len(v.TTFTs), v.Completed)
			}
			// The rates the tool measured hold: the schedule is rebuilt from how the file
			// says requests were offered (all at once, or at the rate), not spread evenly.
			// 2%: the file's duration runs from its first send to its last end as pel's
			// does; the rest is the mean spacing standing in for the tool's random draw.
			w := ev.Workload
			for _, r := range []struct {
				name      string
				pel, tool float64
			}{{"output tokens/s", w.OutputTokensPerS, v.OutputTput}, {"requests/s", w.ThroughputRPS, v.ReqTput}} {
				if math.Abs(r.pel/r.tool-1) > 0.02 {
					t.Errorf("%s: pel %.3f, the file's %.3f (%+.1f%%)", r.name, r.pel, r.tool, 100*(r.pel/r.tool-1))
				}
			}
			var ttft, itl, tpot, e2e []float64
			for i, f := range v.TTFTs {
				sum := 0.0
				for _, g := range v.ITLs[i] {
					itl = append(itl, g*1000)
					sum += g
				}
				ttft = append(ttft, f*1000)
				e2e = append(e2e, (f+sum)*1000)
				if v.OutputLens[i] > 1 {
					tpot = append(tpot, sum*1000/float64(v.OutputLens[i]-1))
				}
			}
			l := ev.Workload.Latency
			for _, m := range []struct {
				name        string
				pel         evidence.Quantiles
				xs          []float64
				median, p99 float64
				printed     bool
			}{
				{"TTFT", l.TTFTms, ttft, v.MedianTTFT, v.P99TTFT, true},
				{"ITL", l.ITLms, itl, v.MedianITL, v.P99ITL, true},
				{"TPOT", l.TPOTms, tpot, v.MedianTPOT, v.P99TPOT, true},
				{"E2E", l.E2Ems, e2e, 0, 0, false},
			} {
				if m.pel.N != len(m.xs) {
					t.Errorf("%s: pel counts %d, the file %d", m.name, m.pel.N, len(m.xs))
					continue
				}
				for _, p := range []struct {
					q         float64
					pel, tool float64
				}{{50, m.pel.P50, m.median}, {99, m.pel.P99, m.p99}} {
					lo, hi := bracket(m.xs, p.q)
					if m.printed {
						t.Logf("%s p%g: pel %.3f, vllm %.3f, bracket [%.3f, %.3f]", m.name, p.q, p.pel, p.tool, lo, hi)
					} else {
						t.Logf("%s p%g: pel %.3f (vllm printed none), bracket [%.3f, %.3f]", m.name, p.q, p.pel, lo, hi)
					}
					if m.printed && (p.tool < lo || p.tool > hi) {
						t.Errorf("%s p%g: the tool's %.3f outside [%.3f, %.3f]: the bracket misreads its estimator", m.name, p.q, p.tool, lo, hi)
					}
					if p.pel < lo || p.pel > hi {
						t.Errorf("%s p%g: pel's %.3f outside [%.3f, %.3f] (vllm %.3f)", m.name, p.q, p.pel, lo, hi, p.tool)
					}
				}
			}
			c, err := contract.Load(filepath.Join(res.Dir, rundir.ContractFile))
			if err != nil {
				t.Fatal(err)
			}
			if c.Arrival.Process != tc.process || c.Arrival.Rate != tc.rate || c.Arrival.Concurrency != 0 || c.Model != tc.model ||
				(tc.tasks > 0 && c.Requests != tc.tasks) {
				t.Errorf("inferred contract: %+v, %d requests, model %q; want %s at rate %v, %d requests", c.Arrival, c.Requests, c.Model, tc.process, tc.rate, tc.tasks)
			}
			if !hasNote(ev, "when each request was sent") || !hasNote(ev, "was due") && !hasNote(ev, "offered at request_rate") {
				t.Errorf("missing send times not named: %q", ev.Run.Notes)
			}
		})
	}
}

// guidellm05 is GuideLLM's 0.4-on layout (guidellm 0.5.0.dev0 wrote a real file of this shape;
// none under a license was found to include): config.strategy, config.backend,
// metrics.request_totals and each request's info.timings. The values are chosen here.
const guidellm05 = `{"metadata": {"version": 1, "guidellm_version": "0.5.0.dev0"}, "args": {}, "benchmarks": [{
 "type_": "generative_benchmark",
 "config": {"strategy": {"type_": "concurrent", "worker_count": 2, "max_concurrency": 2, "streams": 2},
   "backend": {"target": "http://0.0.0.0:8000", "model": "m/five"}},
 "metrics": {"request_totals": {"successful": 3, "errored": 1, "incomplete": 0, "total": 4}},
 "start_time": 999.9, "end_time": 1003, "duration": 3.1,
 "requests": {"successful": [{"type_": "generative_request_stats", "request_id": "a",
   "info": {"status": "completed", "error": null, "timings": {"targeted_start": 999.99, "request_start": 1000.0,
     "first_token_iteration": 1000.2, "last_token_iteration": 1001.2, "request_end": 1001.25}},
   "prompt_tokens": 7, "output_tokens": 11, "request_start_time": 1000.0, "request_end_time": 1001.25}],
  "errored": [{"type_": "generative_request_stats", "request_id": "b",
   "info": {"status": "errored", "error": "ReadTimeout: timed out", "timings": {"targeted_start": 1000.5, "request_start": 1000.5, "request_end": 1002.5}},
   "prompt_tokens": 7, "output_tokens": 0}],
  "incomplete": []}}]}`

func TestGuideLLM05Layout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "benchmarks.json")
	os.WriteFile(file, []byte(guidellm05), 0o600)
	res, ev, recs := importRun(t, "guidellm", file)
	if len(recs) != 2 || recs[0].Status != record.StatusOK || recs[1].Status != record.StatusTimeout {
		t.Fatalf("records: %+v", recs)
	}
	r := recs[0]
	ttft, _ := r.TTFTFromSent()
	tpot, _ := r.TPOT()
	lag, _ := r.ScheduleLag()
	for _, c := range []struct {
		name      string
		got, want float64 // ms
	}{
		{"TTFT (first_token_iteration - request_start)", ms1(ttft), 200},
		{"TPOT (last - first token) / (output_tokens - 1)", ms1(tpot), 100},
		{"E2E from the send (request_end - request_start)", ms1(r.DoneAt.Sub(r.SentAt)), 1250},
		{"schedule lag (request_start - targeted_start)", ms1(lag), 10},
	} {
		if math.Abs(c.got-c.want) > 0.01 {
			t.Errorf("%s: %.3f ms, want %.3f", c.name, c.got, c.want)
		}
	}
	if r.PromptTokens != 7 || r.OutputTokens != 11 || recs[1].Error != "ReadTimeout: timed out" {
		t.Errorf("tokens %d/%d, error %q", r.PromptTokens, r.OutputTokens, recs[1].Error)
	}
	if !hasNote(ev, "keeps 1 of the benchmark's 3 successful requests") {
		t.Errorf("sampling not named: %q", ev.Run.Notes)
	}
	c, err := contract.Load(filepath.Join(res.Dir, rundir.ContractFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.Arrival.Concurrency != 2 || c.Model != "m/five" {
		t.Errorf("inferred contract %+v, model %q; want config.strategy's 2 streams and config.backend's model", c.Arrival, c.Model)
	}
}
