package diagnose

import (
	"container/heap"
	"fmt"
	"sort"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/gpuspec"
	"github.com/pel-ladder/pel/record"
)

// The part of a task's engine queue the load explains is the wait it would have had in an
// ideal server: one that shares the deployment's capacity equally among the tasks present
// (processor sharing, the schedule chunked prefill approaches, under which a task's stay
// depends on its own size and the work around it, never on being stuck behind one large
// task: Kleinrock, "Time-shared systems: a theoretical treatment", JACM 1967), fed the
// run's own arrivals and each task's own work. Replaying the arrivals rather than using a
// mean-value formula keeps bursts: a burst that exceeds the capacity queues every task in
// it whatever the schedule, while a short task beside long ones waits little.
//
// The server's rate is the work's floor rate (achievable tensor throughput) divided by the
// engine's measured cost ratio: the GPU-busy seconds the engine spent per prompt token
// (DCGM's busy fraction ÷ the engine's prompt tokens per second: the utilisation law
// U = X·S, Denning & Buzen, "The Operational Analysis of Queueing Network Models",
// Computing Surveys 1978) against the floor's seconds per token; without DCGM, the engine's
// own prefill time per uncached prompt token. Busy time includes the
// decode steps too, so the ratio is an upper bound on the prefill's own. A ratio within
// hardwareRatioMax is the hardware's neighbourhood and sets the rate; beyond it the engine
// is far from its floor for a reason the budget does not know, and the floor's rate (a
// lower bound on the wait) serves; without a busy fraction, the floor's rate serves too.

// psJob is one task in the ideal server: its work at the server's rate, in seconds, and
// its finish in the server's virtual time.
type psJob struct {
	idx    int
	arrive float64
	work   float64
	finish float64
}

type psHeap []*psJob

func (h psHeap) Len() int { return len(h) }

func (h psHeap) Less(i, j int) bool { return h[i].finish < h[j].finish }

func (h psHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *psHeap) Push(x any) { *h = append(*h, x.(*psJob)) }

func (h *psHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// psSojourn replays arrivals (seconds) with their work (seconds) through an egalitarian
// processor-sharing server and returns each job's stay. The server's virtual time advances
// at 1/k while k jobs are present, so a job finishes when the virtual time reaches its
// arrival's virtual time plus its work (the virtual clock of generalized processor
// sharing: Parekh & Gallager, IEEE/ACM Trans. Networking 1993): O(n log n).
func psSojourn(arrive, work []float64) []float64 {
	n := len(arrive)
	out := make([]float64, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return arrive[order[a]] < arrive[order[b]] })
	var h psHeap
	t, vt := 0.0, 0.0
	// drainUntil completes jobs whose virtual finish is reached by real time limit.
	drainUntil := func(limit float64) {
		for h.Len() > 0 {
			j := h[0]
			dt := (j.finish - vt) * float64(h.Len())
			if t+dt > limit {
				vt += (limit - t) / float64(h.Len())
				t = limit
				return
			}
			t += dt
			vt = j.finish
			heap.Pop(&h)
			out[j.idx] = t - j.arrive
		}
		t = limit
	}
	for _, i := range order {
		drainUntil(arrive[i])
		heap.Push(&h, &psJob{idx: i, arrive: arrive[i], work: work[i], finish: vt + work[i]})
	}
	drainUntil(1e300)
	return out
}

// measuredCostRatio is what the hardware achieved in this run against its floor, and its
// source; 0 when not measured. The engine's GPU-busy seconds per prompt token over the
// floor's, where DCGM's busy fraction and the engine's token rate are known; else the
// engine's own prefill time per uncached prompt token (its prefill histogram, or each
// request's own timings) over the floor's: a prefill within twice its floor is the GPU
// computing near its achievable rate, so a queue it builds is the load's.
func (b *budgetCtx) measuredCostRatio(v *view, recs []record.Record) (float64, string) {
	util, ok1 := v.val(evidence.SigGPUUtil)
	rate, ok2 := v.val(evidence.SigPromptTokensRate)
	floorMsPerTok := b.sys.prefill(1000) / 1000
	if floorMsPerTok <= 0 {
		return 0, ""
	}
	if !ok1 || !ok2 || util <= 0 || rate <= 0 {
		if b.havePrefill && b.meanUncached > 0 {
			measured := b.prefillMean / b.meanUncached
			return measured / floorMsPerTok, fmt.Sprintf("the engine's prefill %.0f ms for %.0f uncached prompt tokens on average (its prefill histogram) = %.3f ms per token against the floor's %.3f",
				b.prefillMean, b.meanUncached, measured, floorMsPerTok)
		}
		var ms, tok float64
		for i := range recs {
			r := &recs[i]
			if r.Phase == record.PhaseWarm && r.OK() && r.Server != nil && r.Server.PrefillUS > 0 {
				ms += float64(r.Server.PrefillUS) / 1000
				tok += uncached(r)
			}
		}
		if ms <= 0 || tok <= 0 {
			return 0, ""
		}
		measured := ms / tok
		return measured / floorMsPerTok, fmt.Sprintf("each request's own prefill time (server timings) = %.3f ms per uncached prompt token against the floor's %.3f", measured, floorMsPerTok)
	}
	measured := 1000 * util / rate // busy ms per prompt token
	return measured / floorMsPerTok, fmt.Sprintf("GPU kernel time %.2f of the window (dcgm GPU_UTIL) ÷ %.0f prompt tokens/s (engine) = %.3f ms of GPU time per prompt token against the floor's %.3f",
		util, rate, measured, floorMsPerTok)
}

// loadWaits is, per record (a single-call task, or one call of a multi-step task), the wait
// in ms the ideal server gives it: its stay less its own work. Every request sent loads it.
func (b *budgetCtx) loadWaits(v *view, recs []record.Record) (map[*record.Record]float64, float64, string) {
	rate := float64(b.sys.gpus) * b.sys.gpu.PeakFLOPS * gpuspec.AchievableTensor
	if rate <= 0 {
		return nil, 0, ""
	}
	ratio, why := b.measuredCostRatio(v, recs)
	src := "floor rate (no measured GPU kernel-time fraction or engine prefill time)"
	switch {
	case ratio >= 1 && ratio <= hardwareRatioMax:
		src = "measured cost " + fmt.Sprintf("%.2f", ratio) + "× the floor: " + why
	case ratio > hardwareRatioMax:
		src = fmt.Sprintf("floor rate (measured cost %.1f× the floor is outside the hardware's neighbourhood: %s)", ratio, why)
		ratio = 1
	default:
		ratio = 1
	}
	var idx []*record.Record
	var arrive, work []float64
	var t0 float64
	first := true
	join := func(r *record.Record) {
		if r.SentAt.IsZero() {
			return
		}
		s := float64(r.SentAt.UnixNano()) / 1e9
		if first || s < t0 {
			t0, first = s, false
		}
		idx = append(idx, r)
		arrive = append(arrive, s)
		work = append(work, ratio*2*b.sys.active*(uncached(r)+float64(r.OutputTokens))/rate)
	}
	for i := range recs {
		r := &recs[i]
		if !r.MultiStep() {
			join(r)
			continue
		}
		// Each call of a multi-step task is a request of its own to the engine.
		steps := r.StepRecords()
		for j := range steps {
			join(&steps[j])
		}
	}
	if len(idx) == 0 {
		return nil, ratio, src
	}
	for i := range arrive {
		arrive[i] -= t0
	}
	stay := psSojourn(arrive, work)
	out := make(map[*record.Record]float64, len(idx))
	for k, r := range idx {
		if w := stay[k] - work[k]; w > 0 {
			out[r] = 1000 * w
		}
	}
	return out, ratio, src
}

// hardwareRatioMax: measured within twice the floor is the hardware's neighbourhood (the
// floors take achievable fractions above what kernels reach, and leave out attention and
// step overheads).
const hardwareRatioMax = 2.0
