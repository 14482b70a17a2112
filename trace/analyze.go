package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	pq "github.com/pel-ladder/pel/quantile"

	"github.com/pel-ladder/pel/internal/ctxio"
	"github.com/pel-ladder/pel/internal/figure"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/trace/kineto"
	"github.com/pel-ladder/pel/trace/nsys"
	"github.com/pel-ladder/pel/trace/timeline"
)

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Analyze reads a Kineto JSON(.gz) trace or an Nsight Systems SQLite export (told apart by
// their first bytes, not the file name) and computes every analysis. Errors name the file.
func Analyze(path string, opts Options) (*Result, error) {
	return AnalyzeContext(context.Background(), path, opts)
}

// AnalyzeContext is Analyze that stops reading when ctx ends (Ctrl-C): an Nsight export's
// queries are interrupted inside SQLite, a Kineto trace's reads end; the error is ctx's.
func AnalyzeContext(ctx context.Context, path string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	f, err := safefile.OpenNamed(path) // a FIFO would block the open (and SQLite's)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	head = head[:n]
	base := filepath.Base(path)
	var tl *timeline.Timeline
	var format string
	if bytes.Equal(head, sqliteMagic) {
		format = "nsys"
		f.Close()
		tl, err = nsys.LoadContext(ctx, path)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, readErr(path, "Nsight Systems export", err)
		}
	} else {
		format = "kineto"
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tl, _, err = kineto.Load(ctxio.Reader(ctx, f), kineto.LoadOptions{HTATime: !opts.ExactTime})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, readErr(path, "PyTorch profiler (Kineto) trace", err)
		}
	}
	r := analyzeTimeline(tl, opts, true)
	if err := checkNonNegative(r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Source = format + ":" + base
	r.Findings = Findings(r)
	return r, nil
}

// readErr names the file; a trace that was read but is malformed or over a limit says so
// rather than "not readable".
func readErr(path, what string, err error) error {
	var m *timeline.MalformedError
	var big *timeline.ErrTooLarge
	if errors.As(err, &m) || errors.As(err, &big) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return fmt.Errorf("%s: not a readable %s: %w", path, what, err)
}

// AnalyzeTimeline computes every analysis on an already loaded timeline (Findings and Source
// are left to the caller).
func AnalyzeTimeline(tl *timeline.Timeline, opts Options) *Result {
	return analyzeTimeline(tl, opts, false)
}

// analyzeTimeline is AnalyzeTimeline; owned says the caller loaded tl and drops it after:
// each rank's operations and calls are then filtered in place and released once analysed,
// so the analysis holds one copy of them rather than two.
func analyzeTimeline(tl *timeline.Timeline, opts Options, owned bool) *Result {
	opts = opts.withDefaults()
	r := &Result{Format: tl.Format, Options: opts, Notes: tl.Notes, Ranks: []RankResult{}}
	for _, rk := range tl.Ranks {
		r.Ranks = append(r.Ranks, analyzeRank(tl.Names, rk, opts, owned))
		if owned {
			rk.GPU, rk.Calls, rk.DeviceSyncs = nil, nil, nil
		}
	}
	sort.SliceStable(r.Ranks, func(i, j int) bool { return r.Ranks[i].Rank < r.Ranks[j].Rank })
	return r
}

func us(ns int64) float64 { return float64(ns) / 1000 }

func round(v float64, digits int) float64 {
	// numpy's round (HTA rounds its percentages with pandas/numpy): half to even of v·10^d.
	p := math.Pow(10, float64(digits))
	return math.RoundToEven(v*p) / p
}

func pct(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	// HTA: round(100 * (part / whole), 2), in that order (breakdown_analysis.py)
	return round(100*(float64(part)/float64(whole)), 2)
}

// HTA's kernel classification (hta/utils/utils.py get_kernel_type with the patterns of
// hta/common/types.py), checked in HTA's order: communication, memory, computation, and
// "other" for what none claims. Python's re.match anchors at the start, hence ^(?:…).
// NCCL ≥ 2.19's ncclDevKernel_* names start with "nccl", so HTA counts them as
// communication; so does "hip*" (HTA's pattern, kept as is); cuda_sync records
// ("Stream Sync", "Context Sync", "Event Sync", "Stream Wait Event") are "other".
var (
	htaCommPattern   = regexp.MustCompile(`^(?:(nccl.*)|(hip)|(hccl)|(.*ncclKernel.*))`)
	htaMemoryPattern = regexp.MustCompile(`^(?:((hip)?Memcpy)|((hip)?Memset)|(dma))`)
	// ComputeKernelGroupingPattern is inverse_match=True: a match means "not computation".
	htaNotComputePattern = regexp.MustCompile(`^(?:(nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(.*Sync)|(Stream Wait Event)|` +
		`(cuda.*LaunchKernel)|(runFunction)|(hip)|(job_exe)|(packet)|(pe_exe)|(cpum_exe_subgraph)|(hccl)|` +
		`(collective_subgraph_execution))`)
)

func kernelType(name string) int {
	switch {
	case htaCommPattern.MatchString(name):
		return typeComm
	case htaMemoryPattern.MatchString(name):
		return typeMemory
	case !htaNotComputePattern.MatchString(name):
		return typeComp
	}
	return typeOther
}

// Bits follow HTA's _get_gpu_kernel_type_time order: COMPUTATION, COMMUNICATION, MEMORY.
// typeOther is outside HTA's analysis list: in the temporal breakdown it is kernel time
// that is not compute (non-compute), and the kernel-type shares leave it out.
const (
	typeComp   = 1
	typeComm   = 2
	typeMemory = 4
	typeOther  = 8
)

var typeNames = []struct {
	bit  int
	name string
}{{typeComp, "computation"}, {typeComm, "communication"}, {typeMemory, "memory"}}

func typeName(t int) string {
	for _, tn := range typeNames {
		if t == tn.bit {
			return tn.name
		}
	}
	return "other"
}

type interval struct{ s, e int64 }

// merge is hta/utils/utils.py merge_kernel_intervals: sort by start; an interval starting
// after the running maximum end opens a new group. Input is sorted and merged in place (the
// result shares iv's array): every caller is done with iv, and a trace's kernels number in
// the millions.
func merge(iv []interval) []interval {
	sort.Slice(iv, func(i, j int) bool { return iv[i].s < iv[j].s })
	out := iv[:0]
	for _, x := range iv {
		if n := len(out); n > 0 && x.s <= out[n-1].e {
			if x.e > out[n-1].e {
				out[n-1].e = x.e
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

func total(iv []interval) int64 {
	var t int64
	for _, x := range iv {
		t += x.e - x.s
	}
	return t
}

// overlapTime is the time covered by both merged sets a and b.
func overlapTime(a, b []interval) int64 {
	var t int64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		s := max(a[i].s, b[j].s)
		e := min(a[i].e, b[j].e)
		if e > s {
			t += e - s
		}
		if a[i].e < b[j].e {
			i++
		} else {
			j++
		}
	}
	return t
}

// quantile is HTA's (pandas') default linear-interpolation quantile of sorted values, 0 for
// none: the trace figures reproduce HTA's, so they keep its definition (package quantile's
// one exception, quantile.Linear).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return pq.Linear(sorted, q)
}

func analyzeRank(names *timeline.Names, rk *timeline.Rank, opts Options, owned bool) RankResult {
	res := RankResult{Rank: rk.Rank, Device: rk.Device, IdleByStream: []StreamIdle{}, KernelTypes: []KernelType{},
		TopKernels: []KernelStat{}, QueueLength: []QueueStat{}}
	res.HostEvents = HostEventStats{CPUOps: rk.CPUOps, Annotations: rk.Annotations, APICalls: len(rk.Calls)}
	gpu, devSyncs, calls, callByCorr, steps, compile, dropped := filterLastStep(names, rk, opts, owned)
	res.DroppedLastStep = dropped != ""
	res.GPUEvents = len(gpu)

	temporalAndTypes(names, gpu, &res)
	idleByStream(gpu, calls, callByCorr, opts, &res)
	kernelBreakdown(names, gpu, opts, &res)
	launchStats(gpu, calls, callByCorr, opts, &res)
	queueLength(gpu, calls, callByCorr, &res)
	syncStats(names, gpu, devSyncs, calls, &res)
	memoryOps(gpu, calls, callByCorr, &res)
	for _, c := range calls {
		switch {
		case c.Flags&timeline.CallGraph != 0:
			res.Graphs.GraphLaunches++
		case c.Flags&timeline.CallLaunch != 0:
			res.Graphs.KernelLaunches++
		}
	}
	if n := res.Graphs.GraphLaunches + res.Graphs.KernelLaunches; n > 0 {
		res.Graphs.GraphShare = round(float64(res.Graphs.GraphLaunches)/float64(n), 4)
	}
	res.Compile.Regions = len(compile)
	var cu int64
	for _, s := range compile {
		cu += s.End - s.Start
	}
	res.Compile.RegionUs = us(cu)
	res.Steps = stepStats(names, gpu, calls, callByCorr, steps, dropped)
	return res
}

// filterLastStep is HTA's _filter_irrelevant_gpu_kernels (hta/common/trace.py): with two or
// more ProfilerStep names, host events from the last step's start on are dropped, and GPU
// events survive only if the host call with their correlation id survives. With
// KeepLastStep, host events up to the end of the last step are kept instead. It also returns
// the kept calls' correlation index. With inPlace (the rank is the caller's to consume) the
// kept calls and operations overwrite the rank's own slices.
func filterLastStep(names *timeline.Names, rk *timeline.Rank, opts Options, inPlace bool) (gpu, devSyncs []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, steps, compile []timeline.Span, dropped string) {
	gpu, devSyncs, calls, steps, compile = rk.GPU, rk.DeviceSyncs, rk.Calls, rk.Steps, rk.Compile
	distinct := map[uint32]bool{}
	for _, s := range rk.Steps {
		distinct[s.Name] = true
	}
	if len(distinct) < 2 || !rk.HasCPU {
		callByCorr = newCorrIndex(calls)
		return
	}
	last := rk.Steps[0]
	var lastEnd int64 = math.MinInt64
	for _, s := range rk.Steps {
		if s.Start > last.Start {
			last = s
		}
		lastEnd = max(lastEnd, s.End)
	}
	keep := func(ts int64) bool {
		if opts.KeepLastStep {
			return ts <= lastEnd
		}
		return ts < last.Start
	}
	// Each kept set is counted first, then filled once at its size: in place when the rank
	// is the caller's to consume, else in a copy (the rank's own slices stay as they are).
	nc := 0
	for _, c := range rk.Calls {
		if keep(c.Start) {
			nc++
		}
	}
	if inPlace {
		calls = rk.Calls[:0]
	} else {
		calls = make([]timeline.Call, 0, nc)
	}
	for _, c := range rk.Calls {
		if keep(c.Start) {
			calls = append(calls, c)
		}
	}
	// A GPU operation survives when a kept call has its correlation id.
	callByCorr = newCorrIndex(calls)
	// GPU events without a correlation id: HTA merges them on −1 with every host event
	// (duplicating them); pel keeps each once if it starts before the last step.
	keepOp := func(op timeline.Op) bool {
		return (op.Corr >= 0 && callByCorr.has(op.Corr)) || (op.Corr < 0 && keep(op.Start))
	}
	ng := 0
	for _, op := range rk.GPU {
		if keepOp(op) {
			ng++
		}
	}
	if inPlace {
		gpu = rk.GPU[:0]
	} else {
		gpu = make([]timeline.Op, 0, ng)
	}
	for _, op := range rk.GPU {
		if keepOp(op) {
			gpu = append(gpu, op)
		}
	}
	devSyncs = nil
	for _, op := range rk.DeviceSyncs {
		if op.Corr >= 0 && callByCorr.has(op.Corr) {
			devSyncs = append(devSyncs, op)
		}
	}
	steps = nil
	for _, s := range rk.Steps {
		if keep(s.Start) {
			steps = append(steps, s)
		}
	}
	compile = nil
	for _, s := range rk.Compile {
		if keep(s.Start) {
			compile = append(compile, s)
		}
	}
	if !opts.KeepLastStep {
		dropped = names.Name(last.Name)
	}
	return
}

// temporalAndTypes computes the temporal breakdown (breakdown_analysis.py
// get_temporal_breakdown), kernel-type times with overlaps (_get_gpu_kernel_type_time, with
// memory kernels included) and the communication/computation overlap
// (hta/analyzers/communication_analysis.py get_comm_comp_overlap).
func temporalAndTypes(names *timeline.Names, gpu []timeline.Op, res *RankResult) {
	if len(gpu) == 0 {
		return
	}
	// Two passes, so that each type's intervals are allocated once at their size.
	all := make([]interval, 0, len(gpu))
	byType := map[int][]interval{}
	typeCache := map[uint32]int{}
	typeOf := func(name uint32) int {
		t, ok := typeCache[name]
		if !ok {
			t = kernelType(names.Name(name))
			typeCache[name] = t
		}
		return t
	}
	perType := map[int]int{}
	for _, op := range gpu {
		perType[typeOf(op.Name)]++
	}
	for t, n := range perType {
		byType[t] = make([]interval, 0, n)
	}
	for _, op := range gpu {
		iv := interval{op.Start, op.End}
		all = append(all, iv)
		t := typeOf(op.Name)
		byType[t] = append(byType[t], iv)
	}
	m := merge(all)
	kernelTime := m[len(m)-1].e - m[0].s
	idle := kernelTime - total(m)
	comp := merge(byType[typeComp])
	comm := merge(byType[typeComm])
	mem := merge(byType[typeMemory])
	compute := total(comp)
	non := kernelTime - compute - idle
	res.Temporal = &Temporal{
		KernelTimeUs: us(kernelTime), IdleUs: us(idle), ComputeUs: us(compute), NonComputeUs: us(non),
		IdlePct: pct(idle, kernelTime), ComputePct: pct(compute, kernelTime), NonComputePct: pct(non, kernelTime),
		kernelTimeNanos: kernelTime,
	}
	if len(comm) > 0 {
		commT := total(comm)
		v := 0.0
		if commT > 0 {
			v = round(100*(float64(overlapTime(comm, comp))/float64(commT)), 2)
		}
		res.CommCompOverlapPct = &v
		res.CommPct = pct(commT, kernelTime)
	}
	res.MemoryKernelPct = pct(total(mem), kernelTime)

	// sweep over the merged sets of each type, labelling each stretch by the set of
	// types running (HTA: "COMPUTATION overlapping COMMUNICATION")
	type edge struct {
		t int64
		d int
	}
	edges := make([]edge, 0, 2*(len(comp)+len(comm)+len(mem)))
	for _, tn := range typeNames {
		for _, iv := range map[int][]interval{typeComp: comp, typeComm: comm, typeMemory: mem}[tn.bit] {
			edges = append(edges, edge{iv.s, tn.bit}, edge{iv.e, -tn.bit})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].t < edges[j].t })
	times := map[int]int64{}
	running := 0
	for i, e := range edges {
		running += e.d
		if running > 0 && i+1 < len(edges) {
			times[running] += edges[i+1].t - e.t
		}
	}
	var sum int64
	for _, v := range times {
		sum += v
	}
	for mask, v := range times {
		var parts []string
		for _, tn := range typeNames {
			if mask&tn.bit != 0 {
				parts = append(parts, tn.name)
			}
		}
		p := 0.0
		if sum > 0 {
			p = round(float64(v)/float64(sum)*100, 1) // HTA: (sum / total) * 100, rounded to 1
		}
		res.KernelTypes = append(res.KernelTypes, KernelType{Type: strings.Join(parts, " overlapping "), TimeUs: us(v), Pct: p})
	}
	sort.Slice(res.KernelTypes, func(i, j int) bool {
		a, b := res.KernelTypes[i], res.KernelTypes[j]
		if a.TimeUs != b.TimeUs {
			return a.TimeUs > b.TimeUs
		}
		return a.Type < b.Type
	})
}

// byStream groups the GPU operations that pass use by stream, as indices into gpu (an index
// is a tenth of an operation's size), each stream's in file order and then sorted stably by
// start; the streams come sorted.
func byStream(gpu []timeline.Op, use func(timeline.Op) bool) (map[int32][]int32, []int32) {
	per := map[int32]int{}
	for _, op := range gpu {
		if use(op) {
			per[op.Stream]++
		}
	}
	m := make(map[int32][]int32, len(per))
	keys := make([]int32, 0, len(per))
	for k, n := range per {
		m[k] = make([]int32, 0, n)
		keys = append(keys, k)
	}
	for i, op := range gpu {
		if use(op) {
			m[op.Stream] = append(m[op.Stream], int32(i))
		}
	}
	for _, ix := range m {
		sort.SliceStable(ix, func(i, j int) bool { return gpu[ix[i]].Start < gpu[ix[j]].Start })
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return m, keys
}

// idleByStream is breakdown_analysis.py get_idle_time_breakdown and
// _analyze_idle_time_for_stream: only kernel, memcpy and memset events count ("Need to
// filter out events with `cuda_sync` category"), so a stream holding only sync records
// (4294967295, CUPTI's "no stream") is not listed. Each gap between consecutive operations
// on a stream is host_wait when the launching call started after the previous operation
// ended, else kernel_wait when shorter than the threshold, else other.
func idleByStream(gpu []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, opts Options, res *RankResult) {
	streams, keys := byStream(gpu, func(op timeline.Op) bool { return op.Kind != timeline.OpSync })
	thr := opts.KernelWaitUs * 1000
	away := awayIndex(calls, int64(opts.LaunchDelayCutoffUs*1000))
	overlapped := 0
	for _, k := range keys {
		ix := streams[k]
		var host, kern, other, hostAway int64
		prevEnd := gpu[ix[0]].End
		for _, i := range ix[1:] {
			op := gpu[i]
			// HTA takes the previous operation's end; an operation that overlaps it
			// (programmatic dependent launch, or a clock problem) would make that gap
			// negative. The latest end so far never does: no idle time then.
			gap := op.Start - prevEnd
			if gap < 0 {
				overlapped++
				gap = 0
			}
			ci, ok := callByCorr.get(op.Corr)
			switch {
			case op.Corr >= 0 && ok && calls[ci].Start > prevEnd:
				host += gap
				if away.before(calls[ci]) {
					hostAway += gap
				}
			case float64(gap) < thr:
				kern += gap
			default:
				other += gap
			}
			prevEnd = max(prevEnd, op.End)
		}
		res.IdleByStream = append(res.IdleByStream, StreamIdle{Stream: streamID(k), HostWaitUs: us(host), KernelWaitUs: us(kern), OtherUs: us(other), HostAwayUs: us(hostAway)})
	}
	if overlapped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d GPU operations start before the previous one on their stream ends "+
			"(programmatic dependent launch, or a clock problem): they add no idle time", overlapped))
	}
}

// callGaps answers, for a runtime call, whether its thread had issued no runtime call for
// longer than cutoff before it: per host thread, starts sorted, with the latest end among
// the calls that start no later than each. Other threads' calls do not count: a thread
// polling or blocked in a sync across the gap says nothing of the launching thread.
type callGaps struct {
	starts, lastEnd map[uint16][]int64
	cutoff          int64
}

func awayIndex(calls []timeline.Call, cutoff int64) callGaps {
	ix := make([]int, len(calls))
	for i := range ix {
		ix[i] = i
	}
	sort.Slice(ix, func(a, b int) bool { return calls[ix[a]].Start < calls[ix[b]].Start })
	g := callGaps{starts: map[uint16][]int64{}, lastEnd: map[uint16][]int64{}, cutoff: cutoff}
	for _, i := range ix {
		c := &calls[i]
		ends := g.lastEnd[c.Thread]
		end := c.End
		if n := len(ends); n > 0 {
			end = max(end, ends[n-1])
		}
		g.starts[c.Thread] = append(g.starts[c.Thread], c.Start)
		g.lastEnd[c.Thread] = append(ends, end)
	}
	return g
}

// before: the calls of c's thread that started before it all ended more than cutoff
// before it (a thread's first call has no predecessor and counts as on the launch path).
func (g callGaps) before(c timeline.Call) bool {
	starts := g.starts[c.Thread]
	j := sort.Search(len(starts), func(j int) bool { return starts[j] >= c.Start }) - 1
	return j >= 0 && c.Start-g.lastEnd[c.Thread][j] > g.cutoff
}

func kernelBreakdown(names *timeline.Names, gpu []timeline.Op, opts Options, res *RankResult) {
	type agg struct {
		n             int
		sum, min, max int64
	}
	by := map[uint32]*agg{}
	nk := 0
	for _, op := range gpu {
		if op.Kind == timeline.OpKernel {
			nk++
		}
	}
	durs := make([]float64, 0, nk)
	var kernelTotal, attn, draft int64
	for _, op := range gpu {
		if op.Kind == timeline.OpSync {
			continue
		}
		d := op.End - op.Start
		a := by[op.Name]
		if a == nil {
			a = &agg{min: d, max: d}
			by[op.Name] = a
		}
		a.n++
		a.sum += d
		a.min, a.max = min(a.min, d), max(a.max, d)
		if op.Kind == timeline.OpKernel {
			durs = append(durs, float64(d)/1000)
			kernelTotal += d
		}
	}
	for id, a := range by {
		name := names.Name(id)
		if isAttention(name) {
			attn += a.sum
		}
		if isDraft(name) {
			draft += a.sum
		}
		if strings.HasPrefix(name, "triton_") {
			res.Compile.TritonKernels += a.n
		}
		res.TopKernels = append(res.TopKernels, KernelStat{Name: name, Type: typeName(kernelType(name)), Count: a.n,
			TotalUs: us(a.sum), MeanUs: round(us(a.sum)/float64(a.n), 3), MinUs: us(a.min), MaxUs: us(a.max)})
	}
	sort.Slice(res.TopKernels, func(i, j int) bool {
		a, b := res.TopKernels[i], res.TopKernels[j]
		if a.TotalUs != b.TotalUs {
			return a.TotalUs > b.TotalUs
		}
		return a.Name < b.Name
	})
	if len(res.TopKernels) > opts.TopKernels {
		res.TopKernels = res.TopKernels[:opts.TopKernels]
	}
	sort.Float64s(durs)
	res.KernelDurP50Us = round(quantile(durs, 0.5), 3)
	if kernelTotal > 0 {
		res.AttentionPct = pct(attn, kernelTotal)
		res.DraftPct = pct(draft, kernelTotal)
	}
}

// isDraft recognises speculative-decoding draft kernels by name: EAGLE/Medusa heads and
// draft-model forwards as vLLM and SGLang name them (eagle_*, medusa_*, *draft*). The
// diagnosis turns their share into the cost of a draft token (speculation's net benefit).
func isDraft(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "draft") || strings.Contains(l, "eagle") || strings.Contains(l, "medusa")
}

// isAttention recognises attention kernels: FlashAttention (flash_fwd_*, flash::), xFormers /
// CUTLASS fmha, vLLM paged_attention, and other *attention*/*attn* kernels.
func isAttention(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "flash") || strings.Contains(l, "fmha") || strings.Contains(l, "attention") ||
		strings.Contains(l, "attn")
}

// launchStats follows cuda_kernel_analysis.py cuda_kernel_launch_stats: each GPU operation
// joined to its launching call by correlation id, launch_delay = GPU start − call start −
// call duration, clipped at 0 as HTA clips it. Launch.HTA keeps HTA's API list
// (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync, cudaMemsetAsync); the main
// figures also count every other kernel-launch API (cuLaunchKernel for Triton, hip* for
// ROCm) and async copies/sets.
func launchStats(gpu []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, opts Options, res *RankResult) {
	// A sample is the (operation, call) pairs it holds; its figures are computed again, one
	// at a time into one buffer, when it is summarised.
	type pair struct{ op, call int32 }
	var own, hta []pair
	ls := &res.Launch
	add := func(s *[]pair, i int, ci int32, delay, cpu, g float64) (short, runtimeOut, delayOut bool) {
		*s = append(*s, pair{int32(i), ci})
		return cpu <= opts.RuntimeCutoffUs && g < cpu, cpu > opts.RuntimeCutoffUs, delay > opts.LaunchDelayCutoffUs
	}
	count := func(n *int, b bool) {
		if b {
			*n++
		}
	}
	for i, op := range gpu {
		if op.Corr < 0 {
			continue
		}
		ci, ok := callByCorr.get(op.Corr)
		if !ok {
			continue
		}
		c := calls[ci]
		delay, cpu, g := launchFigures(op, c)
		if c.Flags&timeline.CallHTALaunchStat != 0 {
			h := &ls.HTA
			h.Count++
			s, r, d := add(&hta, i, ci, delay, cpu, g)
			count(&h.ShortKernels, s)
			count(&h.RuntimeOutliers, r)
			count(&h.LaunchDelayOutliers, d)
		}
		if op.Kind == timeline.OpSync || (c.Flags&(timeline.CallLaunch|timeline.CallHTALaunchStat) == 0 &&
			!(c.Flags&timeline.CallAsync != 0 && c.Flags&(timeline.CallMemcpy|timeline.CallMemset) != 0)) {
			continue
		}
		ls.Count++
		s, r, d := add(&own, i, ci, delay, cpu, g)
		count(&ls.ShortKernels, s)
		count(&ls.RuntimeOutliers, r)
		count(&ls.LaunchDelayOutliers, d)
	}
	var buf []float64
	// figure fills buf with the k-th launch figure (0 delay, 1 CPU, 2 GPU duration) of s,
	// in sample order.
	figureOf := func(s []pair, k int) []float64 {
		buf = buf[:0]
		for _, p := range s {
			f := [3]float64{}
			f[0], f[1], f[2] = launchFigures(gpu[p.op], calls[p.call])
			buf = append(buf, f[k])
		}
		return buf
	}
	p50 := func(v []float64) float64 {
		sort.Float64s(v)
		return round(quantile(v, 0.5), 3)
	}
	summary := func(s []pair) (meanDelay, p50Delay, p50CPU, p50GPU float64) {
		d := figureOf(s, 0)
		meanDelay = round(figure.Mean(d), 3)
		p50Delay = p50(d)
		p50CPU = p50(figureOf(s, 1))
		p50GPU = p50(figureOf(s, 2))
		return meanDelay, p50Delay, p50CPU, p50GPU
	}
	if h := &ls.HTA; h.Count > 0 {
		h.LaunchDelayMeanUs, h.LaunchDelayP50Us, h.CPUDurationP50Us, h.GPUDurationP50Us = summary(hta)
	}
	if ls.Count == 0 {
		return
	}
	ls.ShortKernelShare = round(float64(ls.ShortKernels)/float64(ls.Count), 4)
	ls.LaunchDelayMeanUs, ls.LaunchDelayP50Us, ls.CPUDurationP50Us, ls.GPUDurationP50Us = summary(own)
}

// launchFigures are HTA's launch figures of a GPU operation and its launching call, in µs:
// launch delay (GPU start − call end, clipped at 0), the call's CPU duration and the
// operation's GPU duration.
func launchFigures(op timeline.Op, c timeline.Call) (delay, cpu, g float64) {
	cpu = float64(c.End-c.Start) / 1000
	g = float64(op.End-op.Start) / 1000
	delay = max(0, float64(op.Start-c.End)/1000)
	return delay, cpu, g
}

// queueLength is trace_counters.py _get_queue_length_time_series_for_rank summarised as in
// get_queue_length_summary: +1 when a launch call in HTA's runtime-launch list enqueues an
// operation, −1 when that operation starts; mean and max over the change points.
//
// At equal timestamps pel counts the start before the launch (a departure and an arrival in
// the same µs never make a queue longer than existed). HTA orders such ties by numpy's
// unstable quicksort over its frame's row order, so its mean can differ by up to
// 2·(tied launch/start pairs)/points and its max by the largest tie: tieSlack records both.
func queueLength(gpu []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, res *RankResult) {
	type pt struct {
		t int64
		d int
	}
	launched := func(op timeline.Op) (int32, bool) {
		if op.Corr < 0 {
			return 0, false
		}
		ci, ok := callByCorr.get(op.Corr)
		return ci, ok && calls[ci].Flags&timeline.CallHTALaunch != 0
	}
	// Counted first, so that each stream's points are allocated once at their size.
	n := map[int32]int{}
	for _, op := range gpu {
		if _, ok := launched(op); ok {
			n[op.Stream] += 2
		}
	}
	per := make(map[int32][]pt, len(n))
	for k, c := range n {
		per[k] = make([]pt, 0, c)
	}
	for _, op := range gpu {
		if ci, ok := launched(op); ok {
			per[op.Stream] = append(per[op.Stream], pt{calls[ci].Start, 1}, pt{op.Start, -1})
		}
	}
	keys := make([]int32, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		pts := per[k]
		sort.SliceStable(pts, func(i, j int) bool {
			if pts[i].t != pts[j].t {
				return pts[i].t < pts[j].t
			}
			return pts[i].d < pts[j].d
		})
		q, mx, sum := 0, 0, 0
		qs := QueueStat{Stream: streamID(k)}
		for i := 0; i < len(pts); {
			j, plus := i, 0
			for ; j < len(pts) && pts[j].t == pts[i].t; j++ {
				q += pts[j].d
				sum += q
				mx = max(mx, q)
				if pts[j].d > 0 {
					plus++
				}
			}
			minus := j - i - plus
			qs.tiePairs += plus * minus
			qs.tieMax = max(qs.tieMax, min(plus, minus))
			i = j
		}
		qs.points = len(pts)
		qs.Mean, qs.Max = round(float64(sum)/float64(len(pts)), 3), mx
		res.QueueLength = append(res.QueueLength, qs)
	}
}

func syncStats(names *timeline.Names, gpu, devSyncs []timeline.Op, calls []timeline.Call, res *RankResult) {
	s := &res.Sync
	var iv []interval
	by := map[uint32]*NameTime{}
	for _, c := range calls {
		if c.Flags&timeline.CallSync == 0 {
			continue
		}
		s.HostSyncCalls++
		if c.Flags&timeline.CallMemcpy != 0 {
			s.BlockingMemcpys++
		}
		iv = append(iv, interval{c.Start, c.End})
		nt := by[c.Name]
		if nt == nil {
			nt = &NameTime{Name: timeline.CanonicalAPI(names.Name(c.Name))}
			by[c.Name] = nt
		}
		nt.Count++
		nt.TotalUs += us(c.End - c.Start)
	}
	hs := total(merge(iv))
	s.HostSyncUs = us(hs)
	if res.Temporal != nil {
		s.SyncWaitPct = pct(hs, res.Temporal.kernelTimeNanos)
	}
	var g int64
	for _, op := range gpu {
		if op.Kind == timeline.OpSync {
			s.GPUSyncEvents++
			g += op.End - op.Start
		}
	}
	for _, op := range devSyncs {
		s.GPUSyncEvents++
		g += op.End - op.Start
	}
	s.GPUSyncUs = us(g)
	s.TopSyncAPIs = []NameTime{}
	for _, nt := range by {
		nt.TotalUs = round(nt.TotalUs, 3)
		s.TopSyncAPIs = append(s.TopSyncAPIs, *nt)
	}
	sort.Slice(s.TopSyncAPIs, func(i, j int) bool {
		a, b := s.TopSyncAPIs[i], s.TopSyncAPIs[j]
		if a.TotalUs != b.TotalUs {
			return a.TotalUs > b.TotalUs
		}
		return a.Name < b.Name
	})
	if len(s.TopSyncAPIs) > 5 {
		s.TopSyncAPIs = s.TopSyncAPIs[:5]
	}
}

// memoryOps applies nsys analyze's memory rules: cuda_memcpy_async (an async copy API on
// pageable memory, which the driver performs synchronously), cuda_memcpy_sync and
// cuda_memset_sync (synchronous API calls).
func memoryOps(gpu []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, res *RankResult) {
	m := &res.MemoryOps
	for _, op := range gpu {
		if op.Kind != timeline.OpMemcpy || op.Flags&timeline.OpPageable == 0 {
			continue
		}
		m.PageableCopies++
		if ci, ok := callByCorr.get(op.Corr); ok && op.Corr >= 0 && calls[ci].Flags&timeline.CallAsync != 0 {
			m.PageableAsyncCopies++
		}
	}
	for _, c := range calls {
		if c.Flags&timeline.CallSync == 0 {
			continue
		}
		if c.Flags&timeline.CallMemcpy != 0 {
			m.SyncMemcpyCalls++
		}
		if c.Flags&timeline.CallMemset != 0 {
			m.SyncMemsetCalls++
		}
	}
}

// stepStats gives per-ProfilerStep host durations and the GPU work launched inside each step
// (HTA assigns GPU events to the iteration of their launching call: trace.py add_iteration).
func stepStats(names *timeline.Names, gpu []timeline.Op, calls []timeline.Call, callByCorr *corrIndex, steps []timeline.Span, dropped string) *StepStats {
	if len(steps) == 0 {
		return nil
	}
	sorted := append([]timeline.Span(nil), steps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	st := &StepStats{Count: len(sorted), Dropped: dropped}
	ivs := make([][]interval, len(sorted))
	counts := make([]int, len(sorted))
	for _, op := range gpu {
		ci, ok := callByCorr.get(op.Corr)
		if op.Corr < 0 || !ok {
			continue
		}
		t := calls[ci].Start
		i := sort.Search(len(sorted), func(i int) bool { return sorted[i].Start > t }) - 1
		if i < 0 || t >= sorted[i].End {
			continue
		}
		ivs[i] = append(ivs[i], interval{op.Start, op.End})
		counts[i]++
	}
	var durs []float64
	var sum float64
	for i, s := range sorted {
		d := us(s.End - s.Start)
		durs = append(durs, d)
		sum += d
		st.Steps = append(st.Steps, StepRow{Name: names.Name(s.Name), DurUs: d, Kernels: counts[i], GPUBusyUs: us(total(merge(ivs[i])))})
	}
	sort.Float64s(durs)
	st.P50Ms = round(quantile(durs, 0.5)/1000, 3)
	st.MeanMs = round(sum/float64(len(durs))/1000, 3)
	return st
}

// streamID prints a stream as the trace wrote it: CUPTI's "no stream" is uint32 −1.
func streamID(s int32) int64 { return int64(uint32(s)) }
