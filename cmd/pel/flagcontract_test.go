package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// TestRunFromFlagsAgainstSim: a run from flags alone writes the contract the flags mean into
// the run directory, prints its sha256, and that file passes pel contract check with the
// same sha256 (so it re-runs the same workload).
func TestRunFromFlagsAgainstSim(t *testing.T) {
	if testing.Short() {
		t.Skip("drives pel sim with pel run")
	}
	srv := simtest.Start(t, "healthy", sim.Options{Speed: 20, Seed: 1, Hostname: "sim"}, false)
	dir := filepath.Join(t.TempDir(), "run")
	code, _, errs := runCLI(t, "run", "--target", srv.URL(), "-o", dir, "--concurrency", "4", "--requests", "12",
		"--prompt-tokens", "normal:256,32", "--output-tokens", "16", "--slo-ttft-p99", "2s", "--percentiles", "50,90,99.9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`contract from flags, sha256 ([0-9a-f]{64})`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no sha256 printed: %s", errs)
	}
	path := filepath.Join(dir, rundir.ContractFile)
	if !strings.Contains(errs, "pel run --target URL --contract "+path) {
		t.Errorf("no re-run line: %s", errs)
	}
	code, out, cerrs := runCLI(t, "contract", "check", path)
	if code != 0 {
		t.Fatalf("contract check of the written contract: exit %d: %s", code, cerrs)
	}
	if !strings.Contains(out, "sha256    "+m[1]) {
		t.Errorf("contract check prints another sha256 than the run did (%s):\n%s", m[1], out)
	}
	// The contract's percentiles key drives the report's table as --percentiles would.
	if code, out, _ := runCLI(t, "report", dir); code != 0 || !strings.Contains(out, "PERCENTILES") || !strings.Contains(out, "p99.9") {
		t.Errorf("report of a contract with percentiles [50, 90, 99.9]: exit %d\n%s", code, out)
	}
	c, err := contract.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arrival.Process != contract.Closed || c.Arrival.Concurrency != 4 || c.Requests != 12 ||
		c.Tasks[0].PromptTokens.Kind != contract.DistNormal || c.SLO.TTFT.P99.String() != "2s" || len(c.Percentiles) != 3 {
		t.Errorf("written contract is not what the flags say: %+v", c)
	}
}

func TestContractFromFlags(t *testing.T) {
	code, out, errs := runCLI(t, "contract", "from-flags", "--rate", "5", "--duration", "1m", "--prompt-tokens", "lognormal:200,80", "--model", "llama")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	c, err := contract.Parse([]byte(out), "stdout")
	if err != nil {
		t.Fatalf("printed contract does not parse: %v\n%s", err, out)
	}
	if !strings.Contains(errs, c.SHA256()) || c.Model != "llama" || c.Arrival.Rate != 5 {
		t.Errorf("from-flags: %s\n%s", errs, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"contract", "from-flags", "--duration", "1m", "--prompt-tokens", "5"}, "--rate R"},
		{[]string{"contract", "from-flags", "--rate", "1", "--duration", "1m", "--prompt-tokens", "normal:5"}, "MEAN,SD"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", "x.yaml", "--rate", "1"}, "give one"},
		{[]string{"run", "--target", "http://127.0.0.1:1"}, "workload flags"},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	if _, err := os.Stat("x.yaml"); err == nil {
		t.Errorf("x.yaml created")
	}
}

// TestFlagsDataset: --dataset works from flags as from a contract: the contract written
// names the file by its absolute path (it is read from the run directory later) and pel
// contract check plans it.
func TestFlagsDataset(t *testing.T) {
	tmp := t.TempDir()
	ds := filepath.Join(tmp, "ShareGPT.json")
	os.WriteFile(ds, []byte(`[{"id": "a", "conversations": [{"from": "human", "value": "what is the capital of France, and why?"}, {"from": "gpt", "value": "Paris: it has been the seat of government for centuries."}]}]`), 0o600)
	code, out, errs := runCLI(t, "contract", "from-flags", "--concurrency", "2", "--requests", "4", "--dataset", ds, "--dataset-format", "sharegpt-vllm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	cf := filepath.Join(tmp, "elsewhere", "c.yaml")
	os.MkdirAll(filepath.Dir(cf), 0o700)
	os.WriteFile(cf, []byte(out), 0o600)
	if code, _, errs := runCLI(t, "contract", "check", cf); code != 0 {
		t.Errorf("contract check of a flags contract with a dataset: exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "file: "+ds) || !strings.Contains(out, "format: sharegpt-vllm") {
		t.Errorf("dataset not named by its path:\n%s", out)
	}
}
