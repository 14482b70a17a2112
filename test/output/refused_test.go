package output

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/pelbin"
)

// TestRefusedSaysNothingWritten: a command refused for its input (a target without a
// scheme, a port nothing listens on, an output directory in use, a misspelt scenario) exits
// 2 and says nothing of files it never wrote: no "written to", no "writing to", no "re-run
// it with" a contract that does not exist.
func TestRefusedSaysNothingWritten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--rate", "1", "--duration", "2s", "--prompt-tokens", "fixed:8", "--output-tokens", "4"}
	cf := writeContract(t, "name: t\nversion: 1\narrival: {process: constant, rate: 1}\nduration: 2s\ntasks:\n  - {name: s, prompt_tokens: {dist: fixed, value: 8}, output_tokens: 4}\n")
	for _, tc := range []struct {
		name string
		args []string
		why  string // what the refusal names
	}{
		{"no scheme", append([]string{"run", "--target", strings.TrimPrefix(closed, "http://"), "-o", filepath.Join(t.TempDir(), "r")}, flags...), "must start with http://"},
		{"nothing listening", append([]string{"run", "--target", closed, "-o", filepath.Join(t.TempDir(), "r")}, flags...), "not reachable"},
		{"nothing listening, default -o", append([]string{"run", "--target", closed}, flags...), "not reachable"},
		{"output in use", append([]string{"run", "--target", closed, "-o", used}, flags...), "not empty"},
		{"sweep, nothing listening", []string{"sweep", "--target", closed, "--contract", cf, "--concurrency", "1,2"}, "not reachable"},
		{"demo, misspelt scenario", []string{"demo", "--scenario", "helthy"}, `did you mean "healthy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // a default -o lands here, if anywhere
			code, out := pel(t, tc.args...)
			if code != 2 || !strings.Contains(out, tc.why) {
				t.Fatalf("exit %d, want 2 naming %q:\n%s", code, tc.why, out)
			}
			for _, lie := range []string{"written to", "writing to", "re-run it with"} {
				if strings.Contains(out, lie) {
					t.Errorf("a refused command says %q:\n%s", lie, out)
				}
			}
			if ents, _ := os.ReadDir("."); len(ents) > 0 {
				t.Errorf("a refused command left %v behind", ents)
			}
		})
	}
}

// TestTargetWithQuery: a target whose URL carries a query string (a gateway's
// ?api-version=…) is served: the query goes on every call instead of swallowing the path.
func TestTargetWithQuery(t *testing.T) {
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	dir := filepath.Join(t.TempDir(), "run")
	code, out := pel(t, "run", "--target", url+"/v1?api-version=2024-10-21", "--rate", "20", "--requests", "10",
		"--prompt-tokens", "fixed:8", "--output-tokens", "4", "-o", dir)
	if code != 0 || !strings.Contains(out, "of 10") {
		t.Fatalf("pel run with a query in --target: exit %d\n%s", code, out)
	}
}

// TestHabitsOfOtherTools: the flags users bring from vllm bench serve and its peers get
// pel's equivalent, a typo gets the flag it missed, a missing argument gets the usage
// line, and pel run --help lists every SLO flag it accepts.
func TestHabitsOfOtherTools(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--durration", "10s"}, "did you mean --duration?"},
		{[]string{"run", "--request-rate", "4"}, "pel's equivalent: --rate R"},
		{[]string{"run", "--max-concurrency", "8"}, "pel's equivalent: --max-in-flight N"},
		{[]string{"run", "--num-prompts", "100"}, "pel's equivalent: --requests N"},
		{[]string{"run", "--percentile-metrics", "ttft,tpot"}, "pel's equivalent: --percentiles"},
		{[]string{"analyze"}, "usage: pel analyze DIR"},
		{[]string{"import", "vllm-bench"}, "usage: pel import FORMAT FILE"},
	} {
		code, out := pel(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("pel %s: exit %d, want 2 and %q:\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
	}
	// vllm bench serve's --request-rate inf --max-concurrency 4: every task due at once,
	// four at a time.
	url := pelbin.StartSim(t, pelBin, "--scenario", "healthy")
	dir := filepath.Join(t.TempDir(), "burst")
	if code, out := pel(t, "run", "--target", url, "--rate", "inf", "--requests", "12", "--max-in-flight", "4",
		"--prompt-tokens", "16", "--output-tokens", "16", "-o", dir); code != 0 || !strings.Contains(out, "done 12 of 12 planned") {
		t.Errorf("pel run --rate inf --max-in-flight 4: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "contract.yaml")); err != nil || !strings.Contains(string(b), "process: burst") || !strings.Contains(string(b), "max_in_flight: 4") {
		t.Errorf("the burst's contract: %v\n%s", err, b)
	}
	code, help := pel(t, "run", "--help")
	if code != 0 {
		t.Fatalf("pel run --help: exit %d", code)
	}
	for _, m := range []string{"ttft", "itl", "tpot", "e2e"} {
		for _, f := range []string{"p50", "p90", "p95", "p99", "max"} {
			if flag := "--slo-" + m + "-" + f + " "; !strings.Contains(help, flag) {
				t.Errorf("pel run --help does not list %s", flag)
			}
		}
	}
}
