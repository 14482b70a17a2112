package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pel merge with one record at seq 2^40: its seen-set is sized by seq, so a seq beyond any
// schedule is refused, naming it (exit 2), instead of running out of memory at once.
func TestMergeHugeSeq(t *testing.T) {
	target := api(t, okStream)
	dir := t.TempDir()
	cf := writeFile(t, dir, "c.yaml", strings.Replace(contractYAML(4, time.Second, 5*time.Second, ""), "duration: 1s", "requests: 4", 1))
	start := time.Now().Add(6 * time.Second).UTC().Format(time.RFC3339Nano)
	// Both shards at once: they share the start.
	shards := []string{filepath.Join(dir, "shard-0"), filepath.Join(dir, "shard-1")}
	codes := make(chan int, 2)
	for i, out := range shards {
		go func() {
			codes <- pel(t, time.Minute, nil, "run", "--target", target, "--contract", cf, "-o", out, "--shard", fmt.Sprintf("%d/2", i), "--start-at", start, "--grace", grace.String()).code
		}()
	}
	for range shards {
		if code := <-codes; code != 0 {
			t.Fatalf("a shard exited %d", code)
		}
	}
	reqs := filepath.Join(shards[0], "requests.jsonl")
	b, err := os.ReadFile(reqs)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(string(b), "\n", 2)[0]
	huge := strings.Replace(first, `"seq":0,`, fmt.Sprintf(`"seq":%d,`, int64(1)<<40), 1)
	if huge == first {
		t.Fatalf("no seq 0 in %.200s", first)
	}
	if err := os.WriteFile(reqs, []byte(string(b)+huge+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := pel(t, time.Minute, nil, "merge", shards[0], shards[1], "-o", filepath.Join(dir, "merged"))
	if res.code != 2 || !strings.Contains(res.stderr, "seq 1099511627776, beyond any schedule") {
		t.Errorf("exit %d, want 2 naming the seq: %s", res.code, tail(res.stderr))
	}
}

// Records claiming 2^62 tokens (pel compare: 100 s and 1.26 GB unbounded): a count no run of
// pel writes is refused where the file is read, naming the line (exit 2).
func TestRecordClaimingHugeTokens(t *testing.T) {
	target := api(t, okStream)
	d, to := 2*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	reqs := filepath.Join(dir, "requests.jsonl")
	b, err := os.ReadFile(reqs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = strings.Replace(lines[1], `"output_tokens":8,`, `"output_tokens":4611686018427387904,`, 1)
	if err := os.WriteFile(reqs, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"analyze", dir}, {"compare", dir, dir}} {
		res := pel(t, time.Minute, nil, args...)
		if res.code != 2 || !strings.Contains(res.stderr, "line 2: output_tokens 4611686018427387904 is outside") {
			t.Errorf("pel %s: exit %d, want 2 naming the line: %s", args[0], res.code, tail(res.stderr))
		}
	}
}
