// Package importer turns the result files of other LLM benchmarking tools (vllm bench
// serve, NVIDIA AIPerf, GuideLLM, genai-perf) into pel run directories, so pel analyze,
// report, compare and sweep read them as they read pel's own runs.
//
// Each reader maps the tool's per-request records onto record.Record and streams them into
// requests.jsonl; what the file does not carry (a send schedule, server metrics, text,
// acceptance checks) is left unset and named in the run's notes. The contract written next
// to them is inferred from the file (arrival, counts, observed lengths) and says so in its
// description: it describes what ran, it was not what drove it.
package importer

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

// MaxFileSize bounds a result file read whole (the JSON formats): 1 GiB holds a detailed
// vllm bench serve result of well over a million requests.
const MaxFileSize = 1 << 30

// MaxRequests bounds the records one import writes.
const MaxRequests = 10_000_000

// ErrBadInput marks a file that cannot be imported (exit 2): the program's one bad-input
// kind.
var ErrBadInput = badinput.ErrBadInput

// badf is a bad-input error; by convention it starts with the file name and the field.
func badf(format string, a ...any) error { return badinput.Errorf(format, a...) }

// TaskName is the task type every imported record belongs to (the tools have one).
const TaskName = "default"

// Format is one importable file format.
type Format struct {
	Name string // as given to pel import
	Tool string // the tool that writes it
	File string // the file it writes, for help text
	read func(r io.Reader, name string, s *sink) error
}

// Formats lists the formats pel import reads.
var Formats = []Format{
	{Name: "vllm-bench", Tool: "vllm bench serve", File: "--save-result --save-detailed JSON", read: readVLLM},
	{Name: "aiperf", Tool: "NVIDIA AIPerf", File: "profile_export.jsonl", read: readAIPerf},
	{Name: "guidellm", Tool: "GuideLLM", File: "benchmarks.json", read: readGuideLLM},
	{Name: "genai-perf", Tool: "genai-perf (perf_analyzer)", File: "profile_export.json", read: readGenAIPerf},
}

// FormatNames is "vllm-bench|aiperf|...".
func FormatNames() string {
	var n []string
	for _, f := range Formats {
		n = append(n, f.Name)
	}
	return strings.Join(n, "|")
}

// facts is what a reader learns about the run besides its records.
type facts struct {
	model  string
	engine string
	// durationS is the run's duration as the tool measured it (0: unknown).
	durationS float64
	// Arrival, as the tool was configured: rate (req/s, 0: none or infinite), burstiness
	// (gamma shape), concurrency (0: unbounded).
	rate        float64
	burstiness  float64
	concurrency int
	// burst: the tool offered every request at once (vllm bench serve's request_rate inf),
	// max_concurrency at a time when concurrency is set.
	burst bool
	// schedule: the file carries when each request was due (not only when it was sent).
	schedule bool
	// sendTimes: the file carries when each request was sent.
	sendTimes bool
	// perChunk: the file carries every streamed chunk's arrival.
	perChunk bool
	notes    []string
}

// sink receives a reader's records: it numbers them, counts their lengths for the inferred
// contract and writes them.
type sink struct {
	file   string
	w      func(*record.Record) error
	n      int
	ok     int
	prompt lengths
	output lengths
	first  time.Time
	facts  facts
	opt    Options
}

func (s *sink) emit(r *record.Record) error {
	if s.n >= MaxRequests {
		return badf("%s: more than %d requests (pel import's bound)", s.file, MaxRequests)
	}
	if s.opt.Ctx != nil && s.n%1024 == 0 {
		if err := s.opt.Ctx.Err(); err != nil {
			return err
		}
	}
	r.Seq = s.n
	if r.ID == "" {
		r.ID = "import-" + strconv.Itoa(s.n)
	}
	r.Task = TaskName
	if r.Phase == "" {
		r.Phase = record.PhaseWarm
	}
	if r.Attempts == 0 {
		r.Attempts = 1
	}
	if r.Status == record.StatusOK {
		r.Accepted = true // no acceptance checks ran: completed is accepted
		s.ok++
		s.output.add(r.OutputTokens)
	} else if len(r.Reasons) == 0 {
		r.Reasons = []string{"error: " + r.Status} // as pel's driver words it
	}
	if r.PromptTokens > 0 {
		s.prompt.add(r.PromptTokens)
	}
	if !r.ScheduledAt.IsZero() && (s.first.IsZero() || r.ScheduledAt.Before(s.first)) {
		s.first = r.ScheduledAt
	}
	s.n++
	return s.w(r)
}

// Result says what an import wrote.
type Result struct {
	Dir      string
	Format   Format
	Requests int
	OK       int
	// Missing names what the file does not carry, so pel does not measure it.
	Missing []string
	SHA256  string
}

// Options tune an import.
type Options struct {
	// Benchmark picks one benchmark of a file that holds several (a GuideLLM sweep).
	Benchmark int
	// Ctx, when set, stops the import between records once it is done (Ctrl-C); what was
	// written is removed.
	Ctx context.Context
}

// Import reads file in format and writes the run directory dir (absent or empty): the
// inferred contract, requests.jsonl and an evidence.json holding the run's notes; stage 1
// and the diagnosis are computed from them afterwards (ladder.Analyze), as for any run.
func Import(format, file, dir string, o Options) (*Result, error) {
	i := slices.IndexFunc(Formats, func(f Format) bool { return f.Name == format })
	if i < 0 {
		return nil, badf("unknown format %q (want %s)", format, FormatNames())
	}
	f := Formats[i]
	in, st, err := contract.OpenFile(file)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	defer in.Close()
	if st.Size() > MaxFileSize {
		return nil, badf("%s: %d bytes; pel import reads at most %d", file, st.Size(), MaxFileSize)
	}
	d, err := rundir.Create(dir) // the one -o rule: absent or empty
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	w, err := d.CreateRequests()
	if err != nil {
		d.Discard()
		return nil, err
	}
	s := &sink{file: file, w: w.Write, opt: o}
	rerr := f.read(io.LimitReader(in, MaxFileSize), file, s)
	if err := w.Close(); err != nil && rerr == nil {
		rerr = err
	}
	if rerr == nil && s.n == 0 {
		rerr = badf("%s: no requests in the file", file)
	}
	if rerr != nil {
		d.Discard()
		return nil, rerr
	}
	res := &Result{Dir: dir, Format: f, Requests: s.n, OK: s.ok, Missing: missing(s.facts)}
	c, raw, err := s.contract(f)
	if err != nil {
		d.Discard()
		return nil, err
	}
	res.SHA256 = c.SHA256()
	if err := d.WriteContract(raw); err != nil {
		return nil, err
	}
	ev := evidence.New()
	ev.Run.Target = fmt.Sprintf("imported from %s (%s)", filepath.Base(file), f.Tool)
	ev.Run.ImportedFrom = f.Tool
	ev.Run.Model = s.facts.model
	ev.Run.Engine = s.facts.engine
	ev.Run.StartedAt = s.first
	ev.Run.DurationS = s.facts.durationS
	ev.Run.Notes = append(ev.Run.Notes, fmt.Sprintf("imported by pel import %s from %s: %d requests; its contract is inferred from the file, not what drove the run", f.Name, filepath.Base(file), s.n))
	for _, m := range res.Missing {
		ev.Run.Notes = append(ev.Run.Notes, "not in the file, not measured: "+m)
	}
	ev.Run.Notes = append(ev.Run.Notes, s.facts.notes...)
	if err := d.WriteEvidence(ev); err != nil {
		return nil, err
	}
	return res, nil
}

// missing names what the file does not carry.
func missing(f facts) []string {
	var m []string
	switch {
	case !f.sendTimes:
		m = append(m, "when each request was sent (requests are placed evenly over the run's duration: rates hold, schedule lag and in-flight counts are not measured)")
	case !f.schedule:
		m = append(m, "when each request was due (no schedule: TTFT and E2E count from the send, schedule lag is not measured)")
	}
	if !f.perChunk {
		m = append(m, "each streamed chunk's arrival (ITL is each request's mean gap between its first and last token)")
	}
	m = append(m, "server metrics (stages 2-5: the file holds client timings only)", "prompt and output text, and acceptance checks (a request that completed is accepted)")
	return m
}

// contract is the inferred contract of what s read.
func (s *sink) contract(f Format) (*contract.Contract, []byte, error) {
	fl := contract.Flags{
		Name:         "imported-" + f.Name,
		Description:  fmt.Sprintf("inferred by pel import from a %s file (%s): what ran, not what drove it", f.Tool, filepath.Base(s.file)),
		Model:        s.facts.model,
		Requests:     s.n,
		PromptTokens: s.prompt.spec(),
		OutputTokens: s.output.spec(),
	}
	// A cap on requests in flight beside a rate (or a burst) is the client's max_in_flight:
	// requests stay due on their schedule and wait for a slot, as the tool's semaphore made
	// them; alone, it is a closed loop of that many.
	inFlight := min(s.facts.concurrency, contract.MaxConcurrency)
	switch {
	case s.facts.burst && s.n > 0:
		fl.Rate, fl.Requests, fl.MaxInFlight = math.Inf(1), s.n, inFlight
	case s.facts.rate > 0:
		fl.Rate, fl.MaxInFlight = s.facts.rate, inFlight
		if s.facts.burstiness > 0 && s.facts.burstiness != 1 {
			fl.CV = 1 / math.Sqrt(s.facts.burstiness) // gamma with shape k has CV 1/√k
		}
	case inFlight > 0:
		fl.Concurrency = inFlight
	default:
		// The file says neither a rate nor a cap: a closed loop as wide as the run is the
		// most that could have been in flight.
		fl.Concurrency = min(s.n, contract.MaxConcurrency)
	}
	if s.facts.durationS > 0 {
		fl.Duration = time.Duration(math.Ceil(s.facts.durationS)) * time.Second
	}
	c, raw, err := contract.FromFlags(fl)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: inferring a contract: %w", s.file, err)
	}
	return c, raw, nil
}

// lengths summarizes observed token counts for the inferred contract.
type lengths struct {
	n             int
	sum, sumSq    float64
	lo, hi        int
	distinctFirst int
	distinct      bool
}

func (l *lengths) add(v int) {
	if v <= 0 {
		return
	}
	if l.n == 0 {
		l.lo, l.hi, l.distinctFirst = v, v, v
	}
	if v != l.distinctFirst {
		l.distinct = true
	}
	l.n++
	l.sum += float64(v)
	l.sumSq += float64(v) * float64(v)
	l.lo, l.hi = min(l.lo, v), max(l.hi, v)
}

// spec is the length spec of what was seen: the one value, or a normal with the observed
// mean and SD clamped to the observed range.
func (l *lengths) spec() string {
	if l.n == 0 {
		return "1"
	}
	if !l.distinct {
		return strconv.Itoa(l.lo)
	}
	mean := l.sum / float64(l.n)
	sd := math.Sqrt(max(0, l.sumSq/float64(l.n)-mean*mean))
	return fmt.Sprintf("normal:%s,%s,%d,%d", fmtF(mean), fmtF(sd), l.lo, l.hi)
}

func fmtF(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// Helpers the readers share.

// errorClass is the pel error class of a failed request from what the tool kept: an HTTP
// status when it has one, else words of its message.
func errorClass(code int, msg string) (status, class string) {
	switch {
	case code == 429 || code == 503:
		return record.StatusHTTPError, record.ErrOverloaded
	case code == 408:
		return record.StatusTimeout, record.ErrTimeout
	case code >= 400 && code < 500:
		return record.StatusHTTPError, record.ErrRefused
	case code >= 500 && code < 600:
		return record.StatusHTTPError, record.ErrServer
	}
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "KeyError: 'choices'"):
		// The measuring client read a stream chunk without choices: what an OpenAI-style
		// server sends in-band as its error object.
		return record.StatusStreamError, record.ErrStreamEvent
	case strings.Contains(l, "cancel"):
		return record.StatusCancelled, "" // stopped by the tool (or pel), not failed
	case strings.Contains(l, "timeout") || strings.Contains(l, "timed out"):
		return record.StatusTimeout, record.ErrTimeout
	case strings.Contains(l, "connect") || strings.Contains(l, "connection"):
		return record.StatusConnError, record.ErrConn
	}
	return record.StatusStreamError, record.ErrIncomplete
}

// firstLine bounds a tool's error message for a record: its first line, at most 300 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// chunks fills a record's stream timings from the first token's delay and the gaps between
// later chunks, all after SentAt; each chunk carries one token unless tokens says more
// (the last chunk then carries the rest).
func chunks(r *record.Record, ttft time.Duration, gaps []time.Duration) {
	n := min(len(gaps)+1, record.MaxChunkTimings)
	r.ChunkUS = make([]int64, n)
	r.ChunkTokens = make([]int, n)
	at := ttft
	r.ChunkUS[0] = at.Microseconds()
	r.ChunkTokens[0] = 1
	for i := 1; i < n; i++ {
		at += gaps[i-1]
		r.ChunkUS[i] = at.Microseconds()
		r.ChunkTokens[i] = 1
	}
	if len(gaps)+1 > n {
		r.Chunks = len(gaps) + 1
		r.AddFlag(record.FlagTruncatedRecord)
		for _, g := range gaps[n-1:] {
			at += g
		}
	}
	r.FirstTokenAt = r.SentAt.Add(ttft)
	r.LastTokenAt = r.SentAt.Add(at)
}

// ms is a duration from milliseconds, refusing what no timing can be.
func ms(v float64) (time.Duration, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
		return 0, false
	}
	return time.Duration(v * float64(time.Millisecond)), true
}

// secs is a duration from seconds, as ms.
func secs(v float64) (time.Duration, bool) { return ms(v * 1000) }

// checkTokens refuses a token count no request can have; at names the file and field.
func checkTokens(at string, v float64) (int, error) {
	if math.IsNaN(v) || v < 0 || v > record.MaxTokens || v != math.Trunc(v) {
		return 0, badf("%s: %v is not a token count (0..%d)", at, v, record.MaxTokens)
	}
	return int(v), nil
}
