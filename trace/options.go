package trace

// Options control the analyses. The zero value is not HTA's default: use DefaultOptions.
type Options struct {
	// KeepLastStep keeps the last ProfilerStep. HTA drops it by default
	// (Trace.load_traces(include_last_profiler_step=False), hta/common/trace.py
	// _filter_irrelevant_gpu_kernels) because it is usually cut short by the profiler.
	KeepLastStep bool `json:"keep_last_step"`
	// KernelWaitUs is HTA's consecutive_kernel_delay (default 30 µs, hta/trace_analysis.py
	// get_idle_time_breakdown): an idle gap shorter than this, not caused by the host, is
	// kernel_wait.
	KernelWaitUs float64 `json:"kernel_wait_us"`
	// ExactTime keeps Kineto float timestamps at nanosecond resolution instead of rounding
	// them to whole microseconds as HTA does (start up, end down).
	ExactTime bool `json:"exact_time"`
	// RuntimeCutoffUs and LaunchDelayCutoffUs are HTA's cuda_kernel_launch_stats outlier
	// thresholds (defaults 50 and 100 µs).
	RuntimeCutoffUs     float64 `json:"runtime_cutoff_us"`
	LaunchDelayCutoffUs float64 `json:"launch_delay_cutoff_us"`
	// TopKernels is how many kernels the breakdown lists (default 10, HTA's num_kernels).
	TopKernels int `json:"top_kernels"`
}

// DefaultOptions are HTA's defaults.
func DefaultOptions() Options {
	return Options{KernelWaitUs: 30, RuntimeCutoffUs: 50, LaunchDelayCutoffUs: 100, TopKernels: 10}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.KernelWaitUs <= 0 {
		o.KernelWaitUs = d.KernelWaitUs
	}
	if o.RuntimeCutoffUs <= 0 {
		o.RuntimeCutoffUs = d.RuntimeCutoffUs
	}
	if o.LaunchDelayCutoffUs <= 0 {
		o.LaunchDelayCutoffUs = d.LaunchDelayCutoffUs
	}
	if o.TopKernels <= 0 {
		o.TopKernels = d.TopKernels
	}
	return o
}
