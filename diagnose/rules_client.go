package diagnose

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// engineRoom is the run-level view, from the engine's own gauges, of whether it had room: a
// request refused or held while it did was refused or held in front of it.
type engineRoom struct {
	hadRoom bool // engine metrics say it never queued and had a free slot
	// refusedOutside: the engine queued now and then, but most refusals came while its
	// queue was empty, so they were made in front of it. It answers who refused, not
	// whether the engine had room for the tasks it served (hadRoom stays false).
	refusedOutside bool
	known          bool   // engine metrics were there to say
	why            string // the figures behind hadRoom
}

func roomOf(v *view) engineRoom {
	var c engineRoom
	wmax, okW := v.val(evidence.SigWaitingMax)
	rmax, okR := v.val(evidence.SigRunningMax)
	if !okW || !okR {
		return c
	}
	c.known = true
	limit := 0
	for _, k := range []string{"slots", evidence.ConfigMaxNumSeqs} {
		if n, err := strconv.Atoi(v.config[k]); err == nil && n > 0 {
			limit = n
			break
		}
	}
	switch {
	case wmax > 0 && v.refused > 0 && 2*v.refusedInQueue < v.refused:
		// An admission that refuses does so while its queue is at its bound, so never
		// while it holds nothing: most refusals came at such times, when the engine's own
		// queue was empty; the queue it held now and then is not what refused them.
		c.refusedOutside = true
		c.why = fmt.Sprintf("the engine's queue held a request only now and then (requests_waiting max %.0f): %d of the %d refused tasks came while it held none", wmax, v.refused-v.refusedInQueue, v.refused)
	case wmax > 0:
		c.why = fmt.Sprintf("the engine queued requests (requests_waiting max %.0f)", wmax)
	case limit > 0 && rmax >= float64(limit) && profileOf(v.engine).QueuesWhenFull:
		// Full slots make this engine queue a request, not refuse or hold it elsewhere:
		// its queue never held one.
		c.hadRoom = true
		c.why = fmt.Sprintf("the engine never queued a request (requests_waiting max 0, at most %.0f of %d running; %s queues a request when its slots are full)", rmax, limit, profileOf(v.engine).Title)
	case limit > 0 && rmax >= float64(limit):
		c.why = fmt.Sprintf("the engine ran at its limit (%.0f of %d sequences)", rmax, limit)
	case limit == 0 && rmax > 0:
		// Without the limit, no waiting request is the engine's own word that it admitted
		// everything it was sent.
		c.hadRoom = true
		c.why = fmt.Sprintf("the engine never queued a request (requests_waiting max 0, at most %.0f running)", rmax)
	default:
		c.hadRoom = true
		c.why = fmt.Sprintf("the engine never queued a request and had free slots (requests_waiting max 0, at most %.0f of %d running)", rmax, limit)
	}
	return c
}

// roomItems are the engine gauges roomOf reads (its queue's and its running sequences'
// maxima), as context for a finding that rests on them.
func roomItems(v *view) []meas {
	var out []meas
	for _, s := range []string{evidence.SigWaitingMax, evidence.SigRunningMax} {
		if x := v.judge(s, ">=", 0); x.present {
			out = append(out, asContext(x))
		}
	}
	return out
}

// shedOutside reports whether refusals were made in front of the engine: it had room, or
// they came while its queue was empty.
func (c engineRoom) shedOutside() bool { return c.known && (c.hadRoom || c.refusedOutside) }

func ruleAdmissionQueue(v *view, o *Options) *hit {
	k := profileOf(v.engine)
	h := &hit{impact: impactSpec{dims: []string{dimTTFT, dimE2E, dimTimeout}}}
	var decisive []meas
	share := 0.0
	// The engine's own per-request queue time (OTLP spans; exact). The /metrics queue
	// histogram is not used: its first vLLM bucket is 0–300 ms, so an interpolated p50 of an
	// empty queue reads as 150 ms, more than a whole TTFT on a fast server.
	if q, ok := v.val(evidence.SigOTLPQueueP50); ok {
		if ttft, okT := v.val(evidence.SigOTLPTTFTP50); okT && ttft > 0 {
			m := derivedItem("otlp.queue_share_ttft_p50", clamp01(q/ttft), ">=", queueShareMin, "ratio", "otlp",
				evidence.StageServingCache, evidence.SigOTLPQueueP50, evidence.SigOTLPTTFTP50)
			h.items = append(h.items, m)
			if m.holds {
				decisive = append(decisive, m)
				share = math.Max(share, m.item.Value)
			}
		}
	}
	// The client's own split of TTFT (the engine's per-request timings, or an idle baseline).
	if q := v.judge(evidence.SigQueueShare, ">=", queueShareMin); q.present {
		h.items = append(h.items, q)
		if q.holds {
			decisive = append(decisive, q)
			share = math.Max(share, q.item.Value)
		}
	}
	// Little's law: tasks in flight at the client that the engine neither runs nor lists as
	// waiting wait somewhere it does not count (an HTTP worker pool, a proxy, a deferred
	// queue); with those it does list as waiting, the unserved share of in-flight time.
	// The engine's own count of requests in service: from its summed processing time where it
	// exposes one (exact), else the sampled running gauge.
	inf, okI := v.val(evidence.SigInFlightMean)
	runSig := evidence.SigInServiceMean
	run, okR := v.val(runSig)
	if !okR {
		runSig = evidence.SigRunningMean
		run, okR = v.val(runSig)
	}
	if okI && okR && inf >= 1 {
		m := derivedItem("client_vs_engine.unserved_share", clamp01((inf-run)/inf), ">=", queueShareMin, "ratio", "client in flight − engine in service",
			evidence.StageServingCache, evidence.SigInFlightMean, runSig)
		h.items = append(h.items, m)
		if m.holds {
			decisive = append(decisive, m)
			share = math.Max(share, m.item.Value)
		}
	}
	if len(decisive) == 0 {
		return nil
	}
	// The finding says the engine ran at its ceiling (the budget charges it the whole wait
	// before the task's processing). Its own gauges can say otherwise: no request ever
	// waited and a slot was always free. The wait was then spent in front of it
	// (the finding of the rule for waits before the engine).
	if r := roomOf(v); r.known && r.hadRoom {
		return nil
	}
	if w := v.judge(evidence.SigWaitingMean, ">=", waitingMin); w.present {
		h.items = append(h.items, asContext(w))
	}
	// A queue that fills because the cache is full is the memory rule's; one behind a long
	// prefill, the head-of-line rule's (they defer this rule).
	if kv := v.judge(evidence.SigKVUsageMax, "<", kvRoomRatio); kv.present {
		h.items = append(h.items, asContext(kv))
	}
	h.confidence = confLeaning + confPerSource*float64(len(decisive)-1)
	// An idle baseline is the client's own inference: any wait in front of the first token
	// (warm-up, a proxy) looks the same from there. Only the engine's view — its running
	// count, its per-request timings or spans — shows the wait is for admission.
	if len(decisive) == 1 && decisive[0].item.Signal == evidence.SigQueueShare &&
		v.queueShareFromClient() {
		h.confidence = confShort
		h.confNote = "the queue is inferred from the client alone (TTFT against tasks sent to an idle server): a wait for admission cannot be told from warm-up or a proxy in front of the engine"
		h.missing = append(h.missing, missMetrics)
	}
	tl := v.judge(evidence.SigTPOTLoadRatio, "<", tpotLoadMax)
	runMax, _ := v.val(evidence.SigRunningMax)
	slots := "the current limit"
	if runMax >= 1 {
		slots = fmt.Sprintf("%.0f", runMax)
	}
	h.symptom = fmt.Sprintf("tasks wait before service: %.0f%% of the time to first token is queue", share*100)
	if okI && okR {
		h.symptom += fmt.Sprintf(" (%.1f in flight at the client, %.1f running in the engine)", inf, run)
	}
	h.hypothesis = fmt.Sprintf("More tasks arrive than %s admits at once (at most %s ran together): the rest wait for a free sequence slot, so TTFT is queue time while decode speed stays as it is.", k.Title, slots)
	fall := 1 - (1-share)/(1-queueTargetShare)
	ch := change(v.engine, evidence.ActRaiseSeqs)
	if runMax >= 1 {
		ch.From, ch.To = slots, fmt.Sprintf("%.0f", 2*runMax)
	}
	h.cond = "admission is the limit"
	h.predicted = &evidence.Predicted{Change: ch, Note: "Offering less load moves the same counters."}
	h.predicted.Expect = append(h.predicted.Expect, queueExpect(v, o, decisive, fall)...)
	if k.CPU {
		// On a CPU, decoding more sequences at once is compute-bound: the wait turns into
		// shared, slower service, so TTFT falls by less than the queue and TPOT rises.
		h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigTTFTP50, "<=", 0, true))
		h.predicted.Note += " On a CPU the slots share the compute: TPOT rises and throughput stays."
	} else {
		// On a GPU, decode is bandwidth-bound: a larger batch costs little per token, so the
		// queue's time comes off TTFT.
		h.predicted.Expect = append(h.predicted.Expect,
			v.expect(evidence.SigTTFTP50, "<=", -math.Max(fall, 0.1), true),
			v.expect(evidence.SigTPOTP50, "<=", predictTPOTRise, true))
		if o.ClosedLoop {
			// A closed loop keeps its tasks in flight: shorter tasks mean more of them per
			// second (X = N / E2E). Half the queue's share of E2E is the bound.
			if e2e, ok := v.val(evidence.SigE2EP50); ok && e2e > 0 {
				if t, ok2 := v.val(evidence.SigTTFTFromSentP50); ok2 {
					q := share * t
					if q < e2e {
						h.predicted.Expect = append(h.predicted.Expect, v.expect(evidence.SigThroughput, ">=", q/(e2e-q)/2, true))
					}
				}
			}
		}
	}
	h.nextProbe = fmt.Sprintf("Watch %s against pel's in-flight count during the run; repeat the run at half the load: the queue share should fall below %.0f%%.", k.Knobs.Queue, queueTargetShare*100)
	h.strength = clamp01((share - queueShareMin) / (1 - queueShareMin))
	switch {
	case tl.present && !tl.holds:
		// Decode slows with load: the device is near capacity; more slots would share it.
		h.items = append(h.items, tl)
		h.confidence -= confCompetingCause
		h.confNote = fmt.Sprintf("decode slows %.1f× under high load: the device, not only the admission limit, is near its capacity", tl.item.Value)
		h.cond = "capacity is the limit"
		h.predicted = &evidence.Predicted{Change: change(v.engine, evidence.ActLessLoad), Expect: queueExpect(v, o, decisive, fall),
			Note: fmt.Sprintf("Raising %s alone moves the wait into slower decode (TPOT rises by about as much as TTFT falls).", k.Knobs.Seqs)}
	case tl.present:
		h.items = append(h.items, asContext(tl))
	}
	return h
}

func ruleWaitBeforeEngine(v *view, o *Options) *hit {
	q := v.judge(evidence.SigQueueShare, ">=", queueShareMin)
	if !q.present || !q.holds || v.queueShareFromClient() {
		return nil
	}
	room := roomOf(v)
	if !room.known || !room.hadRoom {
		return nil
	}
	cli, okC := v.val(evidence.SigTTFTFromSentP50)
	eng, okE := v.val(evidence.SigServiceTTFT)
	if !okC || !okE {
		return nil
	}
	items := []meas{q}
	items = append(items, roomItems(v)...)
	share := q.item.Value
	return &hit{
		symptom: fmt.Sprintf("the first token reaches the client %.0f ms after its send (p50), while the engine's own prompt processing takes %.0f ms (p50, its per-request timings): %.0f%% of the time to first token passes before the engine starts the task, and %s",
			cli, eng, share*100, room.why),
		hypothesis: "Something in front of the engine holds each request before forwarding it (a gateway, an auth proxy, a rate limiter, a router, or the network): the engine had free slots and queued nothing, so its admission did not hold them.",
		items:      items,
		// Two per-request measures of the same tasks and the engine's own gauges agree;
		// which component in front holds the requests is not measured.
		confidence: confSupported,
		cond:       "the wait is in front of the engine",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActBypassFront), Expect: []evidence.Expectation{
			v.expect(evidence.SigQueueShare, "<=", queueTargetShare, false),
			v.expect(evidence.SigTTFTFromSentP50, "<=", -share/2, true),
		}, Note: "The engine's own prompt processing time and its queue stay as they are; raising its slots changes nothing."},
		nextProbe: "Send a few requests straight to the engine's port, around whatever stands in front of it, and time the first token both ways (curl -N -w '%{time_starttransfer}'): the difference is the hold.",
		impact:    impactSpec{dims: []string{dimTTFT, dimE2E, dimTimeout}},
		strength:  clamp01((share - queueShareMin) / (1 - queueShareMin)),
	}
}

// queueExpect predicts each measure of the queue that showed it: the client's own split of
// TTFT falls under queueTargetShare; where the client-vs-engine count showed it, tasks in
// flight fall by at least fall (Little's law: the service part of their time stays, the
// queued part shrinks under queueTargetShare); the engine's own queue time halves at least.
func queueExpect(v *view, o *Options, decisive []meas, fall float64) []evidence.Expectation {
	var out []evidence.Expectation
	if v.has(evidence.SigQueueShare) {
		out = append(out, v.expect(evidence.SigQueueShare, "<=", queueTargetShare, false))
	}
	for _, m := range decisive {
		switch m.item.Signal {
		case "client_vs_engine.unserved_share":
			if !o.ClosedLoop { // a closed loop holds its in-flight count by construction
				out = append(out, v.expect(evidence.SigInFlightMean, "<=", -math.Max(fall, 0.1), true))
			}
		case "otlp.queue_share_ttft_p50":
			out = append(out, v.expect(evidence.SigOTLPQueueP50, "<=", predictHalve, true))
		}
	}
	return out
}

func rulePrefillStall(v *view, o *Options) *hit {
	st := v.judge(evidence.SigStallShare, ">=", stallShareMin)
	al := v.judge(evidence.SigStallAligned, ">=", stallAlignedMin)
	if !st.present || !st.holds || !al.present || !al.holds {
		return nil
	}
	base, _ := v.val(evidence.SigStallAlignedBase)
	chance := derivedItem("client.stall_alignment_over_chance", al.item.Value/math.Max(base, 1e-6), ">=", stallChance, "ratio", "client",
		evidence.StageRequestTrace, evidence.SigStallAligned, evidence.SigStallAlignedBase)
	if !chance.holds {
		return nil
	}
	k := profileOf(v.engine)
	h := &hit{
		symptom: fmt.Sprintf("decode stalls: %.1f%% of token gaps are stalls, and %.0f%% of them end as another task gets its first token (%.0f%% of ordinary gaps do)",
			st.item.Value*100, al.item.Value*100, base*100),
		hypothesis: "New prompts are prefilled inside the decode steps of running sequences: each admission stalls every stream for the length of a prefill, which sets the tail of inter-token latency.",
		items:      []meas{st, al, chance},
		confidence: confLikely,
		cond:       "prefills stall decode",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActChunkPrefill), Expect: []evidence.Expectation{
			v.expect(evidence.SigStallShare, "<=", stallShareMin, false),
			v.expect(evidence.SigITLP99, "<=", predictClearFall, true),
		}, Note: "TTFT p50 rises by less than one prefill."},
		nextProbe: fmt.Sprintf("Plot one long stream's token gaps against other tasks' first tokens (pel report DIR --csv), and compare %s with the stall lengths.", k.Knobs.Prefill),
		impact:    impactSpec{dims: []string{dimITL, dimTPOT, dimE2E}},
		strength:  clamp01(st.item.Value / (10 * stallShareMin)),
	}
	chunkedPrefillAdvice(v, h)
	if p99, ok := v.val(evidence.SigITLP99); ok {
		if p50, ok2 := v.val(evidence.SigITLP50); ok2 && p50 > 0 {
			m := derivedItem("client.itl_p99_over_p50", p99/p50, ">=", itlStallRatio, "ratio", "client", evidence.StageRequestTrace, evidence.SigITLP99, evidence.SigITLP50)
			h.items = append(h.items, asContext(m))
			if m.holds {
				h.confidence += confCorroboration
			}
		}
	}
	// From the client alone the stalls are certain, their cause inside the engine is not: a
	// device-side reason (communication, a slow device) lengthens prefill steps as well.
	if !v.stages[evidence.StageServingCache] {
		h.confidence = confShort
		h.confNote = "the engine's metrics not seen: the client shows the stalls, not what made the prefill steps long"
		h.missing = append(h.missing, missMetrics)
	}
	// On several GPUs, communication inside each step lengthens the prefill steps too: a
	// trace of all ranks must rule it out before the scheduler is blamed for the stalls.
	if !v.stages[evidence.StageKernelOperator] {
		multi := false
		if n, ok := v.val(evidence.SigEngines); ok && n >= 2 {
			multi = true
		}
		// NVLink carries only GPU-to-GPU traffic (PCIe also carries the host's, so it is no
		// sign of a peer).
		if x, ok := v.val(evidence.SigNVLinkBytesPS); ok && x > 0 {
			multi = true
		}
		if multi {
			h.confidence = confEven
			h.confNote = "several GPUs serve this model: exposed communication lengthens prefill steps as well, and no trace excludes it"
			h.missing = append(h.missing, missCommTr)
		}
	}
	// Stalls set the tail; when the median token already misses the bound, every step is
	// slow and removing the stalls cannot bring the run within it.
	if b, ok := o.bound(evidence.SigITLP99); ok {
		if m := v.judge(evidence.SigITLP50, ">", b); m.present && m.holds {
			h.items = append(h.items, asContext(m))
			h.confidence = confDoubtful
			h.confNote = fmt.Sprintf("ITL p50 %.3g ms is itself over the %.3g ms bound: every decode step is slow, so the stalls are not what misses the contract", m.item.Value, b)
		}
	}
	return h
}

func rulePrefillCompute(v *view, o *Options) *hit {
	sym, over := v.missedIn(dimTTFT)
	if !over {
		return nil // long prefills within the contract are headroom, not a finding
	}
	q := v.judge(evidence.SigQueueShare, "<=", 1-prefillServiceMin)
	if !q.present || !q.holds {
		return nil // a queue (or an unknown split) holds the time: not the prefill itself
	}
	k := profileOf(v.engine)
	svc, _ := v.val(evidence.SigServiceTTFT)
	// A service time read from an idle baseline (the client alone) holds whatever every
	// request passes through, a gateway's hold included; the engine's own prefill
	// histogram says how much of it is prefill (its mean: the histogram's exact sum over
	// its count, where a bucket-interpolated median can read far under the values). When
	// that is under the same three quarters, the time is not the prompt's own compute.
	if p, ok := v.val(evidence.SigServerPrefillMean); ok && svc > 0 && p < prefillServiceMin*svc &&
		v.queueShareFromClient() {
		return nil
	}
	h := &hit{
		symptom:    fmt.Sprintf("TTFT over its bound while %.0f%% of it is the task's own prefill (service %.0f ms)", (1-q.item.Value)*100, svc),
		hypothesis: "The first token waits on the prompt's own prefill compute: the prompts are long for what the device computes per second, so TTFT grows with prompt length, with no queue in front of it.",
		items:      []meas{sym, q},
		confidence: confCredible,
		cond:       "prefill compute sets TTFT",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActShorterPrompts), Expect: []evidence.Expectation{
			v.expect(evidence.SigTTFTP99, "<=", predictPrefillFall, true),
		}, Note: "More sequence slots or chunked prefill leave TTFT unchanged or higher."},
		nextProbe: fmt.Sprintf("Send single prompts of 1/4, 1/2 and 1× the contract's length to an idle server and fit TTFT against length; compare with %s.", k.Knobs.Prefill),
		impact:    impactSpec{dims: []string{dimTTFT, dimE2E}},
		strength:  0.5,
	}
	if r2 := v.judge(evidence.SigPrefillFitR2, ">=", prefillFitMin); r2.present {
		h.items = append(h.items, r2)
		if r2.holds {
			h.confidence += confDirectCause
			if s, ok := v.val(evidence.SigPrefillMsPerToken); ok && s > 0 {
				h.symptom += fmt.Sprintf("; prefill runs at ~%.0f prompt tokens/s", 1000/s)
			}
		} else {
			h.confidence -= confPartlyElsewhere
			h.confNote = "prompt length explains little of the service time: something besides prefill compute varies"
		}
	} else {
		h.confNote = "prompt lengths too uniform to fit service time against length"
	}
	if k.CPU {
		h.hypothesis += " On a CPU engine this is the matrix throughput of its threads."
		if !v.hasSource("dcgm") && o.System.GPU == "" {
			// With no GPU known, the engine computes on the host's cores, which every process
			// on the machine shares: a task's own slow prefill is then as much compute taken
			// by other processes as slow kernels, and nothing here tells the two apart.
			h.confidence = math.Min(h.confidence, ownerMinConfidence-0.1)
			h.confNote = joinNote(h.confNote, "on the host's CPU, other processes taking its cores slow a prefill as much as slow kernels do")
			h.missing = append(h.missing, missHostCPU)
		}
	}
	return h
}

// errorClass is what pel says of one error class: the layer that owns it, a confidence that
// says how directly the class names its owner, and the finding's words.
type errorClass struct {
	layer  evidence.Layer
	conf   float64
	what   string
	why    string
	fix    string
	action evidence.Action
}

// errorClassLayer attributes each error class to the layer that owns it.
var errorClassLayer = map[string]errorClass{
	record.ErrRefused: {evidence.LayerApplication, confSupported, "refused by the server",
		"The requests as sent are refused (a field, model name or size the server does not accept): the client and the server disagree on the contract.",
		"If the requests are refused as sent, fixing the field the error names brings this error rate to 0 and acceptance up by the same share.", evidence.ActFixErrors},
	record.ErrOverloaded: {evidence.LayerScheduling, confCorroborated, "shed by the server (429/503)",
		"The server's admission control sheds load: more tasks arrive than it is configured to hold.",
		"If admission sheds the load, raising the engine's queue/concurrency limit or offering less load brings 429/503 to 0; the tasks then wait instead (watch TTFT).", evidence.ActRaiseSeqs},
	record.ErrServer: {evidence.LayerApplication, confCredible, "failed inside the server (5xx)",
		"The serving process fails on some requests: its log at the failures' times names the cause.",
		"If the failures are the server's, the error rate drops to 0 once the logged cause is fixed; until then it tracks load or input as the log says.", evidence.ActFixErrors},
	record.ErrStreamEvent: {evidence.LayerApplication, confLeaning, "ended by an error event inside an HTTP 200 stream",
		"The engine reports a failure in-band after it began answering: the task is lost although the HTTP status said success.",
		"If the in-band errors are the engine's, fixing the cause their message names brings this error rate to 0.", evidence.ActFixErrors},
	record.ErrIncomplete: {evidence.LayerApplication, confOneSource, "cut before the response completed",
		"Responses end without finish_reason or [DONE]: a proxy, a connection limit or a crashed worker cuts them.",
		"If something on the path cuts streams, removing it (or raising its idle/read timeout) brings incomplete responses to 0.", evidence.ActFixErrors},
	record.ErrConn: {evidence.LayerApplication, confSupported, "lost to connection failures",
		"Connections are refused, reset or closed under the client: the server's connection handling (keep-alive, accept queue, worker threads) or a proxy drops them.",
		"If the connection handling drops tasks, raising the server's connection/worker limits (or removing the proxy that resets them) brings connection errors to 0.", evidence.ActFixErrors},
	record.ErrInvalid: {evidence.LayerApplication, confOneSource, "completed without a valid completion",
		"The server answers but the completion contradicts the request (no output, or usage that cannot be right).",
		"If the completions are invalid, the error names the field; fixing it brings this rate to 0.", evidence.ActFixErrors},
	record.ErrRedirect: {evidence.LayerApplication, confDirect, "redirected elsewhere",
		"The target answers with a redirect, which pel does not follow: the URL given is not the serving endpoint.",
		"Pointing --target at the Location the redirect names brings this error rate to 0.", evidence.ActFixErrors},
	// The classes of answers that arrived but did not end as completions, each with its own
	// owner and prediction.
	record.ErrFinishError: {evidence.LayerApplication, confOneSource, `ended with finish_reason "error"`,
		"The engine stops answers part-way and says they failed: an error inside generation (its log at those times names it), although the HTTP status said success.",
		"If the engine's failure is what its log names, fixing it brings finish_reason \"error\" to 0 and acceptance up by the same share.", evidence.ActFixErrors},
	record.ErrAborted: {evidence.LayerScheduling, confCredible, `aborted by the engine (finish_reason "abort")`,
		"The engine aborts requests it had admitted: it cancels or evicts them (a scheduler limit, a preemption policy, or a restart) rather than finishing them.",
		"If the engine aborts admitted requests, the setting or event its log names (preemption, a queue or time limit, a restart) is the cause: removing it brings aborts to 0.", evidence.ActFixErrors},
	record.ErrNoFinish: {evidence.LayerApplication, confOneSource, "ended without saying why (no finish_reason)",
		"Answers end without a finish_reason: the server (or a proxy that rewrites its responses) does not say whether the completion ended, so none counts as complete.",
		"If the server or a proxy drops finish_reason, fixing it (or the proxy) brings this error rate to 0.", evidence.ActFixErrors},
}

// errorRule makes the rule for one error class.
func errorRule(class string) *rule {
	spec := errorClassLayer[class]
	return &rule{id: "errors-" + strings.ReplaceAll(class, "_", "-"), layer: spec.layer, eval: func(v *view, o *Options) *hit {
		m := v.judge(evidence.SigErrorClassRate(class), ">=", errorRateMin)
		if !m.present || !m.holds {
			return nil
		}
		if class == record.ErrOverloaded {
			if roomOf(v).shedOutside() {
				return nil // shed in front of the engine: the finding of the rule for sheds before the engine
			}
		}
		msg := v.sig[evidence.SigErrorClassRate(class)].Note
		h := &hit{
			symptom:    fmt.Sprintf("%.1f%% of tasks %s (%s)", m.item.Value*100, spec.what, msg),
			hypothesis: spec.why,
			items:      []meas{m},
			confidence: spec.conf,
			prediction: spec.fix,
			cond:       "the errors are what they say",
			predicted: &evidence.Predicted{Change: change(v.engine, spec.action), Expect: []evidence.Expectation{
				rateGone(evidence.SigErrorClassRate(class)),
			}},
			nextProbe: "Read the server's log at the failed tasks' times (requests.jsonl has each task's id, sent with X-Request-Id) and reproduce one with curl.",
			impact: impactSpec{match: func(r *record.Record) bool {
				return stats.ErrorClassOf(r) == class && !stats.ContextExhausted(r)
			}, matchWhat: "tasks failed as " + class},
			strength: clamp01(m.item.Value * 5),
		}
		if v.imported != "" {
			// The file holds the measuring client's account of each failure and nothing
			// from the server: one step under the gate, and a probe the run can have.
			h.confidence = math.Min(h.confidence, confShort)
			h.confNote = joinNote(h.confNote, "imported from "+v.imported+": the file holds only the measuring client's account of each failure; the server's log at those times settles whose it was")
			h.nextProbe = "Read the server's log at the failed requests' times (the file keeps their order and the run's date; an imported run sent no request id pel can name)."
		}
		if class == record.ErrConn && profileOf(v.engine).ClosesStreams {
			h.hypothesis += " llama.cpp's server advertises keep-alive but closes the connection after a streamed response; pel resends a request that failed on a reused connection before any response byte, so these failed otherwise."
		}
		return h
	}}
}

func ruleShedBeforeEngine(v *view, o *Options) *hit {
	class := record.ErrOverloaded
	m := v.judge(evidence.SigErrorClassRate(class), ">=", errorRateMin)
	if !m.present || !m.holds {
		return nil
	}
	c := roomOf(v)
	if !c.shedOutside() {
		return nil
	}
	items := []meas{m}
	items = append(items, roomItems(v)...)
	return &hit{
		symptom:    fmt.Sprintf("%.1f%% of tasks shed with 429/503 (%s) while %s", m.item.Value*100, v.sig[evidence.SigErrorClassRate(class)].Note, c.why),
		hypothesis: "Something in front of the engine refuses the requests (a gateway, an auth proxy, a rate limiter or a router): the engine's own admission had room and queued nothing, so its limits are not what sheds them.",
		items:      items,
		// The engine's own counters rule its admission out; which component in front
		// refused is not measured.
		confidence: confSupported,
		cond:       "the refusals come from in front of the engine",
		prediction: "If the refusals come from in front of the engine, raising or removing that component's limit (or sending straight to the engine) brings 429/503 to 0 with the engine's queue still at 0; raising the engine's own limits changes nothing.",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActFixErrors), Expect: []evidence.Expectation{
			rateGone(evidence.SigErrorClassRate(class)),
		}},
		nextProbe: "Send a few requests straight to the engine's port, around the gateway: they are not refused if the gateway sheds them; the gateway's own log or metrics name its limit.",
		impact: impactSpec{match: func(r *record.Record) bool {
			return stats.ErrorClassOf(r) == class
		}, matchWhat: "tasks shed as overloaded"},
		strength: clamp01(m.item.Value * 5),
	}
}

func ruleContextExhausted(v *view, o *Options) *hit {
	m := v.judge(evidence.SigContextExhaustedRate, ">=", contextRateMin)
	if !m.present || !m.holds {
		return nil
	}
	k := profileOf(v.engine)
	h := &hit{
		symptom:    fmt.Sprintf("%.1f%% of tasks lost context (%s)", m.item.Value*100, v.sig[evidence.SigContextExhaustedRate].Note),
		hypothesis: fmt.Sprintf("Each sequence's context is smaller than the contract's prompt plus output: %s refuses the prompt, truncates it, or shifts the context while generating, so the output no longer answers the prompt sent.", k.Title),
		items:      []meas{m},
		confidence: confCorroborated,
		cond:       "the per-sequence context is the limit",
		predicted: &evidence.Predicted{Change: change(v.engine, evidence.ActMoreContext), Expect: []evidence.Expectation{
			rateGone(evidence.SigContextExhaustedRate),
		}, Note: "Acceptance rises by the same share."},
		nextProbe: fmt.Sprintf("Compare the contract's longest prompt + max_tokens with the per-sequence context (%s); check usage.prompt_tokens against what was sent.", k.Knobs.KV),
		impact:    impactSpec{match: stats.ContextExhausted, matchWhat: "tasks refused, truncated or context-shifted"},
		strength:  clamp01(m.item.Value * 2),
	}
	for _, f := range []string{record.FlagContextShift, record.FlagPromptTruncated} {
		if x := v.judge(evidence.SigFlagRate(f), ">", 0); x.present {
			h.items = append(h.items, asContext(x))
		}
	}
	return h
}
