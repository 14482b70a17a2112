package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare"
)

// rungen builds bench/rungen once: the seeded generator of long synthetic run directories
// BENCHMARKS.md measures on, so these cases read the same inputs as its figures.
var rungen = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pel-rungen-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "rungen")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/pel-ladder/pel/bench/rungen").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building bench/rungen: %v: %s", err, out)
	}
	return bin, nil
})

// genRun writes a run directory with bench/rungen (its flags, -o dir) and returns dir.
func genRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin, err := rungen()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, append(args, "-o", dir)...).CombinedOutput(); err != nil {
		t.Fatalf("rungen %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return dir
}

// compareJSON runs pel compare --json on two run directories and checks the bounded
// comparison still counted every task: it ends by itself under the memory limit, with a
// verdict (exit 0 or 1), and both sides' task counts are the files'.
func compareJSON(t *testing.T, base, cand string, tasks int, extra ...string) result {
	t.Helper()
	res := pel(t, 30*time.Minute, nil, append([]string{"compare", "--json", base, cand}, extra...)...)
	if res.code != 0 && res.code != 1 {
		t.Fatalf("exit %d, want a verdict (0 or 1): %s", res.code, tail(res.stderr))
	}
	var out compare.Result
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("compare --json: %v: %.500s", err, res.stdout)
	}
	for _, side := range []compare.RunInfo{out.Base, out.Candidate} {
		n := 0
		for _, k := range side.Tasks {
			n += k
		}
		if n != tasks {
			t.Errorf("%s: compared %d tasks (%v), want %d (every record counted)", side.Dir, n, side.Tasks, tasks)
		}
	}
	if len(out.Phases) == 0 || out.Phases[0].BaseCompleted == 0 || out.Phases[0].Metrics == nil {
		t.Errorf("no compared phase with completed tasks: %+v", out.Phases)
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
	base := genRun(t, filepath.Join(tmp, "base"), "-n", "300000", "-rate", "100", "-seed", "1")
	cand := genRun(t, filepath.Join(tmp, "cand"), "-n", "300000", "-rate", "100", "-seed", "2")
	// The same workload, another draw of it: rungen's contract names its seed.
	c, err := os.ReadFile(filepath.Join(base, "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cand, "contract.yaml", string(c))
	compareJSON(t, base, cand, 300_000)
}

// pel compare on a one-hour, 3,000-series run (out of memory at 2,128 MB in
// resample.NewClustered): 360,000 tasks and a metrics.jsonl of 3,601 samples × 3,000 series,
// the run BENCHMARKS.md measures, compared with itself.
func TestCompareOneHourRun(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a one-hour run with a 3,000-series metrics.jsonl")
	}
	dir := genRun(t, filepath.Join(t.TempDir(), "run"), "-n", "360000", "-rate", "100", "-metrics-series", "3000")
	compareJSON(t, dir, dir, 360_000)
}
