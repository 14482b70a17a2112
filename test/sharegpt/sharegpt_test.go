// Package sharegpt holds the process-level test of reading ShareGPT as published: one
// JSON array of ~100,000 conversations, in bounded memory.
package sharegpt

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

	"github.com/pel-ladder/pel/internal/pelbin"
)

var pelBin string

// TestMain builds pel without -race (pelbin): the race detector's shadow memory would be
// part of any resident set measured.
func TestMain(m *testing.M) { pelbin.Main(m, "sharegpt", &pelBin) }

// conversations is the generated array's size: the public
// ShareGPT_V3_unfiltered_cleaned_split.json holds about 94,000.
const conversations = 100_000

// TestShareGPTArrayPeakRSS: pel contract check of a contract whose dataset is a generated
// ShareGPT array of 100,000 conversations (~310 MB, ShareGPT's layout) in format
// sharegpt-vllm reads it with a peak resident set under 200 MB: the array is streamed
// element by element, and only the prompts vLLM's rules keep are held.
func TestShareGPTArrayPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 310 MB file")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "ShareGPT_V3_like.json")
	size := writeShareGPTArray(t, data, conversations)
	rss := peakRSS(t, dir, data, "sharegpt-vllm", false)
	t.Logf("sharegpt-vllm: %d conversations, %.0f MB file: peak RSS %.0f MB", conversations, float64(size)/1e6, rss)
	if rss >= 200 {
		t.Errorf("peak RSS %.0f MB reading a %.0f MB array, want under 200 MB", rss, float64(size)/1e6)
	}
}

// BenchmarkShareGPTArrayPeakRSS reports the peak RSS of reading the same array in each
// ShareGPT format. sharegpt keeps every conversation up to its last user turn, for
// multi-turn replay, so it would hold most of the file: past workload.MaxDatasetBytes of
// held prompts it refuses the dataset naming the line, and the figure is the RSS at refusal.
func BenchmarkShareGPTArrayPeakRSS(b *testing.B) {
	dir := b.TempDir()
	data := filepath.Join(dir, "ShareGPT_V3_like.json")
	size := writeShareGPTArray(b, data, conversations)
	for _, format := range []string{"sharegpt-vllm", "sharegpt"} {
		b.Run(format, func(b *testing.B) {
			var rss float64
			for b.Loop() {
				rss = peakRSS(b, dir, data, format, format == "sharegpt")
			}
			b.ReportMetric(rss, "peak-RSS-MB")
			b.ReportMetric(float64(size)/1e6, "file-MB")
		})
	}
}

// peakRSS runs pel contract check on a contract whose one task's dataset is data, read in
// format, and returns the process's peak resident set in MB. refused says the check must
// refuse the dataset for holding more than pel's bound on dataset bytes.
func peakRSS(tb testing.TB, dir, data, format string, refused bool) float64 {
	cf := filepath.Join(dir, format+".yaml")
	c := fmt.Sprintf("name: sharegpt\nversion: 1\narrival: {process: closed, concurrency: 4}\nrequests: 100\ntasks:\n  - name: chat\n    dataset: {file: %s, format: %s}\n", data, format)
	if err := os.WriteFile(cf, []byte(c), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(pelBin, "contract", "check", cf)
	out, err := cmd.CombinedOutput()
	switch {
	case refused && (err == nil || !strings.Contains(string(out), "MaxDatasetBytes")):
		tb.Fatalf("%s: pel contract check should refuse the dataset past MaxDatasetBytes: %v\n%s", format, err, out)
	case !refused && (err != nil || !strings.Contains(string(out), "sha256")):
		tb.Fatalf("%s: pel contract check: %v\n%s", format, err, out)
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
