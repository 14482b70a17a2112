package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// Records whose second content event claims a huge token count, read by every analysis of
// the run. A count past record.MaxTokens is one pel's writer never writes (it clamps each
// event's count as it clamps usage), so every reader refuses it naming the file, line and
// field, as it refuses such an output_tokens. A count at the bound is one pel writes: each
// such record holds record.MaxTokens inter-token latencies (its cap), 2^35 over the run,
// which the analyses count one content event at a time instead of one token at a time.
func TestChunksClaimingHugeTokens(t *testing.T) {
	for _, c := range []struct {
		name   string
		tokens int64 // what the rewritten event claims
	}{
		{"2^62 tokens, past what pel writes", 1 << 62},
		{"record.MaxTokens, the most pel writes", record.MaxTokens},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := genRun(t, filepath.Join(t.TempDir(), "run"), "-n", "2000", "-rate", "100")
			// An evidence.json of the run as written, for pel report to render.
			if res := pel(t, 2*time.Minute, nil, "analyze", dir); res.code != 0 {
				t.Fatalf("pel analyze of the run as written: exit %d: %s", res.code, tail(res.stderr))
			}
			first, okRewritten := claimTokens(t, filepath.Join(dir, "requests.jsonl"), c.tokens)
			refused := c.tokens > record.MaxTokens
			// pel report reads the records for the percentiles beyond its three.
			for _, args := range [][]string{{"analyze", dir}, {"report", "--percentiles", "50,99.9", dir}, {"compare", "--json", dir, dir}} {
				t.Run(args[0], func(t *testing.T) {
					if !refused && args[0] == "compare" {
						compareJSON(t, dir, dir, 2000)
						return
					}
					res := pel(t, 2*time.Minute, nil, args...)
					if refused {
						want := fmt.Sprintf("requests.jsonl: line %d: chunk_tokens[1] %d is outside 0..%d", first, c.tokens, record.MaxTokens)
						if res.code != 2 || !strings.Contains(res.stderr, want) {
							t.Fatalf("exit %d, want 2 (bad input) saying %q: %s", res.code, want, tail(res.stderr))
						}
						return
					}
					if res.code != 0 {
						t.Fatalf("exit %d, want 0: %s", res.code, tail(res.stderr))
					}
					if args[0] == "report" {
						if !strings.Contains(res.stdout, "99.9") {
							t.Fatalf("no p99.9 in the report: %.800s", res.stdout)
						}
						return
					}
					ev, err := evidence.ReadFile(filepath.Join(dir, "evidence.json"))
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					for _, s := range ev.Workload.ByPhase {
						n += s.Latency.ITLms.N
					}
					if want := okRewritten * record.MaxTokens; n != want {
						t.Errorf("%d ITLs counted over the phases, want %d: record.MaxTokens for each of the %d completed records rewritten", n, want, okRewritten)
					}
				})
			}
		})
	}
}

// claimTokens rewrites every record of file whose first two content events carry one token
// each so that the second claims tokens, and returns the first rewritten line (1-based) and
// how many rewritten records completed.
func claimTokens(t *testing.T, file string, tokens int64) (first, ok int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		r := strings.Replace(l, `"chunk_tokens":[1,1,`, fmt.Sprintf(`"chunk_tokens":[1,%d,`, tokens), 1)
		if r == l {
			continue
		}
		lines[i] = r
		if first == 0 {
			first = i + 1
		}
		if strings.Contains(r, `"status":"ok"`) {
			ok++
		}
	}
	if ok < 1900 {
		t.Fatalf("%d completed records rewritten, want nearly all 2,000", ok)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return first, ok
}
