package sim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
)

// stepRec is what the DCGM view keeps of a step (virtual seconds).
type stepRec struct {
	start, end, gpuStart, gpuEnd                    float64
	smBusy, occBusy, tensorBusy, dramBusy, commBusy float64
	nvlinkBytes                                     float64
}

// stepRing is a fixed-size history of steps, newest last.
type stepRing struct {
	mu   sync.Mutex
	recs []stepRec
	next int
	full bool
}

func newStepRing(n int) *stepRing { return &stepRing{recs: make([]stepRec, n)} }

func (r *stepRing) add(res *StepResult) {
	t := &res.Timing
	r.mu.Lock()
	r.recs[r.next] = stepRec{start: t.Start, end: t.End, gpuStart: t.GPUStart, gpuEnd: t.GPUEnd,
		smBusy: t.SMBusy, occBusy: t.OccBusy, tensorBusy: t.TensorBusy, dramBusy: t.DRAMBusy,
		commBusy: t.CommBusy, nvlinkBytes: t.NVLinkBytes}
	r.next++
	if r.next == len(r.recs) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// gpuWindow is device activity over a window, as fractions of the window.
type gpuWindow struct {
	util, smActive, smOcc, tensor, dram float64
	nvlinkBps                           float64 // bytes per virtual second
}

// window sums the steps overlapping [from, to] (virtual), counting a partly covered step in
// proportion to its overlap.
func (r *stepRing) window(from, to float64) gpuWindow {
	var w gpuWindow
	if to <= from {
		return w
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.recs)
	}
	for i := 1; i <= n; i++ {
		rec := &r.recs[(r.next-i+len(r.recs))%len(r.recs)]
		if rec.end <= from {
			break
		}
		if rec.start >= to {
			continue
		}
		span := rec.end - rec.start
		f := 1.0
		if span > 0 {
			f = (math.Min(rec.end, to) - math.Max(rec.start, from)) / span
		}
		// GPU_UTIL: NVML's "a kernel was executing during the sample" is coarse next to the
		// microsecond gaps between a step's kernels, so the whole device span of a step counts
		// as busy (a launch-bound step still reads ~100%); the host-only part of the step
		// (scheduler, compile) does not.
		w.util += (math.Min(rec.gpuEnd, to) - math.Max(rec.gpuStart, from)) * b2f(rec.gpuEnd > from && rec.gpuStart < to)
		w.smActive += rec.smBusy * f
		w.smOcc += rec.occBusy * f
		w.tensor += rec.tensorBusy * f
		w.dram += rec.dramBusy * f
		w.nvlinkBps += rec.nvlinkBytes * f
	}
	d := to - from
	w.util = clamp01(w.util / d)
	w.smActive = clamp01(w.smActive / d)
	w.smOcc = clamp01(w.smOcc / d)
	w.tensor = clamp01(w.tensor / d)
	w.dram = clamp01(w.dram / d)
	w.nvlinkBps /= d
	return w
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// dcgmState remembers when each scrape happened, so a page reports the interval since the
// previous scrape, like dcgm-exporter's collection interval.
type dcgmState struct {
	srv  *Server
	mu   sync.Mutex
	last float64
}

func newDCGMState(s *Server) *dcgmState { return &dcgmState{srv: s} }

func (d *dcgmState) reset(v float64) { d.mu.Lock(); d.last = v; d.mu.Unlock() }

// Window bounds (wall seconds): at least 0.25 s so a fast scraper still sees a meaningful
// average, at most 30 s (dcgm-exporter's default collection interval).
const (
	dcgmMinWindow = 0.25
	dcgmMaxWindow = 30.0
)

// DCGMHandler serves the dcgm-exporter-shaped page at /metrics.
func (s *Server) DCGMHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(s.DCGMPage())
	})
	return mux
}

// dcgmField is one exported field: name, type and dcgm-exporter's help text
// (etc/default-counters.csv and etc/dcp-metrics-included.csv in NVIDIA/dcgm-exporter).
type dcgmField struct{ name, typ, help string }

var dcgmFields = []dcgmField{
	{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."},
	{"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."},
	{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
	{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
	{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."},
	{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
	{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."},
	{"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."},
	{"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM."},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."},
	{"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."},
	{"DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "The rate of data transmitted over NVLink, not including protocol headers, in bytes per second."},
	{"DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "The rate of data received over NVLink, not including protocol headers, in bytes per second."},
}

// DCGMPage renders the virtual GPUs (replicas × tensor-parallel ranks) in dcgm-exporter's
// text format, averaged over the interval since the previous call (bounded to 1–30 s).
func (s *Server) DCGMPage() []byte {
	now := s.virtNow()
	d := s.dcgm
	d.mu.Lock()
	from := d.last
	d.last = now
	d.mu.Unlock()
	span := math.Min(math.Max(now-from, dcgmMinWindow*s.opts.Speed), dcgmMaxWindow*s.opts.Speed)
	from = now - span
	g := s.cost.GPU
	tp := s.cost.P.TP
	type gpuVals struct {
		labels string
		vals   []float64
	}
	var rows []gpuVals
	memMiB := g.MemBytes / (1 << 20)
	// vLLM reserves gpu_memory_utilization of the card at start-up (weights, activations, the
	// whole KV pool) plus the CUDA context, so FB_USED is flat and says nothing about KV use.
	gmu := s.sc.Engine.GPUMemoryUtilization
	if gmu == 0 {
		gmu = 0.9
	}
	usedMiB := math.Min(memMiB, g.MemBytes*gmu/(1<<20)+500)
	for _, r := range s.replicas {
		w := r.ring.window(from, now)
		for rank := 0; rank < tp; rank++ {
			idx := r.idx*tp + rank
			labels := fmt.Sprintf(`gpu="%d",UUID="%s",pci_bus_id="00000000:%02X:00.0",device="nvidia%d",modelName="%s",Hostname="%s"`,
				idx, fakeUUID(idx), 0x18+idx*0x10, idx, g.ModelName, s.opts.Hostname)
			// Power: idle ~15% of board power plus the active share (a rough linear model).
			power := 100 + 600*(0.3*w.smActive+0.5*w.dram+0.2*w.tensor)
			// Observers see rates per wall second: virtual bytes/s × speed.
			link := w.nvlinkBps * s.opts.Speed
			var nvtx, pcietx float64
			if g.LinkNVLink {
				nvtx = link
			} else {
				pcietx = link
			}
			smClock := 1980.0
			if w.util < 0.01 {
				smClock = 345
			}
			rows = append(rows, gpuVals{labels, []float64{
				smClock, 2619, 34 + 30*w.util, power, math.Round(w.util * 100), math.Round(w.dram * 100),
				math.Round(memMiB - usedMiB), math.Round(usedMiB),
				w.util, w.smActive, w.smOcc, w.tensor, w.dram,
				pcietx + 2e6*w.util, pcietx + 2e6*w.util, nvtx, nvtx,
			}})
		}
	}
	var b []byte
	for fi, f := range dcgmFields {
		b = append(b, "# HELP "+f.name+" "+f.help+"\n# TYPE "+f.name+" "+f.typ+"\n"...)
		for _, r := range rows {
			b = append(b, f.name...)
			b = append(b, '{')
			b = append(b, r.labels...)
			b = append(b, "} "...)
			v := r.vals[fi]
			if v == math.Trunc(v) && math.Abs(v) < 1e15 {
				b = strconv.AppendInt(b, int64(v), 10)
			} else {
				b = strconv.AppendFloat(b, v, 'f', 6, 64)
			}
			b = append(b, '\n')
		}
	}
	return b
}

// fakeUUID is a stable GPU UUID in NVIDIA's format for virtual GPU idx.
func fakeUUID(idx int) string {
	return fmt.Sprintf("GPU-5e1a0000-0000-4000-8000-%012x", 0x9e1000+idx)
}
