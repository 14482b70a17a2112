package loadgen

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// TestEventHoldAccountsTheLargestEvent: the hold charges heldFactor times the largest
// event (bytes between blank lines, in any line ending), gives it back on release, and
// fails the read once the budget cannot hold it.
func TestEventHoldAccountsTheLargestEvent(t *testing.T) {
	big := strings.Repeat("a", 1<<20)
	for _, c := range []struct {
		name   string
		stream string
		peak   int64 // the largest event, in bytes read up to its blank line
	}{
		{"LF", "data: x\n\ndata: " + big + "\n\ndata: y\n\n", int64(len(big) + 7)},
		{"CRLF", "data: x\r\n\r\ndata: " + big + "\r\n\r\n", int64(len(big) + 8)},
		{"CR", "data: x\r\rdata: " + big + "\r\r", int64(len(big) + 7)},
		{"small events only", strings.Repeat("data: x\n\n", 100000), 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := heldBytes.Load()
			h := &eventHold{r: iotest.HalfReader(strings.NewReader(c.stream))}
			if _, err := io.Copy(io.Discard, h); err != nil {
				t.Fatal(err)
			}
			if h.peak != c.peak {
				t.Errorf("peak %d, want %d", h.peak, c.peak)
			}
			want := max(heldFactor*c.peak-heldFree, 0)
			if got := heldBytes.Load() - before; got != want {
				t.Errorf("took %d from the budget, want %d", got, want)
			}
			h.release()
			if heldBytes.Load() != before {
				t.Errorf("release left %d taken", heldBytes.Load()-before)
			}
		})
	}
	t.Run("budget spent", func(t *testing.T) {
		heldBytes.Add(MaxHeldBytes)
		defer heldBytes.Add(-MaxHeldBytes)
		h := &eventHold{r: strings.NewReader("data: " + big + "\n\n")}
		_, err := io.Copy(io.Discard, h)
		if !errors.Is(err, errHeld) || !strings.Contains(err.Error(), "MaxHeldBytes") {
			t.Errorf("err %v, want errHeld", err)
		}
		h.release()
	})
}

func TestReadHeld(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 3<<20)
	before := heldBytes.Load()
	b, release, err := readHeld(bytes.NewReader(body), 4<<20)
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("read %d bytes, %v", len(b), err)
	}
	if heldBytes.Load() <= before {
		t.Errorf("a 3 MiB body took nothing from the budget")
	}
	release()
	if heldBytes.Load() != before {
		t.Errorf("release left %d taken", heldBytes.Load()-before)
	}
	// Over the limit: one byte more than it, so the caller can tell.
	b, release, _ = readHeld(bytes.NewReader(body), 1<<20+1)
	release()
	if len(b) != 1<<20+1 {
		t.Errorf("read %d bytes of a body over the limit", len(b))
	}
	heldBytes.Add(MaxHeldBytes)
	defer heldBytes.Add(-MaxHeldBytes)
	_, release, err = readHeld(bytes.NewReader(body), 4<<20)
	release()
	if !errors.Is(err, errHeld) {
		t.Errorf("budget spent: err %v", err)
	}
}

func TestTokenGuard(t *testing.T) {
	long := strings.Repeat("A", 2048)
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"short values", `{"a":"` + long[:1000] + `","b":[1.5,2,true]}`, true},
		{"escaped quote inside", `{"a":"x\"` + long[:1000] + `"}`, true},
		{"long string", `{"a":"` + long + `"}`, false},
		{"long key", `{"` + long + `":1}`, false},
		{"long number", `{"a":` + strings.Repeat("1", 2048) + `}`, false},
		{"many short strings", `[` + strings.Repeat(`"`+long[:500]+`",`, 100) + `"x"]`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := io.Copy(io.Discard, &tokenGuard{r: iotest.OneByteReader(strings.NewReader(c.in)), max: 1024})
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, errTokenTooLong)) {
				t.Errorf("err %v, want ok %v", err, c.ok)
			}
		})
	}
}

// refHold is the rule eventHold.scan follows, byte by byte: run counts the bytes since the
// last blank line, line those of the current line, and peak the largest run seen after a
// byte (not after the LF of a CRLF, which only completes the line the CR ended).
type refHold struct {
	run, line, peak int64
	cr              bool
}

func (h *refHold) feed(b []byte) {
	for _, c := range b {
		h.run++
		switch c {
		case '\n':
			if h.cr {
				h.cr = false
				continue
			}
			h.end()
		case '\r':
			h.end()
			h.cr = true
		default:
			h.cr = false
			h.line++
		}
		h.peak = max(h.peak, h.run)
	}
}

func (h *refHold) end() {
	if h.line == 0 {
		h.run = 0
	}
	h.line = 0
}

// TestEventHoldScanFollowsTheRule: whatever the line endings and however the stream is cut
// into reads, the hold's counts are the byte-by-byte rule's.
func TestEventHoldScanFollowsTheRule(t *testing.T) {
	streams := []string{"", "\r\n", "\n", "\r", "\r\r\n\n", "data: x\r\n\r\n", "a\rb\nc\r\nd\n\n\r\r", "data: x\n\ndata: yy\r\rdata: z\r\n\r\n"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var sb strings.Builder
		for range rng.IntN(60) {
			switch rng.IntN(5) {
			case 0:
				sb.WriteByte('\n')
			case 1:
				sb.WriteByte('\r')
			case 2:
				sb.WriteString("\r\n")
			default:
				sb.WriteString(strings.Repeat("x", rng.IntN(40)))
			}
		}
		streams = append(streams, sb.String())
	}
	for i, s := range streams {
		var ref refHold
		ref.feed([]byte(s))
		for _, cut := range []struct {
			name string
			r    func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"half", iotest.HalfReader},
			{"one byte", iotest.OneByteReader},
		} {
			h := &eventHold{r: cut.r(strings.NewReader(s))}
			if _, err := io.Copy(io.Discard, h); err != nil {
				t.Fatal(err)
			}
			h.release()
			got := refHold{run: h.run, line: h.line, peak: h.peak, cr: h.cr}
			if got != ref {
				t.Errorf("stream %d %q read %s: %+v, want %+v", i, s, cut.name, got, ref)
			}
		}
	}
}
