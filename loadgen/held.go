package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// Memory held for responses. Each response has its own caps (MaxStreamBytes, MaxJSONBody,
// DefaultMaxEvent, MaxKeptOutput, MaxEmbeddingsBody), but caps per response do not bound a
// process that holds many at once: 60 streams each sending one 8 MiB event, or 60 × 16 MiB
// JSON answers, pass every cap and need over 1 GB together. So every byte a response makes pel
// hold beyond a small allowance is taken from one budget shared by the whole process, the
// way OpenTelemetry Collector's memory_limiter refuses data past its limit instead of being
// killed; a response that finds the budget spent fails, naming it, and the run goes on
// with the others (their memory comes back as they end).
const (
	// MaxHeldBytes is that budget: half of the 512 MB peak the README promises, leaving
	// the rest to the run's own state, the records being written and the collectors.
	MaxHeldBytes = 256 << 20
	// MaxCarriedBytes bounds the conversation one multi-step task carries from call to call
	// (every answer and tool call appended, each sent again with the next call): 8 MiB is
	// two million tokens at OpenAI's rule of ~4 characters a token, beyond the context of
	// all but the largest served models. Past it the task ends, unfinished.
	MaxCarriedBytes = 8 << 20
	// heldFree is what one response holds without touching the budget: an ordinary
	// response (a few KiB of events, an answer of a few thousand tokens) never does.
	heldFree = 256 << 10
	// heldFactor is how many times pel holds the bytes of one event or JSON answer while
	// reading it: the line as read, the event's joined data, and the strings decoded from it.
	heldFactor = 3
	// maxJSONToken bounds one string or number of an embeddings response (held whole by
	// encoding/json while it is decoded): a base64 float32 vector of maxEmbeddingDims
	// dimensions is 350 KiB; a longer value (a 120 MiB "model", or vector) is refused.
	maxJSONToken = 1 << 20
)

// heldBytes is the bytes taken from the budget by every response in flight.
var heldBytes atomic.Int64

// errHeld is the failure of a response that found the budget spent.
var errHeld = fmt.Errorf("pel's budget for memory held by responses in flight (%d MiB, MaxHeldBytes) is spent", MaxHeldBytes>>20)

// takeHeld takes n bytes from the budget, reporting whether they were there.
func takeHeld(n int64) bool {
	if n <= 0 {
		return true
	}
	for {
		u := heldBytes.Load()
		if u+n > MaxHeldBytes {
			return false
		}
		if heldBytes.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// holding is what one response (or one task's conversation) holds: the first heldFree
// bytes are its allowance, the rest is taken from the budget.
type holding struct {
	used, taken int64
}

// grow accounts n more bytes held; false (and nothing accounted) when the part beyond the
// allowance is not in the budget.
func (h *holding) grow(n int64) bool {
	if n <= 0 {
		return true
	}
	over := max(h.used+n-heldFree, 0) - max(h.used-heldFree, 0)
	if over > 0 && !takeHeld(over) {
		return false
	}
	h.used += n
	h.taken += over
	return true
}

// release gives back everything taken.
func (h *holding) release() {
	heldBytes.Add(-h.taken)
	h.used, h.taken = 0, 0
}

// eventHold is an event stream's body as the SSE reader reads it: it finds the events'
// boundaries (a blank line, LF, CRLF or CR) and accounts the largest event so far,
// heldFactor times (the reader's buffers keep the largest event's size until the stream
// ends). When the budget is spent the read fails with errHeld.
type eventHold struct {
	r       io.Reader
	run     int64 // bytes since the last blank line
	line    int64 // bytes of the current line
	cr      bool  // the last byte was a CR (a following LF ends no second line)
	peak    int64
	holding holding
	err     error
}

// release gives back what the stream took from the budget.
func (h *eventHold) release() { h.holding.release() }

func (h *eventHold) Read(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	n, err := h.r.Read(p)
	h.scan(p[:n])
	if !h.holding.grow(heldFactor*h.peak - h.holding.used) {
		h.err = errHeld
		return n, h.err
	}
	return n, err
}

// scan follows b's line endings. The bytes between two endings are counted together (the
// search for the next CR or LF is bytes.IndexByte, vectorised), the endings one by one.
// nl is the next LF at or after pos, found once for all the CRs before it, so a stream of
// CR endings alone is scanned once too.
func (h *eventHold) scan(b []byte) {
	nl := bytes.IndexByte(b, '\n')
	for pos := 0; pos < len(b); {
		if nl >= 0 && nl < pos {
			if nl = bytes.IndexByte(b[pos:], '\n'); nl >= 0 {
				nl += pos
			}
		}
		end := len(b)
		if nl >= 0 {
			end = nl
		}
		if k := bytes.IndexByte(b[pos:end], '\r'); k >= 0 {
			end = pos + k
		}
		if end > pos { // text of the current line
			n := int64(end - pos)
			h.cr = false
			h.line += n
			h.run += n
			h.peak = max(h.peak, h.run)
			pos = end
			continue
		}
		h.run++
		if b[pos] == '\n' {
			pos++
			if h.cr { // the LF of a CRLF: the CR ended the line
				h.cr = false
				continue
			}
			h.endLine()
		} else {
			pos++
			h.endLine()
			h.cr = true
		}
		h.peak = max(h.peak, h.run)
	}
}

func (h *eventHold) endLine() {
	if h.line == 0 {
		h.run = 0 // a blank line: the event is dispatched
	}
	h.line = 0
}

// readHeld reads all of r, at most limit bytes (one more tells the caller it was over),
// holding heldFactor times what it read (the body and what is decoded from it) until
// release is called.
func readHeld(r io.Reader, limit int64) (b []byte, release func(), err error) {
	var h holding
	release = h.release
	buf := make([]byte, 0, 32<<10)
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			grown := int64(cap(buf)) * 2
			if grown > limit {
				grown = limit
			}
			if !h.grow(heldFactor * (grown - int64(cap(buf)))) {
				return buf, release, errHeld
			}
			nb := make([]byte, len(buf), grown)
			copy(nb, buf)
			buf = nb
		}
		n, rerr := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			return buf, release, nil
		}
		if rerr != nil {
			return buf, release, rerr
		}
	}
	return buf, release, nil
}

// tokenGuard passes a JSON text through and fails once one string or number in it is
// longer than max bytes: encoding/json holds a whole token (twice, while it scans and
// decodes), so a single 120 MiB value would be held whole. Structure outside values is
// not checked here (the decoder does).
type tokenGuard struct {
	r     io.Reader
	max   int
	run   int  // bytes of the current string or number
	in    bool // inside a string
	esc   bool // the last byte in the string was a backslash
	isTok bool // inside a bare token (number, true, false, null)
	err   error
}

var errTokenTooLong = errors.New("a JSON value is too long")

func (g *tokenGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for _, c := range p[:n] {
		switch {
		case g.in:
			switch {
			case g.esc:
				g.esc = false
			case c == '\\':
				g.esc = true
			case c == '"':
				g.in, g.run = false, 0
				continue
			}
			g.run++
		case c == '"':
			g.in, g.isTok, g.run = true, false, 0
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']':
			g.isTok, g.run = false, 0
		default:
			g.isTok = true
			g.run++
		}
		if g.run > g.max {
			g.err = fmt.Errorf("%w (over %d KiB in one value)", errTokenTooLong, g.max>>10)
			return 0, g.err
		}
	}
	return n, err
}
