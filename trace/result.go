package trace

import "github.com/pel-ladder/pel/evidence"

// Result is the analysis of one profile (pel trace --json prints it).
type Result struct {
	Source   string             `json:"source"` // "kineto:FILE" or "nsys:FILE"
	Format   string             `json:"format"` // kineto | nsys
	Options  Options            `json:"options"`
	Ranks    []RankResult       `json:"ranks"`
	Findings []evidence.Finding `json:"findings"`
	Notes    []string           `json:"notes,omitempty"`
}

// RankResult holds every figure for one rank. Times are microseconds.
type RankResult struct {
	Rank      int    `json:"rank"`
	Device    string `json:"device,omitempty"`
	GPUEvents int    `json:"gpu_events"` // GPU operations analysed (after the last-step filter)
	// DroppedLastStep is true when HTA's filter removed the last ProfilerStep's work.
	DroppedLastStep bool `json:"dropped_last_step"`
	// Temporal is null when the rank has no GPU events (a CPU-only trace).
	Temporal           *Temporal      `json:"temporal"`
	CommCompOverlapPct *float64       `json:"comm_comp_overlap_pct"` // null without communication kernels
	CommPct            float64        `json:"comm_pct"`              // merged communication time, of kernel_time
	IdleByStream       []StreamIdle   `json:"idle_by_stream"`
	KernelTypes        []KernelType   `json:"kernel_types"`
	TopKernels         []KernelStat   `json:"top_kernels"`
	KernelDurP50Us     float64        `json:"kernel_duration_p50_us"`
	Launch             LaunchStats    `json:"launch"`
	QueueLength        []QueueStat    `json:"queue_length"`
	Sync               SyncStats      `json:"sync"`
	Graphs             GraphStats     `json:"graphs"`
	Compile            CompileStats   `json:"compile"`
	AttentionPct       float64        `json:"attention_pct"`       // attention kernels, of total kernel time
	DraftPct           float64        `json:"draft_pct,omitempty"` // speculative-decoding draft kernels, of total kernel time
	MemoryKernelPct    float64        `json:"memory_kernel_pct"`
	MemoryOps          MemoryOpStats  `json:"memory_ops"`
	Steps              *StepStats     `json:"steps"` // null without ProfilerStep annotations
	HostEvents         HostEventStats `json:"host_events"`
	// Notes say what in this rank's input pel counted differently from the plain reading.
	Notes []string `json:"notes,omitempty"`
}

// Temporal is HTA's temporal breakdown (hta/analyzers/breakdown_analysis.py
// get_temporal_breakdown).
type Temporal struct {
	KernelTimeUs    float64 `json:"kernel_time_us"`
	IdleUs          float64 `json:"idle_us"`
	ComputeUs       float64 `json:"compute_us"`
	NonComputeUs    float64 `json:"non_compute_us"`
	IdlePct         float64 `json:"idle_pct"`
	ComputePct      float64 `json:"compute_pct"`
	NonComputePct   float64 `json:"non_compute_pct"`
	FirstStartUs    float64 `json:"-"`
	kernelTimeNanos int64
}

// StreamIdle is HTA's idle-time breakdown of one stream.
type StreamIdle struct {
	Stream       int64   `json:"stream"`
	HostWaitUs   float64 `json:"host_wait_us"`
	KernelWaitUs float64 `json:"kernel_wait_us"`
	OtherUs      float64 `json:"other_us"`
	// HostAwayUs is the part of HostWaitUs (pel's, not HTA's) in gaps whose launching call
	// came more than LaunchDelayCutoffUs after its thread's previous runtime call ended: the
	// thread was not on the launch path but doing work the launches do not show (an engine
	// loop, a frontend in the same process, Python between launches, waiting for input).
	HostAwayUs float64 `json:"host_away_us"`
}

// KernelType is GPU time by kernel type, overlaps labelled "a overlapping b" as HTA does.
type KernelType struct {
	Type   string  `json:"type"`
	TimeUs float64 `json:"time_us"`
	Pct    float64 `json:"pct"`
}

// KernelStat summarises one kernel name.
type KernelStat struct {
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Count   int     `json:"count"`
	TotalUs float64 `json:"total_us"`
	MeanUs  float64 `json:"mean_us"`
	MinUs   float64 `json:"min_us"`
	MaxUs   float64 `json:"max_us"`
}

// LaunchStats follows hta/analyzers/cuda_kernel_analysis.py cuda_kernel_launch_stats
// (defaults runtime_cutoff 50 µs, launch_delay_cutoff 100 µs, include_memory_events) over
// every kernel-launch API and async copy/set, not only HTA's four names.
type LaunchStats struct {
	Count               int     `json:"count"`         // launches matched to their GPU operation
	ShortKernels        int     `json:"short_kernels"` // CPU launch ≤ runtime cutoff and GPU duration < CPU duration
	ShortKernelShare    float64 `json:"short_kernel_share"`
	RuntimeOutliers     int     `json:"runtime_outliers"`      // CPU launch duration > runtime cutoff
	LaunchDelayOutliers int     `json:"launch_delay_outliers"` // launch delay > launch-delay cutoff
	// LaunchDelay is GPU start − end of the launching call, clipped at 0 as HTA clips it (a
	// kernel that starts before its launch call returns has no launch delay).
	LaunchDelayP50Us  float64 `json:"launch_delay_p50_us"`
	LaunchDelayMeanUs float64 `json:"launch_delay_mean_us"`
	CPUDurationP50Us  float64 `json:"cpu_duration_p50_us"`
	GPUDurationP50Us  float64 `json:"gpu_duration_p50_us"`
	// HTA is cuda_kernel_launch_stats as HTA computes it, for a like-for-like check against
	// HTA's output: see HTALaunchStats.
	HTA HTALaunchStats `json:"hta"`
}

// HTALaunchStats summarise HTA's cuda_kernel_launch_stats DataFrame
// (hta/analyzers/cuda_kernel_analysis.py, defaults runtime_cutoff=50, launch_delay_cutoff=100,
// include_memory_events=True) with the three sets its own plots show: only launches by
// cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync and cudaMemsetAsync.
type HTALaunchStats struct {
	Count               int     `json:"count"`                 // rows of the DataFrame
	ShortKernels        int     `json:"short_kernels"`         // cpu_duration ≤ 50 and gpu_duration < cpu_duration
	RuntimeOutliers     int     `json:"runtime_outliers"`      // cpu_duration > 50
	LaunchDelayOutliers int     `json:"launch_delay_outliers"` // launch_delay > 100
	LaunchDelayMeanUs   float64 `json:"launch_delay_mean_us"`
	LaunchDelayP50Us    float64 `json:"launch_delay_p50_us"`
	CPUDurationP50Us    float64 `json:"cpu_duration_p50_us"`
	GPUDurationP50Us    float64 `json:"gpu_duration_p50_us"`
}

// QueueStat is the queue length of one stream (hta/analyzers/trace_counters.py): the number
// of launched but not yet started operations, summarised over its change points.
type QueueStat struct {
	Stream int64   `json:"stream"`
	Mean   float64 `json:"mean"`
	Max    int     `json:"max"`
	// tie bookkeeping for the comparison with HTA (see queueLength)
	points, tiePairs, tieMax int
}

// SyncStats are synchronization waits.
type SyncStats struct {
	HostSyncCalls   int        `json:"host_sync_calls"` // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, blocking memcpy/memset...
	HostSyncUs      float64    `json:"host_sync_us"`    // union of their durations
	SyncWaitPct     float64    `json:"sync_wait_pct"`   // HostSyncUs of kernel_time
	GPUSyncEvents   int        `json:"gpu_sync_events"` // cuda_sync / CUPTI synchronization records
	GPUSyncUs       float64    `json:"gpu_sync_us"`
	TopSyncAPIs     []NameTime `json:"top_sync_apis"`
	BlockingMemcpys int        `json:"blocking_memcpy_calls"`
}

// NameTime is a name with a count and a total time.
type NameTime struct {
	Name    string  `json:"name"`
	Count   int     `json:"count"`
	TotalUs float64 `json:"total_us"`
}

// GraphStats compares CUDA-graph launches with per-kernel launches.
type GraphStats struct {
	GraphLaunches  int     `json:"graph_launches"`
	KernelLaunches int     `json:"kernel_launches"`
	GraphShare     float64 `json:"graph_launch_share"` // graph / (graph + kernel)
}

// CompileStats describes torch.compile activity.
type CompileStats struct {
	Regions       int     `json:"regions"` // Torch-Compiled Region / CompiledFunction / TorchDynamo Cache Lookup
	RegionUs      float64 `json:"region_us"`
	TritonKernels int     `json:"triton_kernels"` // GPU kernels named triton_*
}

// MemoryOpStats are the memory-operation problems nsys analyze flags.
type MemoryOpStats struct {
	PageableAsyncCopies int `json:"pageable_async_copies"` // async copy API on pageable host memory: it runs synchronously
	SyncMemcpyCalls     int `json:"sync_memcpy_calls"`     // cudaMemcpy & co (cuda_memcpy_sync rule)
	SyncMemsetCalls     int `json:"sync_memset_calls"`     // cudaMemset & co (cuda_memset_sync rule)
	PageableCopies      int `json:"pageable_copies"`       // any copy touching pageable memory
}

// StepStats are per-ProfilerStep figures.
type StepStats struct {
	Count   int       `json:"count"`
	P50Ms   float64   `json:"p50_ms"`
	MeanMs  float64   `json:"mean_ms"`
	Steps   []StepRow `json:"steps"`
	Dropped string    `json:"dropped,omitempty"` // the step HTA's default filter removed
}

// StepRow is one step: host duration, and the GPU work its host calls launched.
type StepRow struct {
	Name      string  `json:"name"`
	DurUs     float64 `json:"dur_us"`
	Kernels   int     `json:"gpu_ops"`
	GPUBusyUs float64 `json:"gpu_busy_us"`
}

// HostEventStats counts host-side events seen.
type HostEventStats struct {
	CPUOps      int `json:"cpu_ops"`
	Annotations int `json:"annotations"`
	APICalls    int `json:"api_calls"`
}
