package redact

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Bounds on a Kineto trace being redacted.
const (
	// MaxTraceBytes bounds the decompressed JSON read (a .json.gz may expand 50-fold).
	MaxTraceBytes = 32 << 30
	// MaxEventBytes bounds one trace event or one top-level value other than traceEvents:
	// the decoder holds one at a time.
	MaxEventBytes = 64 << 20
)

// frameRE is a Python frame as the profiler names python_function events and stack
// entries: FILE.py(LINE): FUNCTION.
var frameRE = regexp.MustCompile(`^(.*?\.py)\((\d+)\): (.*)$`)

// threadRE is Kineto's thread name: "thread TID (NAME)".
var threadRE = regexp.MustCompile(`^thread (\d+) \((.*)\)$`)

// Kineto rewrites a PyTorch profiler (Kineto) Chrome-trace JSON from in (plain or gzip,
// told by its first bytes) to out (gzip when zip), one trace event at a time: Python frames
// (python_function names, call stacks) lose their file paths, process and thread names
// become pseudonyms, the trace's name (a path) becomes one, host names and addresses in any
// string are replaced (textRE), and everything pel's trace analysis reads (phases,
// categories, kernel and operator names, times, pids, streams, correlation ids, device
// properties) is kept as it was.
func (r *Redactor) Kineto(in io.Reader, out io.Writer, zip bool) error {
	br := bufio.NewReaderSize(in, 256<<10)
	var src io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer gz.Close()
		src = gz
	}
	win := &window{r: io.LimitReader(src, MaxTraceBytes+1), max: MaxEventBytes}
	dec := json.NewDecoder(win)
	dec.UseNumber()
	var w io.Writer = out
	var gzw *gzip.Writer
	if zip {
		gzw = gzip.NewWriter(out)
		w = gzw
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := r.kinetoDoc(dec, win, bw); err != nil {
		if win.n > MaxTraceBytes {
			return fmt.Errorf("trace larger than %d GiB decompressed", MaxTraceBytes>>30)
		}
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if gzw != nil {
		return gzw.Close()
	}
	return nil
}

// window counts the bytes read since the last reset and fails past max: the decoder then
// never holds more than one bounded value.
type window struct {
	r        io.Reader
	n, since int64
	max      int64
}

var errEventTooLarge = errors.New("one trace value is larger than the bound")

func (w *window) Read(p []byte) (int, error) {
	if w.since > w.max {
		return 0, fmt.Errorf("%w (%d MiB)", errEventTooLarge, w.max>>20)
	}
	n, err := w.r.Read(p)
	w.n += int64(n)
	w.since += int64(n)
	return n, err
}

func (w *window) reset() { w.since = 0 }

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s: expected %q, found %v", what, want, tok)
	}
	return nil
}

func (r *Redactor) kinetoDoc(dec *json.Decoder, win *window, w *bufio.Writer) error {
	if err := expectDelim(dec, '{', "trace"); err != nil {
		return err
	}
	w.WriteByte('{')
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("trace: expected a key, found %v", tok)
		}
		if !first {
			w.WriteByte(',')
		}
		kb, _ := Marshal(key, "")
		w.Write(kb)
		w.WriteByte(':')
		if key == "traceEvents" {
			if err := r.kinetoEvents(dec, win, w); err != nil {
				return err
			}
			continue
		}
		var v any
		win.reset()
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("trace %q: %w", key, err)
		}
		v = r.kinetoTop(key, v)
		b, err := Marshal(v, "")
		if err != nil {
			return err
		}
		w.Write(b)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	return w.WriteByte('}')
}

func (r *Redactor) kinetoEvents(dec *json.Decoder, win *window, w *bufio.Writer) error {
	if err := expectDelim(dec, '[', "traceEvents"); err != nil {
		return err
	}
	w.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i%4096 == 0 {
			if err := r.Stopped(); err != nil {
				return err
			}
		}
		win.reset()
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			return fmt.Errorf("traceEvents[%d]: %w", i, err)
		}
		r.kinetoEvent(ev)
		b, err := Marshal(ev, "")
		if err != nil {
			return err
		}
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(b)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	return w.WriteByte(']')
}

var kinetoRules = (&Rules{Skip: []string{"ph", "cat"}}).compile()

func (r *Redactor) kinetoTop(key string, v any) any {
	if s, ok := v.(string); ok && strings.EqualFold(key, "traceName") {
		return r.Path(s)
	}
	return r.walk(v, strings.ToLower(key), kinetoRules)
}

func (r *Redactor) kinetoEvent(ev map[string]any) {
	name, _ := ev["name"].(string)
	args, _ := ev["args"].(map[string]any)
	if ev["ph"] == "M" && args != nil {
		if s, ok := args["name"].(string); ok {
			switch name {
			case "process_name":
				args["name"] = r.Process(s)
			case "thread_name":
				if m := threadRE.FindStringSubmatch(s); m != nil {
					args["name"] = "thread " + m[1] + " (" + r.Process(m[2]) + ")"
				} else if !strings.HasPrefix(s, "stream ") && !strings.HasPrefix(s, "Device ") {
					args["name"] = r.Process(s)
				}
			}
		}
	}
	for k, v := range ev {
		switch k {
		case "name":
			if s, ok := v.(string); ok {
				ev[k] = r.frames(s, ";")
			}
		case "args":
			if a, ok := v.(map[string]any); ok {
				for ak, av := range a {
					s, ok := av.(string)
					switch {
					case ok && (ak == "Call stack" || ak == "stack"):
						a[ak] = r.frames(s, ";")
					case ok && ev["ph"] == "M" && ak == "name":
						// done above
					default:
						a[ak] = r.walk(av, strings.ToLower(ak), kinetoRules)
					}
				}
			}
		case "ph", "cat", "ts", "dur", "pid", "tid", "id", "bp", "s":
		default:
			ev[k] = r.walk(v, strings.ToLower(k), kinetoRules)
		}
	}
}

// frames rewrites a name or a stack of Python frames joined by sep: each frame's file
// becomes a path pseudonym (its line and function are kept); anything else is free text.
func (r *Redactor) frames(s, sep string) string {
	if !strings.Contains(s, ".py(") {
		return r.Text(s)
	}
	parts := strings.Split(s, sep)
	for i, p := range parts {
		if m := frameRE.FindStringSubmatch(p); m != nil {
			parts[i] = r.Path(m[1]) + "(" + m[2] + "): " + r.Text(m[3])
		} else {
			parts[i] = r.Text(p)
		}
	}
	return strings.Join(parts, sep)
}

// IsGzip reports whether b starts as a gzip stream.
func IsGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

func gzipReader(in io.Reader) (*gzip.Reader, error) { return gzip.NewReader(in) }
