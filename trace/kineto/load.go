package kineto

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pel-ladder/pel/trace/timeline"
)

// LoadOptions control how events become timeline records.
type LoadOptions struct {
	// Limits bound the records and names kept (zero: timeline.DefaultLimits).
	Limits timeline.Limits
	// HTATime rounds times the way HTA's parser does (hta/common/trace_parser.py,
	// _parse_trace_dataframe_json): start = ceil(ts), end = floor(ts + dur) in whole
	// microseconds, computed on the float64 values. Off: exact nanoseconds from the digits.
	HTATime bool
}

// Load reads a Kineto trace (plain or gzip JSON) into the compact timeline model: GPU
// operations, the runtime/driver calls that launch or wait for them, ProfilerStep spans and
// torch.compile regions. Everything else is counted and dropped.
func Load(r io.Reader, opts LoadOptions) (*timeline.Timeline, *Meta, error) {
	rd, err := Open(r)
	if err != nil {
		return nil, nil, err
	}
	limits := opts.Limits
	if limits.MaxRecords <= 0 {
		limits.MaxRecords = timeline.DefaultLimits.MaxRecords
	}
	names := timeline.NewNamesWithLimits(limits)
	budget := &timeline.Budget{Max: limits.MaxRecords}
	bad := &timeline.MalformedError{}
	var eventNo int64 // index in traceEvents, for error messages
	rk := &timeline.Rank{}
	tl := &timeline.Timeline{Format: "kineto", Names: names, HTATime: opts.HTATime}
	apiFlags := map[uint32]uint16{}
	var threads timeline.Threads
	times := func(ev *Event) (int64, int64) {
		if opts.HTATime {
			// HTA: df["end"] = ts + dur; ts = ceil(ts); end = floor(end); dur = end - ts.
			s, e := int64(math.Ceil(ev.TS.US))*1000, int64(math.Floor(ev.TS.US+ev.Dur.US))*1000
			return s, max(s, e)
		}
		return ev.TS.NS, ev.TS.NS + ev.Dur.NS
	}
	meta, err := Scan(rd, func(ev *Event) error {
		eventNo++
		// HTA drops events without dur or cat, and the profiler's own "Trace" span
		// (trace_parser.py _compress_df); flows, counters, metadata have no dur.
		if !ev.HasDur || !ev.HasTS || ev.Cat == CatNone || ev.Cat == CatTrace || ev.Cat == CatPythonFunction {
			return nil
		}
		// negative or overflowing times would make durations, shares and idle time
		// negative: counted, and the whole trace reported as malformed after the scan
		if bad.Check(ev.TS.US, ev.Dur.US, func() string { return fmt.Sprintf("trace event %d (%q)", eventNo-1, cut(ev.Name)) }) {
			return nil
		}
		if ev.NameCut {
			names.NoteCut()
		}
		start, end := times(ev)
		switch ev.Cat {
		case CatKernel, CatMemcpy, CatMemset, CatCudaSync:
			op := timeline.Op{Start: start, End: end, Corr: ev.Correlation, Name: names.ID(ev.Name), Stream: int32(ev.Stream)}
			switch ev.Cat {
			case CatKernel:
				op.Kind = timeline.OpKernel
			case CatMemcpy:
				op.Kind = timeline.OpMemcpy
				if bytes.Contains(ev.Name, []byte("Pageable")) {
					op.Flags |= timeline.OpPageable
				}
			case CatMemset:
				op.Kind = timeline.OpMemset
			case CatCudaSync:
				op.Kind = timeline.OpSync
			}
			if ev.Stream < 0 {
				// no stream at all: HTA keeps such events out of every per-stream figure
				if op.Kind == timeline.OpSync {
					if err := budget.Take(); err != nil {
						return err
					}
					rk.DeviceSyncs = append(rk.DeviceSyncs, op)
				}
				return nil
			}
			// CUPTI writes "no stream" as uint32 −1 (4294967295, e.g. Context Sync): HTA sees a
			// stream id ≠ −1 and counts the record as a GPU event; so does pel (int32 −1 here,
			// printed back as 4294967295).
			if err := budget.Take(); err != nil {
				return err
			}
			rk.GPU = append(rk.GPU, op)
		case CatRuntime, CatDriver:
			id := names.ID(ev.Name)
			f, ok := apiFlags[id]
			if !ok {
				f = timeline.ClassifyCall(timeline.CanonicalAPI(string(ev.Name)))
				apiFlags[id] = f
			}
			if err := budget.Take(); err != nil {
				return err
			}
			rk.Calls = append(rk.Calls, timeline.Call{Start: start, End: end, Corr: ev.Correlation, Name: id, Flags: f, Thread: threads.Index(ev.Tid)})
			noteCPU(rk, start)
		case CatCPUOp, CatUserAnnotation:
			if ev.Cat == CatCPUOp {
				rk.CPUOps++
			} else {
				rk.Annotations++
			}
			noteCPU(rk, start)
			isStep, isCompile := bytes.HasPrefix(ev.Name, []byte("ProfilerStep")), IsCompileRegion(ev.Name)
			if isStep || isCompile {
				if err := budget.Take(); err != nil {
					return err
				}
			}
			if isStep {
				rk.Steps = append(rk.Steps, timeline.Span{Start: start, End: end, Name: names.ID(ev.Name)})
			} else if isCompile {
				rk.Compile = append(rk.Compile, timeline.Span{Start: start, End: end, Name: names.ID(ev.Name)})
			}
		case CatGPUUserAnnotation:
			// HTA drops them by default (ParserConfig.drop_gpu_user_annotation): they carry a
			// stream and would otherwise count as GPU kernels.
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if bad.Any() {
		return nil, nil, bad
	}
	tl.Notes = append(tl.Notes, names.LimitNotes()...)
	rk.Rank = int(meta.Rank)
	if len(meta.Devices) > 0 {
		rk.Device = meta.Devices[0].Name
	}
	tl.Ranks = []*timeline.Rank{rk}
	return tl, meta, nil
}

// cut shortens a name for an error message.
func cut(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

func noteCPU(rk *timeline.Rank, start int64) {
	if !rk.HasCPU || start < rk.MinCPUStart {
		rk.MinCPUStart, rk.HasCPU = start, true
	}
}

// IsCompileRegion reports whether a host annotation marks torch.compile work:
// "Torch-Compiled Region" (torch._dynamo eval_frame), "CompiledFunction" (AOTAutograd's
// autograd.Function) and the TorchDynamo cache lookup.
func IsCompileRegion(name []byte) bool {
	s := string(name)
	return strings.HasPrefix(s, "Torch-Compiled Region") || strings.HasPrefix(s, "CompiledFunction") ||
		strings.HasPrefix(s, "TorchDynamo Cache Lookup")
}
