package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestAgainstHTA runs Meta's Holistic Trace Analysis itself (unmodified, from the project's
// shared oracles folder) on every Kineto fixture, with HTA's default last-step filter and
// with include_last_profiler_step, and compares every figure pel reports under HTA's name.
// HTA is the judge: the expectations are its output, never pel's.
//
// It needs python3 with Debian's python3-pandas, python3-plotly, python3-networkx,
// python3-yaml and python3-psutil, and the oracle folder: $PEL_HTA_ORACLE (the folder or its
// hta_oracle.py), else ../shared/oracles beside the repository. Without them it skips and
// says how to enable it; PEL_REQUIRE_HTA=1 (set by .ci/run once the packages are installed)
// turns the skip into a failure.
func TestAgainstHTA(t *testing.T) {
	py, oracleDir := htaEnvironment(t)
	files, _ := filepath.Glob("testdata/kineto/*.trace.json.gz")
	if len(files) < 10 {
		t.Fatalf("expected the 10 Kineto fixtures, found %d", len(files))
	}
	for _, path := range files {
		fixture := strings.TrimSuffix(filepath.Base(path), ".trace.json.gz")
		for _, keep := range []bool{false, true} {
			name := fixture
			if keep {
				name += "/include_last_profiler_step"
			} else {
				name += "/default"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // HTA takes seconds per trace; pel's side is milliseconds
				compareWithHTA(t, py, oracleDir, path, fixture, keep)
			})
		}
	}
}

// htaRaises lists the fixtures HTA itself cannot analyse (the error it raises, and why).
// pel reports them without a temporal breakdown instead. The test fails if HTA starts
// accepting one of them, so the list cannot go stale.
var htaRaises = map[string]string{
	// no kernel, memcpy or memset at all (CUPTI counter ranges only):
	// breakdown_analysis.py _get_idle_time_for_kernels indexes an empty frame
	"a100-cupti-counters": "IndexError",
	"cpu-only":            "IndexError", // no GPU events: the same empty frame
}

// htaDeliberate lists, per fixture, the figures where pel departs from HTA on purpose (see
// DIFFERENCES in doc.go), with HTA's figure and pel's. Both are checked: HTA's against
// HTA's output, pel's against pel's, so each entry states the size of the effect and
// fails when it changes. Keys are figure paths as compareWithHTA names them; the same
// entries hold with and without the last step (these fixtures have at most one step).
var htaDeliberate = map[string]map[string]struct {
	hta, pel float64
	why      string
}{
	"a100-triton-compiled": {
		// The Inductor cpu_op "triton_poi_fused_add_cos_sin_0" carries args.stream 0: HTA
		// takes any event whose stream is not -1 as GPU work, so a 94 µs host span becomes
		// kernel time; pel counts the 1 µs kernel the GPU ran.
		"temporal.kernel_time_us":                        {94, 1, "host cpu_op with args.stream counted as GPU time by HTA"},
		"temporal.compute_us":                            {94, 1, "same cpu_op"},
		"kernels[triton_poi_fused_add_cos_sin_0].sum_us": {95, 1, "same cpu_op shares the kernel's name"},
		"kernels[triton_poi_fused_add_cos_sin_0].max_us": {94, 1, "same cpu_op"},
		// HTA's launch_stats list has no driver API: the cuLaunchKernel (Triton) launch is
		// missing from HTA's frame, and from Launch.HTA, but in pel's own Launch figures.
	},
}

func htaEnvironment(t *testing.T) (python, oracleDir string) {
	t.Helper()
	required := os.Getenv("PEL_REQUIRE_HTA") == "1"
	skip := func(format string, a ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, a...)
		if required {
			t.Fatalf("PEL_REQUIRE_HTA=1 but %s", msg)
		}
		t.Skipf("HTA comparison skipped: %s. To run it: apt-get install python3-pandas python3-plotly "+
			"python3-networkx python3-yaml python3-psutil, and put the oracles folder at ../shared/oracles "+
			"or set PEL_HTA_ORACLE (PEL_REQUIRE_HTA=1 makes a skip fail)", msg)
	}
	if testing.Short() && !required {
		t.Skip("HTA comparison skipped in -short mode (it runs HTA, seconds per trace)")
	}
	oracleDir = os.Getenv("PEL_HTA_ORACLE")
	if oracleDir == "" {
		// the repository's parent holds shared/ (CI checks both out side by side)
		oracleDir = filepath.Join("..", "..", "shared", "oracles")
	} else if strings.HasSuffix(oracleDir, ".py") {
		oracleDir = filepath.Dir(oracleDir)
	}
	if _, err := os.Stat(filepath.Join(oracleDir, "hta_oracle.py")); err != nil {
		skip("no hta_oracle.py in %s", oracleDir)
	}
	python = os.Getenv("PEL_PYTHON")
	if python == "" {
		// Debian's interpreter is the one Debian's pandas is installed for
		python = "/usr/bin/python3"
		if _, err := os.Stat(python); err != nil {
			python = "python3"
		}
	}
	out, err := exec.Command(python, "-c", "import pandas, plotly, networkx, yaml, psutil").CombinedOutput()
	if err != nil {
		skip("%s cannot import HTA's dependencies: %v %s", python, err, bytes.TrimSpace(out))
	}
	return python, oracleDir
}

// htaOutput is what testdata/hta/hta_figures.py prints: hta_oracle.py's JSON verbatim
// ("oracle") and the further HTA figures it asks for on the same loaded trace ("extra").
type htaOutput struct {
	Oracle *struct {
		Ranks map[string]struct {
			Temporal     map[string]float64            `json:"temporal"`
			IdleByStream map[string]map[string]float64 `json:"idle_by_stream"`
			Overlap      *float64                      `json:"comm_comp_overlap_pct"`
		} `json:"ranks"`
		KernelTypePct map[string]float64 `json:"kernel_type_pct_all_ranks"`
	} `json:"oracle"`
	OracleError string `json:"oracle_error"`
	Extra       *struct {
		Ranks map[string]struct {
			Kernels []struct {
				Name  string   `json:"name"`
				Type  string   `json:"kernel_type"`
				Sum   float64  `json:"sum_us"`
				Min   float64  `json:"min_us"`
				Max   float64  `json:"max_us"`
				Mean  *float64 `json:"mean_us"`
				found bool
			} `json:"kernels"`
			Launch *struct {
				Count               int      `json:"count"`
				ShortKernels        int      `json:"short_kernels"`
				RuntimeOutliers     int      `json:"runtime_outliers"`
				LaunchDelayOutliers int      `json:"launch_delay_outliers"`
				LaunchDelayMeanUs   *float64 `json:"launch_delay_mean_us"`
				LaunchDelayP50Us    *float64 `json:"launch_delay_p50_us"`
				CPUDurationP50Us    *float64 `json:"cpu_duration_p50_us"`
				GPUDurationP50Us    *float64 `json:"gpu_duration_p50_us"`
			} `json:"launch"`
			LaunchError string                        `json:"launch_error"`
			Queue       map[string]map[string]float64 `json:"queue_length"`
			QueueError  string                        `json:"queue_length_error"`
		} `json:"ranks"`
		KernelsError string `json:"kernels_error"`
	} `json:"extra"`
}

// Tolerances, per figure, and why:
const (
	// Times: HTA and pel round each event to whole µs the same way (start up, end down) and
	// add integers, so µs figures must agree exactly.
	tolUs = 0
	// Percentages: both compute round(100·(a/b), d) with numpy's rounding (half to even of
	// the scaled float) on the same integers: exact up to float representation.
	tolPct = 1e-9
	// pel rounds means and medians to 3 decimals; pandas' mean sums pairwise, Go in order:
	// half a unit of the last printed digit plus summation noise.
	tolMean = 0.0005 + 1e-9
)

func compareWithHTA(t *testing.T, python, oracleDir, path, fixture string, keep bool) {
	args := []string{filepath.Join("testdata", "hta", "hta_figures.py"), oracleDir, path}
	if keep {
		args = append(args, "--include-last-step")
	}
	cmd := exec.Command(python, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("HTA (%s %s): %v\n%s", python, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	var h htaOutput
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("HTA output: %v\n%s", err, tail(string(raw), 2000))
	}
	opts := DefaultOptions()
	opts.KeepLastStep = keep
	r, err := Analyze(path, opts)
	if err != nil {
		t.Fatalf("pel: %v", err)
	}

	if want, listed := htaRaises[fixture]; listed || h.OracleError != "" {
		switch {
		case !listed:
			t.Fatalf("HTA raised %q: a fixture HTA cannot analyse must be listed in htaRaises with the reason", h.OracleError)
		case h.OracleError == "":
			t.Fatalf("htaRaises lists %s (%s) but HTA now analyses it: remove the entry", fixture, want)
		case !strings.HasPrefix(h.OracleError, want):
			t.Fatalf("HTA raised %q, htaRaises expects %s", h.OracleError, want)
		}
		for _, rk := range r.Ranks {
			if rk.Temporal != nil {
				t.Errorf("rank %d: HTA finds no GPU work (%s) but pel reports a temporal breakdown", rk.Rank, h.OracleError)
			}
		}
		return
	}
	if h.Oracle == nil || h.Extra == nil {
		t.Fatalf("HTA output without figures:\n%s", tail(string(raw), 2000))
	}

	c := &htaCheck{t: t, deliberate: htaDeliberate[fixture], seen: map[string]bool{}}
	if len(r.Ranks) != len(h.Oracle.Ranks) {
		t.Fatalf("pel finds %d ranks, HTA %d", len(r.Ranks), len(h.Oracle.Ranks))
	}
	for _, rk := range r.Ranks {
		key := fmt.Sprint(rk.Rank)
		o, ok := h.Oracle.Ranks[key]
		if !ok {
			t.Fatalf("pel's rank %d is not among HTA's", rk.Rank)
		}
		if rk.Temporal == nil {
			t.Fatalf("rank %d: pel reports no temporal breakdown, HTA does", rk.Rank)
		}
		tp := rk.Temporal
		for _, f := range []struct {
			name string
			pel  float64
			tol  float64
		}{
			{"kernel_time_us", tp.KernelTimeUs, tolUs}, {"idle_us", tp.IdleUs, tolUs},
			{"compute_us", tp.ComputeUs, tolUs}, {"non_compute_us", tp.NonComputeUs, tolUs},
			{"idle_pct", tp.IdlePct, tolPct}, {"compute_pct", tp.ComputePct, tolPct},
			{"non_compute_pct", tp.NonComputePct, tolPct},
		} {
			hv, ok := o.Temporal[f.name]
			if !ok {
				t.Errorf("HTA's temporal breakdown has no %s", f.name)
				continue
			}
			c.num("temporal."+f.name, hv, f.pel, f.tol)
		}

		// idle time: HTA lists a stream's categories only when a gap fell in them
		pelStreams := map[string]StreamIdle{}
		for _, s := range rk.IdleByStream {
			pelStreams[fmt.Sprint(s.Stream)] = s
		}
		for _, s := range sortedKeys(o.IdleByStream, pelStreams) {
			hs, inHTA := o.IdleByStream[s]
			ps, inPel := pelStreams[s]
			if !inHTA || !inPel {
				c.fail(fmt.Sprintf("idle[%d].stream %s", rk.Rank, s), "listed by HTA %v, by pel %v", inHTA, inPel)
				continue
			}
			c.num("idle."+s+".host_wait_us", hs["host_wait_us"], ps.HostWaitUs, tolUs)
			c.num("idle."+s+".kernel_wait_us", hs["kernel_wait_us"], ps.KernelWaitUs, tolUs)
			c.num("idle."+s+".other_us", hs["other_us"], ps.OtherUs, tolUs)
		}

		switch {
		case o.Overlap == nil && rk.CommCompOverlapPct != nil:
			c.fail("comm_comp_overlap_pct", "HTA: none (no communication kernels), pel %v", *rk.CommCompOverlapPct)
		case o.Overlap != nil && rk.CommCompOverlapPct == nil:
			c.fail("comm_comp_overlap_pct", "HTA %v, pel: none", *o.Overlap)
		case o.Overlap != nil:
			c.num("comm_comp_overlap_pct", *o.Overlap, *rk.CommCompOverlapPct, tolPct)
		}

		// HTA pools the kernel-type shares over ranks; a fixture holds one rank
		if len(r.Ranks) == 1 {
			pelTypes := map[string]float64{}
			for _, k := range rk.KernelTypes {
				pelTypes[htaTypeLabel(k.Type)] = k.Pct
			}
			// HTA's 1-decimal rounding, same rule as pel's; a type with no time may appear
			// in either with 0.0 (HTA keeps zero-length overlaps its sweep passes through)
			for _, k := range sortedKeys(h.Oracle.KernelTypePct, pelTypes) {
				c.num("kernel_types."+k, h.Oracle.KernelTypePct[k], pelTypes[k], tolPct)
			}
		}

		ex := h.Extra.Ranks[key]
		compareKernels(c, ex.Kernels, rk.TopKernels, h.Extra.KernelsError)
		if ex.Launch == nil {
			t.Errorf("HTA's cuda_kernel_launch_stats raised: %s", ex.LaunchError)
		} else {
			l, hl := rk.Launch.HTA, ex.Launch
			c.num("launch.count", float64(hl.Count), float64(l.Count), 0)
			if hl.Count == 0 {
				// HTA's frame is empty (no launch by its four API names): no means; pel's
				// are zero
				hl.LaunchDelayMeanUs, hl.LaunchDelayP50Us, hl.CPUDurationP50Us, hl.GPUDurationP50Us = new(float64), new(float64), new(float64), new(float64)
			}
			c.num("launch.short_kernels", float64(hl.ShortKernels), float64(l.ShortKernels), 0)
			c.num("launch.runtime_outliers", float64(hl.RuntimeOutliers), float64(l.RuntimeOutliers), 0)
			c.num("launch.launch_delay_outliers", float64(hl.LaunchDelayOutliers), float64(l.LaunchDelayOutliers), 0)
			c.opt("launch.launch_delay_mean_us", hl.LaunchDelayMeanUs, l.LaunchDelayMeanUs, tolMean)
			c.opt("launch.launch_delay_p50_us", hl.LaunchDelayP50Us, l.LaunchDelayP50Us, tolMean)
			c.opt("launch.cpu_duration_p50_us", hl.CPUDurationP50Us, l.CPUDurationP50Us, tolMean)
			c.opt("launch.gpu_duration_p50_us", hl.GPUDurationP50Us, l.GPUDurationP50Us, tolMean)
		}
		if ex.Queue == nil {
			t.Errorf("HTA's queue-length summary raised: %s", ex.QueueError)
		} else {
			pelQ := map[string]QueueStat{}
			for _, q := range rk.QueueLength {
				pelQ[fmt.Sprint(q.Stream)] = q
			}
			for _, s := range sortedKeys(ex.Queue, pelQ) {
				hq, inHTA := ex.Queue[s]
				pq, inPel := pelQ[s]
				if !inHTA || !inPel {
					c.fail("queue_length."+s, "listed by HTA %v, by pel %v", inHTA, inPel)
					continue
				}
				// HTA orders a launch and a start at the same µs by numpy's unstable
				// quicksort: each tied pair can move the mean by 2/points, the max by the
				// largest tie (see queueLength)
				c.num("queue_length."+s+".mean", hq["mean"], pq.Mean, tolMean+2*float64(pq.tiePairs)/float64(pq.points))
				c.num("queue_length."+s+".max", hq["max"], float64(pq.Max), float64(pq.tieMax))
				c.t.Logf("queue_length.%s: HTA mean %.4f max %v, pel %.3f %d (%d tied pairs in %d points)", s, hq["mean"], hq["max"], pq.Mean, pq.Max, pq.tiePairs, pq.points)
			}
		}
	}
	for k := range c.deliberate {
		if !c.seen[k] {
			t.Errorf("htaDeliberate lists %s for %s but no such difference was found: remove or correct it", k, fixture)
		}
	}
}

// compareKernels checks pel's top kernels against HTA's per-kernel breakdown
// (get_gpu_kernel_breakdown with no "others" folding): each listed kernel's type and
// sum/min/max/mean, and that pel lists the kernels with the largest sums.
func compareKernels(c *htaCheck, hta []struct {
	Name  string   `json:"name"`
	Type  string   `json:"kernel_type"`
	Sum   float64  `json:"sum_us"`
	Min   float64  `json:"min_us"`
	Max   float64  `json:"max_us"`
	Mean  *float64 `json:"mean_us"`
	found bool
}, top []KernelStat, hErr string) {
	if hErr != "" {
		c.t.Errorf("HTA's kernel breakdown raised: %s", hErr)
		return
	}
	byName := map[string]int{}
	for i, k := range hta {
		byName[k.Name] = i
	}
	for _, k := range top {
		i, ok := byName[k.Name]
		f := "kernels[" + shortName(k.Name) + "]"
		if !ok {
			c.fail(f, "pel lists it (%s, %v µs), HTA's breakdown does not", k.Type, k.TotalUs)
			continue
		}
		hk := &hta[i]
		hk.found = true
		if htaTypeLabel(k.Type) != hk.Type {
			c.fail(f+".type", "HTA %s, pel %s", hk.Type, k.Type)
		}
		c.num(f+".sum_us", hk.Sum, k.TotalUs, tolUs)
		c.num(f+".min_us", hk.Min, k.MinUs, tolUs)
		c.num(f+".max_us", hk.Max, k.MaxUs, tolUs)
		if hk.Mean != nil && c.deliberate[f+".sum_us"].why == "" {
			c.num(f+".mean_us", *hk.Mean, k.MeanUs, tolMean)
		}
	}
	// pel lists the N largest: no kernel it left out may have a larger sum than its last
	if len(top) == 0 {
		return
	}
	last := top[len(top)-1].TotalUs
	for _, hk := range hta {
		if !hk.found && hk.Sum > last && c.deliberate["kernels["+shortName(hk.Name)+"].sum_us"].why == "" {
			c.fail("kernels["+shortName(hk.Name)+"]", "HTA's sum %v µs exceeds pel's last listed kernel (%v µs) but pel leaves it out", hk.Sum, last)
		}
	}
}

type htaCheck struct {
	t          *testing.T
	deliberate map[string]struct {
		hta, pel float64
		why      string
	}
	seen map[string]bool
}

func (c *htaCheck) num(figure string, hta, pel, tol float64) {
	c.t.Helper()
	if d, ok := c.deliberate[figure]; ok {
		c.seen[figure] = true
		if hta != d.hta || pel != d.pel {
			c.t.Errorf("%s: deliberate difference (%s) was HTA %v / pel %v, now HTA %v / pel %v", figure, d.why, d.hta, d.pel, hta, pel)
		}
		return
	}
	if math.Abs(hta-pel) > tol || math.IsNaN(pel) {
		c.t.Errorf("%s: HTA %v, pel %v (tolerance %v)", figure, hta, pel, tol)
	}
}

func (c *htaCheck) opt(figure string, hta *float64, pel, tol float64) {
	c.t.Helper()
	if hta == nil {
		c.fail(figure, "HTA: none, pel %v", pel)
		return
	}
	c.num(figure, *hta, pel, tol)
}

func (c *htaCheck) fail(figure, format string, a ...any) {
	c.t.Helper()
	c.t.Errorf("%s: %s", figure, fmt.Sprintf(format, a...))
}

// htaTypeLabel spells pel's kernel type as HTA does ("COMPUTATION overlapping MEMORY").
func htaTypeLabel(s string) string {
	parts := strings.Split(s, " overlapping ")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p)
	}
	return strings.Join(parts, " overlapping ")
}

func shortName(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func sortedKeys[A, B any](a map[string]A, b map[string]B) []string {
	seen := map[string]bool{}
	var out []string
	for k := range a {
		if !seen[k] {
			seen[k], out = true, append(out, k)
		}
	}
	for k := range b {
		if !seen[k] {
			seen[k], out = true, append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
