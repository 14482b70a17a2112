package timeline

import (
	"math"
	"regexp"
	"strings"
)

// OpKind is the kind of a GPU-side operation.
type OpKind uint8

const (
	OpKernel OpKind = iota + 1
	OpMemcpy
	OpMemset
	// OpSync is a GPU-side synchronization record (Kineto cat "cuda_sync" on a stream,
	// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION): HTA counts it among the GPU events of a stream.
	OpSync
)

func (k OpKind) String() string {
	switch k {
	case OpKernel:
		return "kernel"
	case OpMemcpy:
		return "memcpy"
	case OpMemset:
		return "memset"
	case OpSync:
		return "sync"
	}
	return "unknown"
}

// Op flags.
const (
	// OpPageable marks a copy from or to pageable (not pinned) host memory.
	OpPageable uint8 = 1 << iota
)

// Op is one GPU operation. Times are nanoseconds on the source's clock.
type Op struct {
	Start, End int64
	Corr       int64 // correlation id linking it to its host API call; -1 when none
	Name       uint32
	Stream     int32
	Kind       OpKind
	Flags      uint8
}

// Call flags: what a host API call does.
const (
	CallLaunch        uint16 = 1 << iota // launches one kernel
	CallGraph                            // launches a CUDA/HIP graph
	CallMemcpy                           // copies memory
	CallMemset                           // sets memory
	CallAsync                            // the copy/set is asynchronous (…Async)
	CallSync                             // blocks the host until the device or a stream/event is done
	CallHTALaunch                        // in HTA's runtime launch-event list (queue length)
	CallHTALaunchStat                    // in HTA's cuda_kernel_launch_stats list
)

// Call is one host-side runtime or driver API call. Times are nanoseconds.
type Call struct {
	Start, End int64
	Corr       int64
	Name       uint32
	Flags      uint16
	// Thread is the host thread that made the call, numbered by Threads (it fits beside
	// Flags without growing the record).
	Thread uint16
}

// Threads numbers host threads in the order they first appear, for Call.Thread. Past
// math.MaxUint16 threads every further one shares the last number: such a trace loses only
// the per-thread precision of what reads Thread.
type Threads struct{ m map[int64]uint16 }

// Index is the number of host thread id.
func (t *Threads) Index(id int64) uint16 {
	if t.m == nil {
		t.m = map[int64]uint16{}
	}
	if i, ok := t.m[id]; ok {
		return i
	}
	i := uint16(min(len(t.m), math.MaxUint16))
	t.m[id] = i
	return i
}

// Span is a named host-side range (ProfilerStep#N, a torch.compile region).
type Span struct {
	Start, End int64
	Name       uint32
}

// Rank is everything one rank (one profiled process / device) contributed.
type Rank struct {
	Rank   int
	Device string // e.g. "NVIDIA A100-SXM4-80GB", when the source names it
	GPU    []Op
	// DeviceSyncs are GPU synchronization records with no stream (Event Sync, Context Sync):
	// HTA keeps them out of per-stream figures.
	DeviceSyncs []Op
	Calls       []Call
	Steps       []Span // ProfilerStep#N annotations, in file order
	Compile     []Span // torch.compile regions
	CPUOps      int    // cpu_op events seen (counted, not stored)
	Annotations int    // user_annotation events seen
	// MinCPUStart is the earliest host event start; HTA's last-step filter falls back on it.
	MinCPUStart int64
	HasCPU      bool
}

// Timeline is one profile: its ranks and the shared name table.
type Timeline struct {
	Format string // "kineto" or "nsys"
	Ranks  []*Rank
	Names  *Names
	// HTATime is true when times were rounded to whole microseconds the way HTA does.
	HTATime bool
	Notes   []string
}

// Names interns strings: each distinct name is stored once, within Limits.MaxNameBytes
// per name and Limits.MaxNameTableBytes in all.
type Names struct {
	idx       map[string]uint32
	list      []string
	limits    Limits
	bytes     int // sum of the kept names' lengths
	truncated int // names cut to MaxNameBytes
	overflow  int // names replaced by NameOverflow
}

// NewNames returns an empty table with DefaultLimits.
func NewNames() *Names { return NewNamesWithLimits(DefaultLimits) }

// NewNamesWithLimits returns an empty table with the given limits (zero fields: defaults).
func NewNamesWithLimits(l Limits) *Names {
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = DefaultLimits.MaxNameBytes
	}
	if l.MaxNameTableBytes <= 0 {
		l.MaxNameTableBytes = DefaultLimits.MaxNameTableBytes
	}
	return &Names{idx: map[string]uint32{}, limits: l}
}

// ID interns b. The map lookup with string(b) does not allocate; only new names are copied.
func (n *Names) ID(b []byte) uint32 {
	if len(b) > n.limits.MaxNameBytes {
		n.truncated++
		b = truncateName(b, n.limits.MaxNameBytes)
	}
	if id, ok := n.idx[string(b)]; ok {
		return id
	}
	if n.bytes+len(b) > n.limits.MaxNameTableBytes {
		n.overflow++
		b = []byte(NameOverflow)
		if id, ok := n.idx[NameOverflow]; ok {
			return id
		}
	}
	s := string(b)
	id := uint32(len(n.list))
	n.list = append(n.list, s)
	n.idx[s] = id
	n.bytes += len(s)
	return id
}

// NoteCut counts a name its reader already cut to the length limit.
func (n *Names) NoteCut() { n.truncated++ }

// IDString interns s.
func (n *Names) IDString(s string) uint32 {
	if id, ok := n.idx[s]; ok {
		return id
	}
	return n.ID([]byte(s))
}

// Name returns the string of id.
func (n *Names) Name(id uint32) string {
	if int(id) < len(n.list) {
		return n.list[id]
	}
	return ""
}

// Len is the number of distinct names.
func (n *Names) Len() int { return len(n.list) }

var versionSuffix = regexp.MustCompile(`_v[0-9]+$`)

// CanonicalAPI strips Nsight's "_vNNNN" API version suffix (cudaLaunchKernel_v7000).
func CanonicalAPI(name string) string {
	if i := strings.LastIndex(name, "_v"); i > 0 && versionSuffix.MatchString(name[i:]) {
		return name[:i]
	}
	return name
}

// htaLaunch is HTA's runtime launch-event list, from
// hta/common/trace_symbol_table.py get_runtime_launch_events_mask (queue length uses it).
var htaLaunch = map[string]bool{
	"cudaLaunchKernel": true, "cudaLaunchKernelExC": true, "cuLaunchKernel": true,
	"cuLaunchKernelEx": true, "cudaMemcpyAsync": true, "cudaMemsetAsync": true,
	"hipLaunchKernel": true, "hipExtModuleLaunchKernel": true, "hipMemcpyAsync": true,
	"hipMemsetAsync": true, "hipMemcpyWithStream": true,
}

// htaLaunchStat is the narrower list of hta/analyzers/cuda_kernel_analysis.py
// cuda_kernel_launch_stats (cudaLaunchKernel, cudaLaunchKernelExC and MTIA's runFunction,
// plus cudaMemcpyAsync/cudaMemsetAsync with include_memory_events=True).
var htaLaunchStat = map[string]bool{"cudaLaunchKernel": true, "cudaLaunchKernelExC": true,
	"runFunction - job_prep_and_submit_for_execution": true, "cudaMemcpyAsync": true, "cudaMemsetAsync": true}

var kernelLaunch = map[string]bool{
	"cudaLaunchKernel": true, "cudaLaunchKernelExC": true, "cudaLaunchCooperativeKernel": true,
	"cudaLaunchCooperativeKernelMultiDevice": true, "cuLaunchKernel": true, "cuLaunchKernelEx": true,
	"cuLaunchCooperativeKernel": true, "cuLaunchGrid": true, "cuLaunchGridAsync": true,
	"hipLaunchKernel": true, "hipExtModuleLaunchKernel": true, "hipModuleLaunchKernel": true,
	"hipExtLaunchKernel": true, "hipLaunchCooperativeKernel": true, "hipHccModuleLaunchKernel": true,
}

var syncAPI = map[string]bool{
	"cudaDeviceSynchronize": true, "cudaStreamSynchronize": true, "cudaEventSynchronize": true,
	"cudaThreadSynchronize": true, "cuCtxSynchronize": true, "cuStreamSynchronize": true,
	"cuEventSynchronize": true, "hipDeviceSynchronize": true, "hipStreamSynchronize": true,
	"hipEventSynchronize": true, "hipCtxSynchronize": true,
}

// ClassifyCall returns the Call flags of a runtime/driver API name (canonical form).
func ClassifyCall(name string) uint16 {
	var f uint16
	if htaLaunch[name] {
		f |= CallHTALaunch
	}
	if htaLaunchStat[name] {
		f |= CallHTALaunchStat
	}
	switch {
	case kernelLaunch[name]:
		f |= CallLaunch
	case name == "cudaGraphLaunch" || name == "cuGraphLaunch" || name == "hipGraphLaunch":
		f |= CallGraph
	case syncAPI[name]:
		f |= CallSync
	case isAPI(name) && strings.Contains(name, "Memcpy"):
		f |= CallMemcpy
		if strings.Contains(name, "Async") {
			f |= CallAsync
		} else {
			// cudaMemcpy, cudaMemcpy2D, hipMemcpyWithStream...: the host waits for the copy
			// (nsys analyze's cuda_memcpy_sync rule flags these).
			f |= CallSync
		}
	case isAPI(name) && (strings.Contains(name, "Memset") || strings.HasPrefix(name, "cuMemsetD")):
		f |= CallMemset
		if strings.Contains(name, "Async") {
			f |= CallAsync
		} else {
			f |= CallSync
		}
	}
	return f
}

func isAPI(name string) bool {
	return strings.HasPrefix(name, "cuda") || strings.HasPrefix(name, "cu") || strings.HasPrefix(name, "hip")
}
