package timeline

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits bound what one profile can make pel hold, so that memory grows with the operations
// kept, never with the bytes read, and a hostile or corrupt file gets a counted drop or a
// clear error instead of exhausting memory. Every bound on trace input is here or in
// trace/kineto/limits.go; DefaultLimits gives the values and their reasons.
type Limits struct {
	// MaxRecords bounds GPU operations + host calls + spans kept per profile. Analysing
	// costs about 270-300 bytes per record at peak (the records, the joins by correlation
	// id, the per-stream and per-type interval copies; measured: 1 M kernels 264 MiB, 2 M
	// 594 MiB), so 1 M records keep pel trace under the 512 MB every command stays in. More
	// is an error (ErrTooLarge), not a silent cut: a truncated timeline would bias every figure.
	MaxRecords int
	// MaxNameBytes is the longest kernel/API/step name kept; longer names are cut there and
	// counted. The longest name in the fixtures is 5,123 bytes (a CUTLASS template); 16 KiB
	// keeps every real name whole and stops a 1 GiB "name" from being held.
	MaxNameBytes int
	// MaxNameTableBytes bounds all distinct names together: a trace that gives every
	// operation a new long name would otherwise grow the name table with the bytes read.
	// Names beyond it share one placeholder (counted). 64 MiB holds ~300,000 typical names.
	MaxNameTableBytes int
}

// DefaultLimits are the limits pel trace uses.
var DefaultLimits = Limits{MaxRecords: 1_000_000, MaxNameBytes: 16 << 10, MaxNameTableBytes: 64 << 20}

// NameOverflow is the placeholder for names beyond MaxNameTableBytes.
const NameOverflow = "(name not kept: name table over its limit)"

// ErrTooLarge reports a profile with more records than Limits.MaxRecords.
type ErrTooLarge struct{ Max int }

func (e *ErrTooLarge) Error() string {
	return fmt.Sprintf("more than %d GPU operations, host calls and steps: pel's limit (what it analyses "+
		"within 512 MB of memory); profile a shorter window, e.g. fewer ProfilerSteps", e.Max)
}

// MalformedError is a profile whose times would make a duration, share or idle time
// negative, or overflow pel's nanosecond clock. pel reports it instead of printing figures
// computed from it.
type MalformedError struct {
	NegativeDur int    // events that end before they start (negative dur)
	NegativeTS  int    // events with a negative timestamp
	OutOfRange  int    // events whose start or end lies beyond ±9e15 µs (about year 2255)
	First       string // where the first one is, e.g. `trace event 17 ("sm80_gemm")`
}

func (e *MalformedError) Error() string {
	var parts []string
	if e.NegativeDur > 0 {
		parts = append(parts, fmt.Sprintf("%d with a negative duration", e.NegativeDur))
	}
	if e.NegativeTS > 0 {
		parts = append(parts, fmt.Sprintf("%d with a negative timestamp", e.NegativeTS))
	}
	if e.OutOfRange > 0 {
		parts = append(parts, fmt.Sprintf("%d with a time beyond ±9e15 µs", e.OutOfRange))
	}
	return fmt.Sprintf("malformed trace: events %s (first: %s); durations, shares and idle time computed from them "+
		"would be negative or meaningless", strings.Join(parts, ", "), e.First)
}

// Any reports whether an offending event was counted.
func (e *MalformedError) Any() bool { return e.NegativeDur+e.NegativeTS+e.OutOfRange > 0 }

// MaxTimeUS bounds |time| in µs so that nanoseconds fit an int64 with room for sums (9e15 µs
// is 9e18 ns; Kineto's epoch-µs timestamps are ~1.7e15).
const MaxTimeUS = 9e15

// Check counts an event with the given start and duration (µs, as the trace wrote them);
// where names it for the first offence.
func (e *MalformedError) Check(tsUS, durUS float64, where func() string) bool {
	bad := false
	switch {
	case tsUS > MaxTimeUS || tsUS < -MaxTimeUS || durUS > MaxTimeUS || tsUS+durUS > MaxTimeUS:
		e.OutOfRange++
		bad = true
	case durUS < 0:
		e.NegativeDur++
		bad = true
	case tsUS < 0:
		e.NegativeTS++
		bad = true
	}
	if bad && e.First == "" {
		e.First = where()
	}
	return bad
}

// Budget counts records against Limits.MaxRecords.
type Budget struct {
	Max, Used int
}

// Take accounts for one more record and fails once the limit is passed.
func (b *Budget) Take() error {
	b.Used++
	if b.Max > 0 && b.Used > b.Max {
		return &ErrTooLarge{Max: b.Max}
	}
	return nil
}

// truncateName cuts b to at most n bytes at a rune boundary.
func truncateName(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// LimitNotes says what the name limits dropped, for Timeline.Notes.
func (n *Names) LimitNotes() []string {
	var out []string
	if n.truncated > 0 {
		out = append(out, fmt.Sprintf("%d names longer than %d bytes were cut to that length", n.truncated, n.limits.MaxNameBytes))
	}
	if n.overflow > 0 {
		out = append(out, fmt.Sprintf("%d names not kept: distinct names exceed %d bytes; they read %q", n.overflow,
			n.limits.MaxNameTableBytes, NameOverflow))
	}
	return out
}
