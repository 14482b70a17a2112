package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pel-ladder/pel/trace"
)

// TraceText writes a profiler timeline's analysis (pel trace): per rank HTA's temporal
// breakdown, idle time per stream, kernel types and top kernels, launches, graphs, syncs,
// compile regions, memory ops and steps, then the findings.
func TraceText(out io.Writer, r *trace.Result) error {
	w := bufio.NewWriter(out) // sticky error: the first failed write is what Flush returns
	fmt.Fprintf(w, "%s\n", r.Source)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, rk := range r.Ranks {
		fmt.Fprintf(w, "\nrank %d", rk.Rank)
		if rk.Device != "" {
			fmt.Fprintf(w, " (%s)", rk.Device)
		}
		fmt.Fprintf(w, ": %d GPU events", rk.GPUEvents)
		if rk.Steps != nil && rk.Steps.Dropped != "" {
			fmt.Fprintf(w, ", last step %s dropped (--keep-last-step keeps it)", rk.Steps.Dropped)
		}
		fmt.Fprintln(w)
		for _, n := range rk.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if rk.Temporal == nil {
			fmt.Fprintf(w, "  no GPU activity (%d CPU ops, %d annotations)\n", rk.HostEvents.CPUOps, rk.HostEvents.Annotations)
			continue
		}
		t := rk.Temporal
		fmt.Fprintf(w, "  kernel time %.1f ms: idle %.2f%%  compute %.2f%%  non-compute %.2f%%\n",
			t.KernelTimeUs/1000, t.IdlePct, t.ComputePct, t.NonComputePct)
		if rk.CommCompOverlapPct != nil {
			fmt.Fprintf(w, "  communication %.2f%% of kernel time, %.2f%% overlapped with computation\n", rk.CommPct, *rk.CommCompOverlapPct)
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  stream\thost_wait µs\tkernel_wait µs\tother µs\tqueue mean\tqueue max")
		q := map[int64][2]float64{}
		for _, s := range rk.QueueLength {
			q[s.Stream] = [2]float64{s.Mean, float64(s.Max)}
		}
		for _, s := range rk.IdleByStream {
			fmt.Fprintf(tw, "  %d\t%.0f\t%.0f\t%.0f\t%.2f\t%.0f\n", s.Stream, s.HostWaitUs, s.KernelWaitUs, s.OtherUs, q[s.Stream][0], q[s.Stream][1])
		}
		tw.Flush()
		var kt []string
		for _, k := range rk.KernelTypes {
			kt = append(kt, fmt.Sprintf("%s %.1f%%", k.Type, k.Pct))
		}
		fmt.Fprintf(w, "  kernel types: %s\n", strings.Join(kt, ", "))
		l := rk.Launch
		fmt.Fprintf(w, "  launches %d: short %d (%.0f%%), launch delay p50 %.1f µs mean %.1f µs, CPU launch p50 %.1f µs, outliers %d runtime / %d delay\n",
			l.Count, l.ShortKernels, 100*l.ShortKernelShare, l.LaunchDelayP50Us, l.LaunchDelayMeanUs, l.CPUDurationP50Us, l.RuntimeOutliers, l.LaunchDelayOutliers)
		fmt.Fprintf(w, "  graphs: %d graph launches, %d kernel launches; kernel p50 %.1f µs; attention %.1f%% of kernel time\n",
			rk.Graphs.GraphLaunches, rk.Graphs.KernelLaunches, rk.KernelDurP50Us, rk.AttentionPct)
		fmt.Fprintf(w, "  sync: %d host sync calls, %.0f µs (%.2f%% of kernel time); %d GPU sync events\n",
			rk.Sync.HostSyncCalls, rk.Sync.HostSyncUs, rk.Sync.SyncWaitPct, rk.Sync.GPUSyncEvents)
		if rk.Compile.Regions+rk.Compile.TritonKernels > 0 {
			fmt.Fprintf(w, "  torch.compile: %d regions (%.0f µs), %d Triton kernels\n", rk.Compile.Regions, rk.Compile.RegionUs, rk.Compile.TritonKernels)
		}
		m := rk.MemoryOps
		if m.PageableCopies+m.SyncMemcpyCalls+m.SyncMemsetCalls > 0 {
			fmt.Fprintf(w, "  memory ops: %d pageable copies (%d async), %d sync memcpy, %d sync memset calls\n",
				m.PageableCopies, m.PageableAsyncCopies, m.SyncMemcpyCalls, m.SyncMemsetCalls)
		}
		if rk.Steps != nil {
			fmt.Fprintf(w, "  steps: %d, p50 %.3f ms, mean %.3f ms\n", rk.Steps.Count, rk.Steps.P50Ms, rk.Steps.MeanMs)
		}
		fmt.Fprintln(w, "  top kernels:")
		for _, k := range rk.TopKernels {
			name := k.Name
			if len(name) > 90 {
				name = name[:87] + "..."
			}
			fmt.Fprintf(w, "    %10.1f µs  %6d×  %-13s %s\n", k.TotalUs, k.Count, k.Type, name)
		}
	}
	fmt.Fprintln(w)
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "findings: none exceeds its bound")
		return w.Flush()
	}
	fmt.Fprintln(w, "findings:")
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  [%s] %s (%s): %s\n    → %s\n", f.Severity, f.ID, f.Layer, f.Symptom, f.Prediction)
	}
	return w.Flush()
}

// TraceJSON writes a profiler timeline's analysis as indented JSON.
func TraceJSON(w io.Writer, r *trace.Result) error { return indented(w, r) }
