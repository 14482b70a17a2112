package kineto

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// Cat is an event category (the "cat" field).
type Cat uint8

// Categories the analyses distinguish; everything else is CatOther.
const (
	CatOther             Cat = iota
	CatKernel                // "kernel"
	CatMemcpy                // "gpu_memcpy"
	CatMemset                // "gpu_memset"
	CatRuntime               // "cuda_runtime" (also HIP runtime calls in ROCm traces)
	CatDriver                // "cuda_driver" (cuLaunchKernel: Triton)
	CatCPUOp                 // "cpu_op"
	CatUserAnnotation        // "user_annotation"
	CatGPUUserAnnotation     // "gpu_user_annotation"
	CatCudaSync              // "cuda_sync"
	CatFlow                  // "ac2g" (and legacy "async_cpu_to_gpu")
	CatFwdBwd                // "fwdbwd"
	CatPythonFunction        // "python_function"
	CatTrace                 // "Trace" (the profiler's own span)
	CatProfilerRange         // "cuda_profiler_range" (CUPTI counters)
	CatNone                  // no "cat" key
)

var catNames = map[string]Cat{
	"kernel": CatKernel, "gpu_memcpy": CatMemcpy, "gpu_memset": CatMemset,
	"cuda_runtime": CatRuntime, "cuda_driver": CatDriver, "cpu_op": CatCPUOp,
	"user_annotation": CatUserAnnotation, "gpu_user_annotation": CatGPUUserAnnotation,
	"cuda_sync": CatCudaSync, "ac2g": CatFlow, "async_cpu_to_gpu": CatFlow, "fwdbwd": CatFwdBwd,
	"python_function": CatPythonFunction, "Trace": CatTrace, "cuda_profiler_range": CatProfilerRange,
	// older Kineto spellings
	"Kernel": CatKernel, "Memcpy": CatMemcpy, "Memset": CatMemset, "Runtime": CatRuntime,
	"Operator": CatCPUOp, "cuda_runtime_api": CatRuntime,
}

func catOf(b []byte) Cat {
	if c, ok := catNames[string(b)]; ok {
		return c
	}
	return CatOther
}

// Event is one trace event. Name is only valid during the callback that receives it.
type Event struct {
	Ph     byte // 'X', 'i', 's', 'f', 'M', 'C'...
	Cat    Cat
	Name   []byte
	Pid    int64 // -1 when absent or not a number ("Spans")
	Tid    int64
	TS     Time
	Dur    Time
	HasTS  bool
	HasDur bool
	ID     int64 // flow id (ph s/f); -1 when absent
	// From args; -1 when absent.
	Stream      int64
	Correlation int64
	Device      int64
	Bytes       int64
	ExternalID  int64
}

func (e *Event) reset() {
	*e = Event{Name: e.Name[:0], Pid: -1, Tid: -1, ID: -1, Stream: -1, Correlation: -1, Device: -1, Bytes: -1, ExternalID: -1}
}

// DeviceProperties is one entry of the trace's "deviceProperties".
type DeviceProperties struct {
	ID             int64
	Name           string
	TotalGlobalMem int64
	ComputeMajor   int64
	ComputeMinor   int64
	NumSMs         int64
}

// Meta is the trace's top-level metadata.
type Meta struct {
	SchemaVersion int64
	Devices       []DeviceProperties
	HasDistInfo   bool
	Rank          int64 // distributedInfo.rank; 0 when absent
	WorldSize     int64
	Backend       string
	Events        int64 // trace events seen
	Bytes         int64 // uncompressed bytes read
}

// ErrNoEvents means the document is JSON but not a Chrome trace (no traceEvents array).
var ErrNoEvents = errors.New("not a Chrome trace: no traceEvents array")

// Open wraps r so that gzip-compressed input is decompressed transparently (by magic bytes).
func Open(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && len(magic) < 2 {
		if err == io.EOF {
			return br, nil
		}
		return nil, err
	}
	if magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Scan reads a Chrome trace (JSON object with traceEvents, or a bare event array) from r,
// calling fn for every event in order. r must already be decompressed (see Open). fn may
// stop the scan by returning an error, which Scan returns.
func Scan(r io.Reader, fn func(*Event) error) (*Meta, error) {
	cr := &countingReader{r: r}
	s := newScanner(cr)
	meta := &Meta{}
	c, ok := s.peek()
	if !ok {
		if s.rerr != nil {
			return nil, s.rerr
		}
		return nil, errors.New("empty file")
	}
	var ev Event
	switch c {
	case '[':
		if err := s.events(meta, &ev, fn); err != nil {
			return nil, err
		}
	case '{':
		found := false
		s.r++
		if c, ok := s.peek(); ok && c == '}' {
			s.r++
		} else {
			for {
				key, err := s.readString()
				if err != nil {
					return nil, err
				}
				var which int
				switch string(key) {
				case "traceEvents":
					which = 1
				case "deviceProperties":
					which = 2
				case "distributedInfo":
					which = 3
				case "schemaVersion":
					which = 4
				}
				if err := s.expect(':', "object"); err != nil {
					return nil, err
				}
				switch which {
				case 1:
					if c, _ := s.peek(); c != '[' {
						return nil, s.errf("traceEvents is not an array")
					}
					found = true
					err = s.events(meta, &ev, fn)
				case 2:
					err = s.deviceProps(meta)
				case 3:
					err = s.distInfo(meta)
				case 4:
					var b []byte
					if c, _ := s.peek(); c == '-' || (c >= '0' && c <= '9') {
						b, err = s.readNumber()
						meta.SchemaVersion, _ = parseInt(b)
					} else {
						err = s.skipValue()
					}
				default:
					err = s.skipValue()
				}
				if err != nil {
					return nil, err
				}
				c, ok := s.peek()
				if !ok {
					return nil, s.eofErr("top-level object")
				}
				s.r++
				if c == '}' {
					break
				}
				if c != ',' {
					s.r--
					return nil, s.errf("expected ',' or '}' in top-level object, found %q", c)
				}
			}
		}
		if !found {
			return nil, ErrNoEvents
		}
	default:
		return nil, s.errf("not JSON: a trace starts with '{' or '[', found %q", c)
	}
	if c, ok := s.peek(); ok {
		return nil, s.errf("unexpected %q after the end of the trace", c)
	}
	if s.rerr != nil {
		return nil, s.rerr
	}
	meta.Bytes = cr.n
	return meta, nil
}

// events reads the traceEvents array.
func (s *scanner) events(meta *Meta, ev *Event, fn func(*Event) error) error {
	s.r++ // '['
	c, ok := s.peek()
	if !ok {
		return s.eofErr("traceEvents")
	}
	if c == ']' {
		s.r++
		return nil
	}
	for {
		c, ok := s.peek()
		if !ok {
			return s.eofErr("traceEvents")
		}
		if c != '{' {
			return s.errf("trace event %d is not an object", meta.Events)
		}
		if err := s.event(ev); err != nil {
			return err
		}
		meta.Events++
		if err := fn(ev); err != nil {
			return err
		}
		c, ok = s.peek()
		if !ok {
			return s.eofErr("traceEvents")
		}
		s.r++
		if c == ']' {
			return nil
		}
		if c != ',' {
			s.r--
			return s.errf("expected ',' or ']' after trace event %d, found %q", meta.Events-1, c)
		}
	}
}

// intValue reads a number or a string holding a number; other values give -1.
func (s *scanner) intValue() (int64, error) {
	c, ok := s.peek()
	if !ok {
		return -1, s.eofErr("value")
	}
	if c == '-' || (c >= '0' && c <= '9') {
		b, err := s.readNumber()
		if err != nil {
			return -1, err
		}
		if v, ok := parseInt(b); ok {
			return v, nil
		}
		t, ok := parseTime(b)
		if !ok {
			return -1, s.errf("invalid number %q", b)
		}
		return int64(t.US), nil
	}
	return -1, s.skipValue()
}

// event reads one event object into ev.
func (s *scanner) event(ev *Event) error {
	ev.reset()
	ev.Cat = CatNone
	s.r++ // '{'
	c, ok := s.peek()
	if !ok {
		return s.eofErr("trace event")
	}
	if c == '}' {
		s.r++
		return nil
	}
	for {
		key, err := s.readString()
		if err != nil {
			return err
		}
		var k byte
		switch string(key) {
		case "ph":
			k = 'p'
		case "cat":
			k = 'c'
		case "name":
			k = 'n'
		case "ts":
			k = 't'
		case "dur":
			k = 'd'
		case "pid":
			k = 'P'
		case "tid":
			k = 'T'
		case "id":
			k = 'i'
		case "args":
			k = 'a'
		}
		if err := s.expect(':', "trace event"); err != nil {
			return err
		}
		switch k {
		case 'p', 'c', 'n':
			if c, _ := s.peek(); c != '"' {
				err = s.skipValue()
				break
			}
			var b []byte
			if b, err = s.readString(); err != nil {
				return err
			}
			switch k {
			case 'p':
				if len(b) > 0 {
					ev.Ph = b[0]
				}
			case 'c':
				ev.Cat = catOf(b)
			case 'n':
				ev.Name = append(ev.Name[:0], b...)
			}
		case 't', 'd':
			c, _ := s.peek()
			if c != '-' && (c < '0' || c > '9') {
				err = s.skipValue()
				break
			}
			var b []byte
			if b, err = s.readNumber(); err != nil {
				return err
			}
			t, ok := parseTime(b)
			if !ok {
				return s.errf("invalid number %q", b)
			}
			if k == 't' {
				ev.TS, ev.HasTS = t, true
			} else {
				ev.Dur, ev.HasDur = t, true
			}
		case 'P':
			ev.Pid, err = s.intValue()
		case 'T':
			ev.Tid, err = s.intValue()
		case 'i':
			ev.ID, err = s.intValue()
		case 'a':
			if ev.Cat == CatPythonFunction || ev.Cat == CatCPUOp {
				// the analyses use no args of these: skip without decoding
				err = s.skipValue()
			} else {
				err = s.args(ev)
			}
		default:
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
		c, ok := s.peek()
		if !ok {
			return s.eofErr("trace event")
		}
		s.r++
		if c == '}' {
			return nil
		}
		if c != ',' {
			s.r--
			return s.errf("expected ',' or '}' in trace event, found %q", c)
		}
	}
}

func (s *scanner) args(ev *Event) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("args")
	} else if c != '{' {
		return s.skipValue()
	}
	s.r++
	if c, ok := s.peek(); ok && c == '}' {
		s.r++
		return nil
	}
	for {
		key, err := s.readString()
		if err != nil {
			return err
		}
		var dst *int64
		switch string(key) {
		case "stream":
			dst = &ev.Stream
		case "correlation":
			dst = &ev.Correlation
		case "device":
			dst = &ev.Device
		case "bytes":
			dst = &ev.Bytes
		case "External id":
			dst = &ev.ExternalID
		}
		if err := s.expect(':', "args"); err != nil {
			return err
		}
		if dst != nil {
			c, _ := s.peek()
			if c == '-' || (c >= '0' && c <= '9') {
				*dst, err = s.intValue()
			} else {
				// e.g. HIP runtime calls write "stream": "0x0": not a GPU stream id
				err = s.skipValue()
			}
		} else {
			err = s.skipValue()
		}
		if err != nil {
			return err
		}
		c, ok := s.peek()
		if !ok {
			return s.eofErr("args")
		}
		s.r++
		if c == '}' {
			return nil
		}
		if c != ',' {
			s.r--
			return s.errf("expected ',' or '}' in args, found %q", c)
		}
	}
}

func (s *scanner) deviceProps(meta *Meta) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("deviceProperties")
	} else if c != '[' {
		return s.skipValue()
	}
	s.r++
	if c, ok := s.peek(); ok && c == ']' {
		s.r++
		return nil
	}
	for {
		c, ok := s.peek()
		if !ok {
			return s.eofErr("deviceProperties")
		}
		if c != '{' {
			if err := s.skipValue(); err != nil {
				return err
			}
		} else {
			var d DeviceProperties
			if err := s.object("deviceProperties", func(key []byte) error {
				var err error
				switch string(key) {
				case "id":
					d.ID, err = s.intValue()
				case "name":
					d.Name, err = s.stringValue()
				case "totalGlobalMem":
					d.TotalGlobalMem, err = s.intValue()
				case "computeMajor":
					d.ComputeMajor, err = s.intValue()
				case "computeMinor":
					d.ComputeMinor, err = s.intValue()
				case "numSms":
					d.NumSMs, err = s.intValue()
				default:
					err = s.skipValue()
				}
				return err
			}); err != nil {
				return err
			}
			meta.Devices = append(meta.Devices, d)
		}
		c, ok = s.peek()
		if !ok {
			return s.eofErr("deviceProperties")
		}
		s.r++
		if c == ']' {
			return nil
		}
		if c != ',' {
			s.r--
			return s.errf("expected ',' or ']' in deviceProperties, found %q", c)
		}
	}
}

func (s *scanner) distInfo(meta *Meta) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("distributedInfo")
	} else if c != '{' {
		return s.skipValue()
	}
	meta.HasDistInfo = true
	return s.object("distributedInfo", func(key []byte) error {
		var err error
		switch string(key) {
		case "rank":
			meta.Rank, err = s.intValue()
		case "world_size":
			meta.WorldSize, err = s.intValue()
		case "backend":
			meta.Backend, err = s.stringValue()
		default:
			err = s.skipValue()
		}
		return err
	})
}

// stringValue reads a string value (copied); a non-string value is skipped and gives "".
func (s *scanner) stringValue() (string, error) {
	if c, _ := s.peek(); c != '"' {
		return "", s.skipValue()
	}
	b, err := s.readString()
	return string(b), err
}

// object reads an object at s.r, calling fn with each key (positioned at the value).
func (s *scanner) object(what string, fn func(key []byte) error) error {
	s.r++ // '{'
	if c, ok := s.peek(); !ok {
		return s.eofErr(what)
	} else if c == '}' {
		s.r++
		return nil
	}
	for {
		key, err := s.readString()
		if err != nil {
			return err
		}
		if err := s.expect(':', what); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		c, ok := s.peek()
		if !ok {
			return s.eofErr(what)
		}
		s.r++
		if c == '}' {
			return nil
		}
		if c != ',' {
			s.r--
			return s.errf("expected ',' or '}' in %s, found %q", what, c)
		}
	}
}
