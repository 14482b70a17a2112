package hostile

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Files pel reads that a hostile (or corrupt) writer shaped: each reader bounds a line,
// never sizes a structure from a value in the file, and refuses what it cannot hold with
// the file and line.

// synthStart is the scheduled start of every synthetic run.
var synthStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// synthLine is one chat task record as pel run writes it (the shape of a real line), due
// at start + seq/4 s, taking 100 ms; extra is appended inside the object (",\"k\":v").
func synthLine(seq int, task string, extra string) string {
	at := synthStart.Add(time.Duration(seq) * 250 * time.Millisecond)
	ts := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339Nano) }
	return fmt.Sprintf(`{"seq":%d,"id":"id%d","trace_id":"tr%d","task":%q,"phase":"warm","in_flight":0,"scheduled_at":%q,"sent_at":%q,"headers_at":%q,"first_token_at":%q,"last_token_at":%q,"done_at":%q,"first_sent_at":%q,"chunk_us":[20000,30000,40000,50000],"chunk_tokens":[1,1,1,1],"prompt_tokens":16,"output_tokens":4,"token_source":"usage","attempts":1,"status":"ok","http_status":200,"finish_reason":"length","sent_prompt_tokens":16,"accepted":true%s}`,
		seq, seq, seq, task, ts(0), ts(time.Millisecond), ts(2*time.Millisecond), ts(20*time.Millisecond), ts(50*time.Millisecond), ts(100*time.Millisecond), ts(time.Millisecond), extra)
}

// synthRun writes a run directory of n requests (contract and requests.jsonl) whose lines
// line(i, w) writes; it returns the directory.
func synthRun(t *testing.T, n int, line func(i int, w *bufio.Writer)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "contract.yaml", strings.Replace(contractYAML(4, time.Second, 5*time.Second, ""), "duration: 1s", fmt.Sprintf("requests: %d", n), 1))
	f, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		line(i, w)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func analyzed(t *testing.T, dir string) *evidence.Evidence {
	t.Helper()
	ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
	if err != nil {
		t.Fatalf("evidence.json: %v", err)
	}
	return ev
}

// appendSparse appends to path a line of n NUL bytes (a sparse hole: no disk, no time)
// and its newline.
func appendSparse(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\n"), st.Size()+n); err != nil {
		t.Fatal(err)
	}
}

// pel merge with a 3 GiB line in a shard: the line is refused at 64 MiB, naming the file
// and line (exit 2), never read whole.
func TestMergeHugeLine(t *testing.T) {
	dir := t.TempDir()
	shards := []string{filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1")}
	for i, s := range shards {
		if err := os.Mkdir(s, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, s, "contract.yaml", strings.Replace(contractYAML(4, time.Second, 5*time.Second, ""), "duration: 1s", "requests: 8", 1))
		var b strings.Builder
		for seq := i; seq < 8; seq += 2 {
			b.WriteString(synthLine(seq, "chat", fmt.Sprintf(`,"shard":"%d/2"`, i)) + "\n")
		}
		p := writeFile(t, s, "requests.jsonl", b.String())
		if i == 0 {
			appendSparse(t, p, 3<<30)
		}
		ev := evidence.New()
		ev.Run.StartedAt = synthStart
		ev.Run.Shard = &evidence.Shard{Index: i, Count: 2, StartAt: synthStart}
		if err := ev.WriteFile(filepath.Join(s, "evidence.json")); err != nil {
			t.Fatal(err)
		}
	}
	res := pel(t, time.Minute, nil, "merge", shards[0], shards[1], "-o", filepath.Join(dir, "merged"))
	if res.code != 2 || !strings.Contains(res.stderr, "shard-0/requests.jsonl: line 5: record longer than 64 MiB") {
		t.Errorf("exit %d, want 2 naming the line: %s", res.code, tail(res.stderr))
	}
}

// One record whose done_at is two years after the run (unbounded: 2.28 GB after 32 s): no
// structure is sized by a time read from the file.
func TestDoneAtTwoYearsLate(t *testing.T) {
	const n = 200
	late := synthStart.AddDate(2, 0, 0).Format(time.RFC3339Nano)
	dir := synthRun(t, n, func(i int, w *bufio.Writer) {
		l := synthLine(i, "chat", "")
		if i == n/2 {
			i := strings.Index(l, `"done_at":"`) + len(`"done_at":"`)
			j := i + strings.IndexByte(l[i:], '"')
			l = l[:i] + late + l[j:]
		}
		w.WriteString(l + "\n")
	})
	res := pel(t, time.Minute, nil, "analyze", dir)
	if res.code != 0 && !(res.code == 2 && strings.Contains(res.stderr, fmt.Sprintf("line %d", n/2+1))) {
		t.Fatalf("exit %d, want 0, or 2 naming line %d: %s", res.code, n/2+1, tail(res.stderr))
	}
	if res.code == 0 {
		if ev := analyzed(t, dir); ev.Workload.Requests != n {
			t.Errorf("%d requests analysed, want %d", ev.Workload.Requests, n)
		}
	}
}

// 100,000 distinct task names: the per-task tables fold the names past a cap into one
// "other" row and say so; memory does not grow with the names.
func TestManyTaskNames(t *testing.T) {
	const n = 100_000
	dir := synthRun(t, n, func(i int, w *bufio.Writer) {
		w.WriteString(synthLine(i, fmt.Sprintf("task-%06d-%s", i, strings.Repeat("x", 40)), "") + "\n")
	})
	res := pel(t, 2*time.Minute, nil, "analyze", dir)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	ev := analyzed(t, dir)
	if ev.Workload.Requests != n {
		t.Errorf("%d requests analysed, want %d", ev.Workload.Requests, n)
	}
	if !strings.Contains(strings.Join(ev.Run.Notes, "\n"), "distinct task names") {
		t.Errorf("no note on the folded task names in %q", ev.Run.Notes)
	}
	if _, ok := ev.Workload.ByTaskType["other"]; !ok || len(ev.Workload.ByTaskType) > 65 {
		t.Errorf("%d task types, want the names past the bound in one \"other\"", len(ev.Workload.ByTaskType))
	}
}

// 400,000 step records with no task record (unbounded: 2.05 GB, exit 0): the steps held
// for tasks still running are bounded, and past the bound the file is refused naming the
// line (exit 2).
func TestOrphanSteps(t *testing.T) {
	const n = 400_000
	dir := synthRun(t, n, func(i int, w *bufio.Writer) {
		w.WriteString(synthLine(i, "chat", fmt.Sprintf(`,"step":{"task":%d,"index":0,"kind":"chat","turn":0,"answer":true}`, i)) + "\n")
	})
	res := pel(t, 2*time.Minute, nil, "analyze", dir)
	if res.code != 2 || !strings.Contains(res.stderr, "requests.jsonl: line ") || !strings.Contains(res.stderr, "step records") {
		t.Errorf("exit %d, want 2 naming the line: %s", res.code, tail(res.stderr))
	}
}

// Records of 390 KB (65,536 chunk timings each, the most a record keeps; found with 6,000
// of them): memory follows the records held, not the batches read ahead. 2,048 records
// (800 MB) are enough to exceed the bound when a batch is 1,024 lines, and keep the test
// near a minute.
func TestLargeRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 800 MB")
	}
	const n = 2048
	var b strings.Builder
	b.WriteString(`,"chunks":65536,"chunk_us":[`)
	for i := range 65536 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", 20000+i)
	}
	b.WriteString(`],"chunk_tokens":[`)
	for i := range 65536 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('1')
	}
	b.WriteString(`]`)
	chunks := b.String()
	dir := synthRun(t, n, func(i int, w *bufio.Writer) {
		l := synthLine(i, "chat", "")
		l = strings.Replace(l, `"chunk_us":[20000,30000,40000,50000],"chunk_tokens":[1,1,1,1],`, "", 1)
		l = strings.Replace(l, `"output_tokens":4,`, `"output_tokens":65536,`, 1)
		w.WriteString(l[:len(l)-1] + chunks + "}\n")
	})
	res := pel(t, 5*time.Minute, nil, "analyze", dir)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	if ev := analyzed(t, dir); ev.Workload.Requests != n {
		t.Errorf("%d requests analysed, want %d", ev.Workload.Requests, n)
	}
}

// readAll answers like okStream after reading the whole request, counting prompt tokens.
func readAll(prompt string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		ev := []string{}
		for range 8 {
			ev = append(ev, content)
		}
		sse(w, append(ev, finish, usage(prompt, "8"), done)...)
	}
}

// A contract whose empirical prompt length is 2^24 tokens (the largest it accepts): the run
// sends it, or the contract refuses it naming the line; memory stays bounded either way.
func TestEmpiricalHugePrompt(t *testing.T) {
	target := api(t, readAll("16777216"))
	dir := t.TempDir()
	c := strings.Replace(contractYAML(4, time.Second, 30*time.Second, ""), "duration: 1s", "requests: 4", 1)
	c = strings.Replace(c, "prompt_tokens: 16", "prompt_tokens: {dist: empirical, values: [16777216]}", 1)
	cf := writeFile(t, dir, "c.yaml", c)
	out := filepath.Join(dir, "run")
	res := pel(t, 2*time.Minute, nil, "run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String())
	if res.code == 2 && strings.Contains(res.stderr, "c.yaml:") {
		return // refused, naming the line
	}
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	records(t, out)
}

// --keep-text with a 14 M-token prompt (unbounded: a 75 MB line pel's own reader refuses):
// the writer never writes a line the reader refuses, so the run analyses again.
func TestKeepTextHugePrompt(t *testing.T) {
	target := api(t, readAll("14000000"))
	dir := t.TempDir()
	c := strings.Replace(contractYAML(1, time.Second, 30*time.Second, ""), "duration: 1s", "requests: 1", 1)
	c = strings.Replace(c, "prompt_tokens: 16", "prompt_tokens: 14000000", 1)
	cf := writeFile(t, dir, "c.yaml", c)
	out := filepath.Join(dir, "run")
	res := pel(t, 2*time.Minute, nil, "run", "--target", target, "--contract", cf, "-o", out, "--grace", grace.String(), "--keep-text")
	if res.code != 0 {
		if b, err := os.ReadFile(filepath.Join(out, "requests.jsonl")); err == nil {
			t.Logf("requests.jsonl: %.1500s", b)
		}
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	recs := records(t, out)
	if len(recs) != 1 || recs[0].Prompt == "" || !recs[0].Accepted || !slices.Contains(recs[0].Flags, record.FlagTextCut) {
		t.Fatalf("want 1 accepted record keeping the start of its prompt, flagged %s; got %d", record.FlagTextCut, len(recs))
	}
	if recs[0].PromptChars <= len(recs[0].Prompt) {
		t.Errorf("prompt_chars %d, want the whole prompt's length (over the %d kept)", recs[0].PromptChars, len(recs[0].Prompt))
	}
	res = pel(t, time.Minute, nil, "analyze", out)
	if res.code != 0 {
		t.Errorf("pel analyze of the run: exit %d: %s", res.code, tail(res.stderr))
	}
}

// Every command that reads a file refuses a FIFO (or another non-regular file) upfront,
// exit 2 naming it, without waiting for a signal.
func TestFIFOEveryReader(t *testing.T) {
	dir := t.TempDir()
	mkfifo := func(p string) string {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skip(err)
		}
		return p
	}
	mkdir := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// A run directory whose records, evidence and metrics are FIFOs.
	run := mkdir("run")
	writeFile(t, run, "contract.yaml", contractYAML(1, time.Minute, 5*time.Second, ""))
	for _, f := range []string{"requests.jsonl", "evidence.json", "metrics.jsonl"} {
		mkfifo(filepath.Join(run, f))
	}
	// A good run directory, and FIFOs where a trace, an export or a result file is named.
	good := synthRun(t, 8, func(i int, w *bufio.Writer) { w.WriteString(synthLine(i, "chat", "") + "\n") })
	if res := pel(t, time.Minute, nil, "analyze", good); res.code != 0 {
		t.Fatalf("analyze of a good run: exit %d: %s", res.code, tail(res.stderr))
	}
	// Good records, with the metrics or the spans a FIFO.
	withMetrics := synthRun(t, 8, func(i int, w *bufio.Writer) { w.WriteString(synthLine(i, "chat", "") + "\n") })
	mkfifo(filepath.Join(withMetrics, "metrics.jsonl"))
	withSpans := synthRun(t, 8, func(i int, w *bufio.Writer) { w.WriteString(synthLine(i, "chat", "") + "\n") })
	mkfifo(filepath.Join(withSpans, "spans.jsonl"))
	trace := mkfifo(filepath.Join(dir, "trace.json"))
	nsys := mkfifo(filepath.Join(dir, "export.sqlite"))
	evFIFO := mkfifo(filepath.Join(mkdir("evfifo"), "evidence.json"))
	aiperf := mkfifo(filepath.Join(dir, "profile_export.jsonl"))
	for _, args := range [][]string{
		{"analyze", run},
		{"report", run},
		{"report", evFIFO},
		{"compare", run, good},
		{"compare", good, run},
		{"trace", trace},
		{"trace", nsys},
		{"analyze", good, "--trace", trace},
		{"analyze", good, "--nsys", nsys},
		{"merge", run, good, "-o", filepath.Join(dir, "merged")},
		{"canary", "--prometheus", "http://127.0.0.1:1", "--baseline", `{a="b"}`, "--candidate", `{a="c"}`, "--rollback-from", run},
		{"import", "aiperf", aiperf, "-o", filepath.Join(dir, "imported")},
		{"import", "vllm-bench", aiperf, "-o", filepath.Join(dir, "imported")},
		{"import", "guidellm", aiperf, "-o", filepath.Join(dir, "imported")},
		{"import", "genai-perf", aiperf, "-o", filepath.Join(dir, "imported")},
		{"analyze", withMetrics},
		{"analyze", withSpans},
	} {
		t.Run(args[0]+" "+filepath.Base(args[1]), func(t *testing.T) {
			res := pel(t, 10*time.Second, nil, args...)
			if res.code != 2 || !strings.Contains(res.stderr, "not a regular file") {
				t.Errorf("pel %s: exit %d, want 2 refusing the FIFO: %s", strings.Join(args, " "), res.code, tail(res.stderr))
			}
		})
	}
}

// pel contract check on a 4 MiB contract (unbounded: 295 MB for 127,000 one-line tasks,
// 420 MB for two million empirical values): the values are counted before the YAML tree is
// built, and a contract past MaxYAMLValues is refused naming the line (exit 2).
func TestContractCheck4MiB(t *testing.T) {
	head := "name: t\nversion: 1\narrival: {process: constant, rate: 1}\nrequests: 4\ntasks:\n"
	var values, tasks strings.Builder
	values.WriteString(head + "  - name: a\n    prompt_tokens: {dist: empirical, values: [1")
	for values.Len() < 4<<20-16 {
		values.WriteString(",1")
	}
	values.WriteString("]}\n")
	tasks.WriteString(head)
	for i := 0; tasks.Len() < 4<<20-64; i++ {
		fmt.Fprintf(&tasks, "  - {name: t%d, prompt_tokens: 1}\n", i)
	}
	dir := t.TempDir()
	for _, c := range []struct{ name, yaml, want string }{
		{"two million values", values.String(), "values.yaml:7: more than 100000 YAML values"},
		{"127,000 tasks", tasks.String(), "tasks.yaml:20003: more than 100000 YAML values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.Fields(c.want)[0]
			name = name[:strings.IndexByte(name, ':')]
			p := writeFile(t, dir, name, c.yaml)
			res := pel(t, time.Minute, nil, "contract", "check", p)
			if res.code != 2 || !strings.Contains(res.stderr, c.want) {
				t.Errorf("exit %d, want 2 and %q: %s", res.code, c.want, tail(res.stderr))
			}
			// A bounded tree: far under the 295-420 MB of the whole file's.
			if res.maxRSS > 128<<20 {
				t.Errorf("peak RSS %.0f MiB for a refused contract", float64(res.maxRSS)/(1<<20))
			}
		})
	}
}

// A dataset of 24 prompts of 50 MB (unbounded: the run held all of them, 1.2 GB, before the
// first request): the prompts held are bounded, and past the bound the dataset is refused
// naming the file and line (exit 2).
func TestDatasetHugePrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1.2 GB")
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := strings.Repeat("word ", 10<<20) // 50 MiB
	for range 24 {
		if _, err := f.WriteString(`{"prompt": "` + prompt + `"}` + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	prompt = ""
	c := strings.Replace(contractYAML(1, time.Second, 30*time.Second, ""), "duration: 1s", "requests: 2", 1)
	c = strings.Replace(c, "{name: chat, prompt_tokens: 16, output_tokens: 8}", "{name: chat, dataset: {file: prompts.jsonl}, output_tokens: 8}", 1)
	cf := writeFile(t, dir, "c.yaml", c)
	target := api(t, readAll("16"))
	res := pel(t, 2*time.Minute, nil, "run", "--target", target, "--contract", cf, "-o", filepath.Join(dir, "run"), "--grace", grace.String())
	if res.code != 2 || !strings.Contains(res.stderr, "prompts.jsonl:3: the prompts up to this line hold") {
		t.Errorf("exit %d, want 2 naming the line: %s", res.code, tail(res.stderr))
	}
}
