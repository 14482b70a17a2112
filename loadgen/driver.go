package loadgen

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/pel-ladder/pel/internal/hardstop"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// DefaultGrace is how long in-flight tasks may run on after the run is stopped.
const DefaultGrace = 5 * time.Second

// Doer performs one attempt of a request (Client implements it; tests use fakes).
type Doer interface {
	Body(r *workload.Request) ([]byte, error)
	Do(taskCtx context.Context, r *workload.Request, body []byte, rec *record.Record, traceparent string) (output string, chars int)
}

// RetryPolicy says whether and when a failed attempt is tried again.
type RetryPolicy struct {
	MaxAttempts int                                      // total attempts per task; < 1 means 1
	ShouldRetry func(status string, httpStatus int) bool // nil: never
	Backoff     func(attempt int) time.Duration          // wait after attempt n (from 1) failed; nil: none
	// Budget is how many retries the whole run may have sent once sent tasks started; past
	// it a failure is not retried (budget.go). nil: no run-wide budget.
	Budget func(sent int64) int64
}

// DriverConfig configures a Driver.
type DriverConfig struct {
	Clock Clock
	Doer  Doer
	Retry RetryPolicy
	// MaxInFlight caps tasks in flight (0: unbounded, the open-loop default). A task that
	// waits for a slot records the wait as ClientQueueUS.
	MaxInFlight int
	// Grace is how long in-flight tasks may finish after ctx is cancelled (0: DefaultGrace,
	// negative: none); then they are cancelled and recorded as StatusCancelled.
	Grace time.Duration
	// Warmup labels tasks sent before it as phase cold (closed loop, and open-loop requests
	// that carry no phase).
	Warmup time.Duration
	// Start is the instant the schedule's offsets count from (zero: when Run is called).
	// The shards of a sharded run share one, so that their parts interleave as the single
	// schedule would; Run waits for it.
	Start time.Time
	// Duration stops arrivals at start+Duration (0: the schedule alone decides). Closed loop
	// needs it, since its schedule ignores time.
	Duration time.Duration
	// Judge decides acceptance (sets Accepted and Reasons); nil accepts every completed task.
	Judge func(rec *record.Record, output string)
	// JudgeStep and JudgeTask do the same for a multi-step task's calls (answer: the call's
	// output is an answer the task's checks apply to) and for the task from its judged calls
	// (unfinished: why the task did not finish although no call failed, or ""). nil: a call
	// is accepted when it completed, the task when every call was and it finished.
	JudgeStep func(rec *record.Record, output string, answer bool)
	JudgeTask func(task *record.Record, steps []*record.Record, unfinished string)
	KeepText  bool
	// Sink receives every finished record (e.g. record.Writer.Write); called concurrently.
	Sink func(rec *record.Record) error
	// OnRecord is called after Sink, concurrently (progress displays).
	OnRecord func(rec *record.Record)
	// TracePrefix, when set, is the first 8 bytes of every trace id sent (the rest stay
	// random), so an OTLP receiver can keep this run's spans and count the rest (otlp).
	TracePrefix *[8]byte
	// Route, when set, sees every arrival once, in schedule order, after its phase is set
	// and before its body is encoded; it may change req.Phase. An interleaved canary run
	// marks the candidate's arrivals record.PhaseCanary here and Doer (a SplitDoer) sends
	// each request by its phase.
	Route func(req *workload.Request)
	// TaskBound, when set, is how long after its arrival a multi-step task may start a
	// call (its e2e max bound); a call due later is not sent and the task ends unfinished
	// (budget.go). 0 from it: no bound.
	TaskBound func(task string) time.Duration
}

// Driver runs a schedule. Its counters may be read while it runs.
type Driver struct {
	cfg      DriverConfig
	sem      chan struct{}
	inFlight atomic.Int64
	sent     atomic.Int64
	done     atomic.Int64
	failed   atomic.Int64
	accepted atomic.Int64
	queued   atomic.Int64
	// requests counts HTTP exchanges in flight (a multi-step task in think time has none):
	// a step record's InFlight.
	requests atomic.Int64
	retries  atomic.Int64 // retries sent, against RetryPolicy.Budget

	sinkMu  sync.Mutex
	sinkErr error

	// pend holds the tasks started and not yet recorded (abandon.go).
	pendMu    sync.Mutex
	pend      map[*record.Record]*pendingTask
	abandoned bool
}

// Progress is a snapshot of a running driver.
type Progress struct {
	Sent, Done, InFlight, Failed, Accepted int64
	Queued                                 int64 // waiting for a max_in_flight slot
}

// Result describes a finished run.
type Result struct {
	Start, End  time.Time
	Records     int  // records handed to the sink
	Interrupted bool // ctx was cancelled before the schedule ended
	SinkErr     error
}

// NewDriver returns a driver; Clock defaults to RealClock.
func NewDriver(cfg DriverConfig) *Driver {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Retry.MaxAttempts < 1 {
		cfg.Retry.MaxAttempts = 1
	}
	d := &Driver{cfg: cfg}
	if cfg.MaxInFlight > 0 {
		d.sem = make(chan struct{}, cfg.MaxInFlight)
	}
	return d
}

// Progress returns the current counters.
func (d *Driver) Progress() Progress {
	return Progress{Sent: d.sent.Load(), Done: d.done.Load(), InFlight: d.inFlight.Load(), Failed: d.failed.Load(), Accepted: d.accepted.Load(), Queued: d.queued.Load()}
}

// Run drives sched until it is exhausted (or Duration passes) and every task has ended, or
// until ctx is cancelled: then arrivals stop at once, in-flight tasks get Grace to finish and
// are cancelled after it. Every task whose scheduled time came gets exactly one record.
func (d *Driver) Run(ctx context.Context, sched workload.Schedule) Result {
	taskCtx, cancelTasks := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTasks()
	// A process told to stop at once (a second Ctrl-C) records the tasks in flight first.
	defer hardstop.Register(d.Abandon)()
	clk := d.cfg.Clock
	start := clk.Now()
	if !d.cfg.Start.IsZero() {
		start = d.cfg.Start
		if clk.SleepUntil(ctx, start) != nil { // stopped before the start: nothing was due
			return Result{Start: start, End: start, Interrupted: true}
		}
	}
	var wg sync.WaitGroup
	var records atomic.Int64
	var stoppedEarly atomic.Bool // arrivals ended because ctx was cancelled
	// The request body is encoded before the task is due (in the pacer, while it waits), so
	// encoding never adds to schedule lag.
	launch := func(req workload.Request, body []byte, berr error, at time.Time) {
		if len(req.Steps) > 0 {
			d.stepTask(taskCtx, req, at)
		} else {
			d.task(taskCtx, req, body, berr, at)
		}
		records.Add(1)
	}
	// A multi-step task encodes each call when its turn comes (it carries the answers).
	encode := func(req *workload.Request) ([]byte, error) {
		if len(req.Steps) > 0 {
			return nil, nil
		}
		return d.cfg.Doer.Body(req)
	}
	if n := sched.Closed(); n > 0 {
		var mu sync.Mutex
		for w := 0; w < n; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if ctx.Err() != nil {
						stoppedEarly.Store(true)
						return
					}
					mu.Lock()
					req, ok := sched.Next()
					mu.Unlock()
					if !ok {
						return
					}
					now := clk.Now()
					el := now.Sub(start)
					if d.cfg.Duration > 0 && el >= d.cfg.Duration {
						return
					}
					req.At = el
					req.Phase = d.phase(req.Phase, el, true)
					if d.cfg.Route != nil {
						d.cfg.Route(&req)
					}
					body, berr := encode(&req)
					launch(req, body, berr, now) // closed loop: due the moment a worker is free
				}
			}()
		}
	} else {
		wait := clk.SleepUntil
		if p, ok := clk.(pacer); ok {
			wait = p.PaceUntil
		}
		for {
			req, ok := sched.Next()
			if !ok || (d.cfg.Duration > 0 && req.At >= d.cfg.Duration) {
				break
			}
			at := start.Add(req.At)
			if d.cfg.Route != nil {
				req.Phase = d.phase(req.Phase, req.At, false)
				d.cfg.Route(&req)
			}
			body, berr := encode(&req)
			if wait(ctx, at) != nil {
				stoppedEarly.Store(true)
				break // stopped: this request was never due, so it gets no record
			}
			req.Phase = d.phase(req.Phase, req.At, false)
			wg.Add(1)
			go func() { defer wg.Done(); launch(req, body, berr, at) }()
		}
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	interrupted := stoppedEarly.Load()
	select {
	case <-allDone:
	case <-ctx.Done():
		interrupted = true
		gctx, gcancel := context.WithCancel(context.Background())
		if d.cfg.Grace > 0 {
			deadline := clk.Now().Add(d.cfg.Grace)
			go func() {
				if clk.SleepUntil(gctx, deadline) == nil {
					cancelTasks()
				}
			}()
		} else {
			cancelTasks()
		}
		<-allDone
		gcancel()
	}
	interrupted = interrupted || stoppedEarly.Load()
	d.sinkMu.Lock()
	serr := d.sinkErr
	d.sinkMu.Unlock()
	return Result{Start: start, End: clk.Now(), Records: int(records.Load()), Interrupted: interrupted, SinkErr: serr}
}

func (d *Driver) phase(p string, at time.Duration, closed bool) string {
	if p != "" && !closed {
		return p
	}
	if at < d.cfg.Warmup {
		return record.PhaseCold
	}
	return record.PhaseWarm
}

func (d *Driver) task(ctx context.Context, req workload.Request, body []byte, berr error, at time.Time) {
	clk := d.cfg.Clock
	trace := d.newTrace()
	tid := hex.EncodeToString(trace[:])
	rec := &record.Record{Seq: req.Seq, ID: tid, TraceID: tid, Task: req.Task, Phase: req.Phase, ScheduledAt: at}
	d.track(rec, &req)
	if !d.acquire(ctx, rec, &req) {
		return
	}
	// The slot is freed right after DoneAt, before the record is judged and counted done, so
	// a waiting task starts as soon as the slot is free (and fake-clock tests see no gap).
	release := d.release
	var output string
	var chars int
	if berr != nil {
		rec.Status, rec.ErrorClass, rec.Error = record.StatusConnError, record.ErrConn, "cannot encode request: "+berr.Error()
		rec.DoneAt = clk.Now()
		release()
		d.finish(rec, &req, "", 0)
		return
	}
	rec.InFlight = int(d.inFlight.Add(1) - 1)
	d.requests.Add(1)
	d.sent.Add(1)
	d.sending(rec, clk.Now())
	d.attempts(ctx, rec, trace, func(tp string) { output, chars = d.cfg.Doer.Do(ctx, &req, body, rec, tp) })
	rec.DoneAt = clk.Now()
	d.requests.Add(-1)
	d.inFlight.Add(-1)
	release()
	d.finish(rec, &req, output, chars)
}

// newTrace draws a task's W3C trace id (with the run's prefix when one is set).
func (d *Driver) newTrace() [16]byte {
	var trace [16]byte
	binary.LittleEndian.PutUint64(trace[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(trace[8:], rand.Uint64())
	if d.cfg.TracePrefix != nil {
		copy(trace[:8], d.cfg.TracePrefix[:])
	}
	return trace
}

// release frees a max_in_flight slot taken by acquire.
func (d *Driver) release() {
	if d.sem != nil {
		<-d.sem
	}
}

// acquire takes a max_in_flight slot for the task, recording the wait as client queue time.
// It returns false when the run stopped while the task waited (the task is then finished,
// as cancelled).
func (d *Driver) acquire(ctx context.Context, rec *record.Record, req *workload.Request) bool {
	clk := d.cfg.Clock
	if d.sem != nil {
		select {
		case d.sem <- struct{}{}:
		default:
			w := clk.Now()
			d.queued.Add(1)
			select {
			case d.sem <- struct{}{}:
				d.queued.Add(-1)
				rec.ClientQueueUS = clk.Now().Sub(w).Microseconds()
				if ctx.Err() != nil { // the slot came free because the run was stopping
					<-d.sem
					d.cancelQueued(rec, req)
					return false
				}
			case <-ctx.Done():
				d.queued.Add(-1)
				rec.ClientQueueUS = clk.Now().Sub(w).Microseconds()
				d.cancelQueued(rec, req)
				return false
			}
		}
	}
	return true
}

// attempts runs one request with the retry policy: do performs one attempt (with a fresh
// span of the task's trace each time) and fills rec; Attempts and FirstSentAt are set here.
func (d *Driver) attempts(ctx context.Context, rec *record.Record, trace [16]byte, do func(traceparent string)) {
	clk := d.cfg.Clock
	pol := d.cfg.Retry
	for attempt := 1; ; attempt++ {
		rec.Attempts = attempt
		var span [8]byte
		binary.LittleEndian.PutUint64(span[:], rand.Uint64())
		do(Traceparent(trace, span))
		if attempt == 1 {
			rec.FirstSentAt = rec.SentAt
		}
		if rec.Status == record.StatusOK || rec.Status == record.StatusCancelled {
			break
		}
		if attempt >= pol.MaxAttempts || pol.ShouldRetry == nil || !pol.ShouldRetry(rec.Status, rec.HTTPStatus) {
			break
		}
		if !d.spendRetry() {
			retryRefused(rec)
			break
		}
		var wait time.Duration
		if pol.Backoff != nil {
			wait = pol.Backoff(attempt)
		}
		if clk.SleepUntil(ctx, clk.Now().Add(wait)) != nil {
			rec.Status, rec.ErrorClass, rec.Error = record.StatusCancelled, "", "run stopped during retry backoff; last attempt: "+rec.Error
			break
		}
	}
}

func (d *Driver) cancelQueued(rec *record.Record, req *workload.Request) {
	rec.Status = record.StatusCancelled
	rec.Error = "run stopped while the task waited for a client-side concurrency slot (max_in_flight)"
	rec.DoneAt = d.cfg.Clock.Now()
	d.finish(rec, req, "", 0)
}

// finish judges the task, applies the privacy rule, and hands the record on.
func (d *Driver) finish(rec *record.Record, req *workload.Request, output string, chars int) {
	if !d.claim(rec) {
		return
	}
	if d.cfg.Judge != nil {
		d.cfg.Judge(rec, output)
	} else {
		rec.Accepted = rec.OK()
		switch {
		case rec.Status == record.StatusInvalid:
			rec.Reasons = append(rec.Reasons, rec.InvalidReason())
		case !rec.Accepted:
			rec.Reasons = append(rec.Reasons, "error: "+rec.Status)
		}
	}
	p := PromptText(req)
	sum := sha256.Sum256([]byte(p))
	rec.PromptHash = hex.EncodeToString(sum[:])
	rec.PromptChars = utf8.RuneCountInString(p)
	rec.OutputChars = chars
	if d.cfg.KeepText {
		rec.Prompt, rec.Output = p, output
	}
	d.done.Add(1)
	if rec.Failed() {
		d.failed.Add(1)
	}
	if rec.Accepted {
		d.accepted.Add(1)
	}
	d.sink(rec)
	if d.cfg.OnRecord != nil {
		d.cfg.OnRecord(rec)
	}
}
