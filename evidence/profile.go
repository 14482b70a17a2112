package evidence

// Profile is a profiling window inside a run: what pel asked for, what the profiler
// control answered, which tasks ran under it and what it cost them. The overhead rows are
// client figures inside the window against those outside it, labelled as profiling
// overhead: the profiled tasks are not the system's natural state.
type Profile struct {
	Control string `json:"control"` // vllm, sglang, command
	// AtS and ForS are the window asked for, in seconds after the load started.
	AtS  float64 `json:"at_s"`
	ForS float64 `json:"for_s"`
	// StartS is when the start call was sent, EndS when the stop call returned (or the run
	// ended with the profiler not known to be stopped), seconds since Run.StartedAt: the
	// profiler may have been active anywhere in between, so every task overlapping it is
	// marked. Both are 0 when the profiler never started.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// OnS to OffS is where the profiler surely ran: from the start call's answer to the
	// sending of the stop call. The overhead's inside values lie in it (0 when it never
	// surely ran).
	OnS     float64 `json:"on_s,omitempty"`
	OffS    float64 `json:"off_s,omitempty"`
	Started bool    `json:"started"`
	Stopped bool    `json:"stopped"`
	// Errors are what the control answered when it failed (bounded, credentials removed).
	Errors []string `json:"errors,omitempty"`
	// Marked counts the task records that overlapped the window (record field profiled).
	Marked int `json:"marked"`
	// InWarm: the marked tasks stayed in the warm figures (pel run --profile-in-warm);
	// otherwise they form the phase "profiled".
	InWarm bool `json:"in_warm"`
	// Trace is the trace file read into stages 2 and 3 (empty: none found or none asked).
	Trace     string `json:"trace,omitempty"`
	TraceNote string `json:"trace_note,omitempty"`
	// Overhead compares client latency inside the window with outside it.
	Overhead []ProfileOverhead `json:"overhead,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
}

// ProfileOverhead is one client figure (ttft, itl, e2e, tpot; ms) inside against outside the
// window: the medians with their 95% task-clustered bootstrap intervals, and the ratio
// inside/outside with its interval (1 is no overhead). Values inside are those wholly
// inside the span where the profiler surely ran (Profile.OnS to OffS: a token whose both
// events arrived in it, a task scheduled and finished in it); outside, those of warm
// tasks that never overlapped the window.
type ProfileOverhead struct {
	Metric   string  `json:"metric"`
	TasksIn  int     `json:"tasks_in"`
	TasksOut int     `json:"tasks_out"`
	NIn      int     `json:"n_in"`
	NOut     int     `json:"n_out"`
	InP50    float64 `json:"in_p50_ms"`
	InLo     float64 `json:"in_lo_ms"`
	InHi     float64 `json:"in_hi_ms"`
	OutP50   float64 `json:"out_p50_ms"`
	OutLo    float64 `json:"out_lo_ms"`
	OutHi    float64 `json:"out_hi_ms"`
	Ratio    float64 `json:"ratio"`
	RatioLo  float64 `json:"ratio_lo"`
	RatioHi  float64 `json:"ratio_hi"`
	// OK is false when either side has too few values for an interval (Note says so).
	OK   bool   `json:"ok"`
	Note string `json:"note,omitempty"`
}
