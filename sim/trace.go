package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A trace capture records the steps of one replica for a window, then renders them in the
// Kineto (PyTorch profiler) Chrome-trace JSON that torch.profiler writes and HTA reads: host
// events (user annotations, cpu_op, cuda_runtime launches) on the CPU process, kernels on the
// GPU process's stream, linked by "correlation" ids and ac2g flow events. The shape follows
// the real traces in /work/shared/fixtures/kineto (e.g. a100-ddp-nccl.trace.json.gz).

// maxTraceKernels bounds a capture (each kernel is ~4 events); the rest is dropped and the
// trace says so in its "truncated" field.
const maxTraceKernels = 150_000

type capturedStep struct {
	batch  Batch
	timing StepTiming
}

type traceCapture struct {
	mu        sync.Mutex
	steps     []capturedStep
	kernels   int
	truncated bool
}

func (c *traceCapture) add(r *StepResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kernels+r.Timing.Kernels > maxTraceKernels {
		c.truncated = true
		return
	}
	b := r.Batch
	b.Seqs = append([]SeqWork(nil), b.Seqs...)
	c.steps = append(c.steps, capturedStep{batch: b, timing: r.Timing})
	c.kernels += r.Timing.Kernels
}

// CaptureTrace records replica's steps for the given virtual duration (wall time: duration /
// speed), then writes a Kineto-format trace of them to w.
func (s *Server) CaptureTrace(ctx context.Context, virtual time.Duration, replica int, w io.Writer) error {
	if replica < 0 || replica >= len(s.replicas) {
		return fmt.Errorf("replica %d out of range (have %d)", replica, len(s.replicas))
	}
	r := s.replicas[replica]
	c := &traceCapture{}
	if !r.cap.CompareAndSwap(nil, c) {
		return errors.New("a trace capture is already running on this replica")
	}
	t := time.NewTimer(time.Duration(float64(virtual) / s.opts.Speed))
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-s.closed:
	}
	t.Stop()
	r.cap.Store(nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.writeKineto(w, c)
}

func (s *Server) serveTrace(w http.ResponseWriter, r *http.Request) {
	secs := 1.0
	if v := r.URL.Query().Get("seconds"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 30) {
			writeAPIError(w, badRequest("seconds", "seconds must be a number in (0, 30]"))
			return
		}
		secs = f
	}
	rep := 0
	if v := r.URL.Query().Get("replica"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= len(s.replicas) {
			writeAPIError(w, badRequest("replica", "replica must be 0..%d", len(s.replicas)-1))
			return
		}
		rep = n
	}
	w.Header().Set("Content-Type", "application/json")
	var buf strings.Builder
	if err := s.CaptureTrace(r.Context(), time.Duration(secs*float64(time.Second)), rep, &buf); err != nil {
		writeAPIError(w, &apiError{Status: http.StatusConflict, Type: "Conflict", Message: err.Error()})
		return
	}
	io.WriteString(w, buf.String())
}

// hostPID / hostTID name the engine process in the trace; GPU events use pid = device id.
const (
	hostPID    = 4242
	hostTID    = 4242
	kstream    = 7
	cbidLaunch = 211 // CUPTI callback id of cudaLaunchKernel
	cbidGraph  = 311 // cudaGraphLaunch
)

func cpuOpName(k *Kernel) string {
	switch k.Name {
	case nameRMSNorm:
		return "_C::rms_norm"
	case nameAddNorm:
		return "_C::fused_add_rms_norm"
	case nameRotary:
		return "_C::rotary_embedding"
	case nameCache:
		return "_C_cache_ops::reshape_and_cache_flash"
	case nameAttn:
		return "vllm::unified_attention"
	case nameSiluMul:
		return "_C::silu_and_mul"
	case nameAllReduce:
		return "nccl:all_reduce"
	case nameSoftmax:
		return "aten::softmax"
	case nameArgmax:
		return "aten::argmax"
	case nameDraft:
		return "vllm::draft_forward"
	}
	return "aten::mm"
}

type traceWriter struct {
	w     *bufio.Writer
	first bool
	base  float64 // µs offset of virtual 0
	speed float64
}

func (t *traceWriter) ts(v float64) string {
	return strconv.FormatFloat(t.base+v/t.speed*1e6, 'f', 3, 64)
}
func (t *traceWriter) dur(v float64) string { return strconv.FormatFloat(v/t.speed*1e6, 'f', 3, 64) }

func (t *traceWriter) ev(s string) {
	if !t.first {
		t.w.WriteString(",\n  ")
	}
	t.first = false
	t.w.WriteString(s)
}

func jsonStr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (s *Server) writeKineto(out io.Writer, c *traceCapture) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	g := s.cost.GPU
	tp := s.cost.P.TP
	fmt.Fprintf(bw, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [")
	for i := 0; i < tp; i++ {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n    {\"id\": %d, \"name\": %s, \"totalGlobalMem\": %d, \"computeMajor\": %d, \"computeMinor\": %d, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32, \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472, \"numSms\": %d, \"sharedMemPerBlockOptin\": 232448}",
			i, jsonStr(g.ModelName), int64(g.MemBytes), g.ComputeCap[0], g.ComputeCap[1], g.SMs)
	}
	bw.WriteString("\n  ],\n")
	if tp > 1 {
		fmt.Fprintf(bw, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": %d},\n", tp)
	} else {
		bw.WriteString("  \"distributedInfo\": {\"rank\": 0},\n")
	}
	fmt.Fprintf(bw, "  \"traceName\": \"pel-sim-%s\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %d,\n", s.sc.Name, s.start.UnixNano())
	if c.truncated {
		fmt.Fprintf(bw, "  \"truncated\": true,\n")
	}
	bw.WriteString("  \"traceEvents\": [\n  ")
	t := &traceWriter{w: bw, first: true, base: 0, speed: s.opts.Speed}
	t0 := "0.000"
	if len(c.steps) > 0 {
		t0 = t.ts(c.steps[0].timing.Start)
	}
	meta := func(pid int, name string, args string) {
		t.ev(fmt.Sprintf(`{"name": %q, "ph": "M", "ts": %s, "pid": %d, "tid": 0, "args": %s}`, name, t0, pid, args))
	}
	meta(hostPID, "process_name", `{"name": "python3"}`)
	meta(hostPID, "process_labels", `{"labels": "CPU"}`)
	meta(0, "process_name", `{"name": "python3"}`)
	meta(0, "process_labels", `{"labels": "GPU 0"}`)
	t.ev(fmt.Sprintf(`{"name": "thread_name", "ph": "M", "ts": %s, "pid": 0, "tid": %d, "args": {"name": "stream %d"}}`, t0, kstream, kstream))
	corr, ext := 1, 1
	for si := range c.steps {
		st := &c.steps[si]
		tm := &st.timing
		t.ev(fmt.Sprintf(`{"ph": "X", "cat": "user_annotation", "name": "Scheduler.schedule", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "num_seqs": %d, "num_tokens": %d}}`,
			hostPID, hostTID, t.ts(tm.Start), t.dur(s.cost.SchedCPU(len(st.batch.Seqs))), ext, len(st.batch.Seqs), st.batch.Tokens()))
		ext++
		if tm.GrammarEnd > tm.SchedEnd {
			t.ev(fmt.Sprintf(`{"ph": "X", "cat": "user_annotation", "name": "StructuredOutputManager.grammar_bitmask", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}`,
				hostPID, hostTID, t.ts(tm.SchedEnd), t.dur(tm.GrammarEnd-tm.SchedEnd), ext))
			ext++
		}
		if tm.CompileEnd > tm.GrammarEnd {
			t.ev(fmt.Sprintf(`{"ph": "X", "cat": "user_annotation", "name": "Torch-Compiled Region: 0/%d", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}`,
				si, hostPID, hostTID, t.ts(tm.GrammarEnd), t.dur(tm.CompileEnd-tm.GrammarEnd), ext))
			ext++
		}
		t.ev(fmt.Sprintf(`{"ph": "X", "cat": "user_annotation", "name": "execute_model", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}`,
			hostPID, hostTID, t.ts(tm.CompileEnd), t.dur(tm.End-tm.CompileEnd), ext))
		ext++
		ks := s.cost.Plan(st.batch)
		graphCorr := 0
		s.cost.Lay(ks, st.batch.Tokens(), tm.Start, s.cost.SchedCPU(len(st.batch.Seqs)), st.batch.Grammar, st.batch.Compile,
			func(i int, k *Kernel, ls, ld, kstart float64) {
				myCorr := corr
				if tm.Graph {
					if i == 0 {
						graphCorr = corr
						corr++
						t.ev(fmt.Sprintf(`{"ph": "X", "cat": "cpu_op", "name": "CUDAGraph::replay", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}`,
							hostPID, hostTID, t.ts(ls), t.dur(ld), ext))
						t.ev(fmt.Sprintf(`{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "cbid": %d, "correlation": %d}}`,
							hostPID, hostTID, t.ts(ls+ld*0.1), t.dur(ld*0.85), ext, cbidGraph, graphCorr))
						t.ev(fmt.Sprintf(`{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}`,
							graphCorr, hostPID, hostTID, t.ts(ls+ld*0.1)))
						t.ev(fmt.Sprintf(`{"ph": "f", "id": %d, "pid": 0, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}`,
							graphCorr, kstream, t.ts(kstart)))
					}
					myCorr = graphCorr
				} else {
					corr++
					t.ev(fmt.Sprintf(`{"ph": "X", "cat": "cpu_op", "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d}}`,
						cpuOpName(k), hostPID, hostTID, t.ts(ls), t.dur(ld), ext))
					t.ev(fmt.Sprintf(`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "cbid": %d, "correlation": %d}}`,
						hostPID, hostTID, t.ts(ls+ld*0.4), t.dur(ld*0.55), ext, cbidLaunch, myCorr))
					t.ev(fmt.Sprintf(`{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}`,
						myCorr, hostPID, hostTID, t.ts(ls+ld*0.4)))
					t.ev(fmt.Sprintf(`{"ph": "f", "id": %d, "pid": 0, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}`,
						myCorr, kstream, t.ts(kstart)))
				}
				smFrac, occ := kernelSMShare(k, float64(g.SMs))
				blocks := max(1, int(smFrac*float64(g.SMs)))
				extra := ""
				if k.Kind == kComm {
					extra = fmt.Sprintf(`, "Collective name": "allreduce", "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Description": "tp", "Process Group Ranks": "%s"`,
						int64(k.CommBytes/2), int64(k.CommBytes/2), tp, rankList(tp))
				}
				t.ev(fmt.Sprintf(`{"ph": "X", "cat": "kernel", "name": %s, "pid": 0, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": %d, "correlation": %d, "registers per thread": 128, "shared memory": 49152, "blocks per SM": %.6f, "warps per SM": %.6f, "grid": [%d, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %%": %d%s}}`,
					jsonStr(k.Name), kstream, t.ts(kstart), t.dur(k.Dur), ext, kstream, myCorr,
					float64(blocks)/float64(g.SMs), float64(blocks*4)/float64(g.SMs), blocks, int(occ*100), extra))
				if !tm.Graph {
					ext++ // eager: one op per kernel; a graph's kernels all belong to its replay op
				}
			})
		if tm.Graph {
			ext++
		}
	}
	bw.WriteString("\n  ]\n}\n")
	return bw.Flush()
}

func rankList(tp int) string {
	parts := make([]string, tp)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
