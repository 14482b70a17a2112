package workload

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func conv(turns ...string) string {
	var b strings.Builder
	b.WriteString(`{"id": "x", "conversations": [`)
	for i, t := range turns {
		if i > 0 {
			b.WriteString(", ")
		}
		from := "human"
		if i%2 == 1 {
			from = "gpt"
		}
		fmt.Fprintf(&b, `{"from": %q, "value": %q}`, from, t)
	}
	b.WriteString("]}")
	return b.String()
}

// TestShareGPTVLLMRules: sharegpt-vllm keeps what vllm bench serve's ShareGPT sampling
// keeps, by its rules, with lengths in pel's estimate (4 characters a token).
func TestShareGPTVLLMRules(t *testing.T) {
	tok := func(n int) string { return strings.Repeat("abcd", n) } // n tokens by the estimate
	for _, tc := range []struct {
		name string
		conv string
		keep bool
		out  int
	}{
		{"two turns", conv(tok(10), tok(20)), true, 20},
		{"one turn", conv(tok(10)), false, 0},
		{"no conversations", `{"id": "y"}`, false, 0},
		{"prompt under 4 tokens", conv(tok(3), tok(20)), false, 0},
		{"completion under 4 tokens", conv(tok(10), tok(3)), false, 0},
		{"prompt 1024 tokens", conv(tok(1024), tok(4)), true, 4},
		{"prompt over 1024 tokens", conv(tok(1025), tok(4)), false, 0},
		{"together 2048 tokens", conv(tok(1000), tok(1048)), true, 1048},
		{"together over 2048 tokens", conv(tok(1000), tok(1049)), false, 0},
		{"later turns are not read", conv(tok(10), tok(20), tok(5000), tok(1)), true, 20},
	} {
		it, ok, err := parseShareGPTVLLM([]byte(tc.conv))
		if err != nil || ok != tc.keep || ok && (it.OutputTokens != tc.out || it.Prompt != tok(10) && tc.name == "two turns" || len(it.Messages) != 1) {
			t.Errorf("%s: kept %v (want %v), item %+v, err %v", tc.name, ok, tc.keep, it.OutputTokens, err)
		}
	}
	items, err := ReadDataset(strings.NewReader("[\n"+conv(tok(10), tok(20))+",\n"+conv(tok(1))+"\n]"), "d.json", "sharegpt-vllm")
	if err != nil || len(items) != 1 || items[0].Line != 2 {
		t.Errorf("array: %+v, %v", items, err)
	}
	if _, err := ReadDataset(strings.NewReader(conv(tok(1))), "d.json", "sharegpt-vllm"); err == nil || !strings.Contains(err.Error(), "vllm bench serve's length rules") {
		t.Errorf("nothing usable: %v", err)
	}
}

// shareGPTConversations is the size of the generated array the memory test reads: the
// public ShareGPT_V3_unfiltered_cleaned_split.json holds about 94,000.
const shareGPTConversations = 100_000

// TestShareGPTArrayPeakRSS reads a generated ShareGPT array of 100,000 conversations
// (~310 MB, ShareGPT's layout) as sharegpt-vllm in a child process and holds its peak
// resident set under 200 MB: the array is streamed element by element, and only the
// prompts vLLM's rules keep are held.
func TestShareGPTArrayPeakRSS(t *testing.T) {
	if childRead() {
		return
	}
	if testing.Short() {
		t.Skip("writes a 310 MB file")
	}
	path := filepath.Join(t.TempDir(), "ShareGPT_V3_like.json")
	size := writeShareGPTArray(t, path, shareGPTConversations)
	rss := peakRSS(t, path, "sharegpt-vllm", "^TestShareGPTArrayPeakRSS$")
	t.Logf("sharegpt-vllm: %d conversations, %.0f MB file: peak RSS %.0f MB", shareGPTConversations, float64(size)/1e6, rss)
	if rss >= 200 {
		t.Errorf("peak RSS %.0f MB reading a %.0f MB array, want under 200 MB", rss, float64(size)/1e6)
	}
}

// BenchmarkShareGPTArrayPeakRSS reports the peak RSS of reading the same array in each
// ShareGPT format (sharegpt keeps every conversation up to its last user turn, for
// multi-turn replay, so it holds most of the file).
func BenchmarkShareGPTArrayPeakRSS(b *testing.B) {
	if childRead() {
		return
	}
	path := filepath.Join(b.TempDir(), "ShareGPT_V3_like.json")
	size := writeShareGPTArray(b, path, shareGPTConversations)
	for _, format := range []string{"sharegpt-vllm", "sharegpt"} {
		b.Run(format, func(b *testing.B) {
			var rss float64
			for b.Loop() {
				rss = peakRSS(b, path, format, "^BenchmarkShareGPTArrayPeakRSS$")
			}
			b.ReportMetric(rss, "peak-RSS-MB")
			b.ReportMetric(float64(size)/1e6, "file-MB")
		})
	}
}

// childRead is the child side of peakRSS: read the dataset named in the environment.
func childRead() bool {
	path := os.Getenv("PEL_SHAREGPT_READ")
	if path == "" {
		return false
	}
	items, err := LoadDataset(path, os.Getenv("PEL_SHAREGPT_FORMAT"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("items=%d\n", len(items))
	return true
}

// peakRSS reads path in format in a child process (this test binary, running run) and
// returns its peak resident set in MB.
func peakRSS(tb testing.TB, path, format, run string) float64 {
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.bench="+run, "-test.benchtime=1x", "-test.count=1")
	cmd.Env = append(os.Environ(), "PEL_SHAREGPT_READ="+path, "PEL_SHAREGPT_FORMAT="+format)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "items=") {
		tb.Fatalf("%s: child: %v\n%s", format, err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		tb.Skip("no rusage on this system")
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// writeShareGPTArray writes n conversations in ShareGPT_V3_unfiltered_cleaned_split.json's
// layout (indented, as the public file is): turn counts and lengths vary with i, some
// conversations are too short or too long for vLLM's rules, the way the real ones do.
func writeShareGPTArray(t testing.TB, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	words := strings.Fields("the of and to in is that for it as with was on be by this are from at or an have not")
	text := func(seed, n int) string {
		var b strings.Builder
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[(seed*7+j*13)%len(words)])
		}
		return b.String()
	}
	w.WriteString("[\n")
	for i := 0; i < n; i++ {
		if i > 0 {
			w.WriteString(",\n")
		}
		turns := 1 + i%6 // 1..6 turns; one in six has a single turn
		fmt.Fprintf(w, "  {\n    \"id\": \"%s\",\n    \"conversations\": [\n", strconv.Itoa(i*31))
		for k := 0; k < turns; k++ {
			from := "human"
			if k%2 == 1 {
				from = "gpt"
			}
			words := 20 + (i*17+k*101)%400 // ~100 to ~2,000 characters a turn
			if k > 0 {
				fmt.Fprint(w, ",\n")
			}
			fmt.Fprintf(w, "      {\n        \"from\": %q,\n        \"value\": %q\n      }", from, text(i+k, words))
		}
		w.WriteString("\n    ]\n  }")
	}
	w.WriteString("\n]\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	f.Close()
	return st.Size()
}
