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
	// NameCut is true when the name was longer than MaxStringBytes and Name holds its start.
	NameCut bool
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
		err := s.object("top-level object", func(key string) error {
			switch key {
			case "traceEvents":
				if c, _ := s.peek(); c != '[' {
					return s.errf("traceEvents is not an array")
				}
				found = true
				return s.events(meta, &ev, fn)
			case "deviceProperties":
				return s.deviceProps(meta)
			case "distributedInfo":
				return s.distInfo(meta)
			case "schemaVersion":
				if c, _ := s.peek(); c == '-' || (c >= '0' && c <= '9') {
					b, err := s.readNumber()
					meta.SchemaVersion, _ = parseInt(b)
					return err
				}
			}
			return s.skipValue()
		})
		if err != nil {
			return nil, err
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
	more, err := s.open(']', "traceEvents")
	for more && err == nil {
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
		more, err = s.next(']', "traceEvents")
	}
	return err
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
	more, err := s.open('}', "trace event")
	for more && err == nil {
		var key []byte
		if key, err = s.readString(); err != nil {
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
				ev.NameCut = s.truncated
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
		if s.r < s.w && s.buf[s.r] == ',' {
			s.r++ // the common separator, inline: this loop runs for every member of every event
			continue
		}
		more, err = s.next('}', "trace event")
	}
	return err
}

func (s *scanner) args(ev *Event) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("args")
	} else if c != '{' {
		return s.skipValue()
	}
	more, err := s.open('}', "args")
	for more && err == nil {
		var key []byte
		if key, err = s.readString(); err != nil {
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
		if s.r < s.w && s.buf[s.r] == ',' {
			s.r++ // the common separator, inline: this loop runs for every member of every event
			continue
		}
		more, err = s.next('}', "args")
	}
	return err
}

func (s *scanner) deviceProps(meta *Meta) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("deviceProperties")
	} else if c != '[' {
		return s.skipValue()
	}
	more, err := s.open(']', "deviceProperties")
	for more && err == nil {
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
			if err := s.object("deviceProperties", func(key string) error {
				var err error
				switch key {
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
			if len(meta.Devices) < MaxDevices {
				meta.Devices = append(meta.Devices, d)
			}
		}
		more, err = s.next(']', "deviceProperties")
	}
	return err
}

func (s *scanner) distInfo(meta *Meta) error {
	if c, ok := s.peek(); !ok {
		return s.eofErr("distributedInfo")
	} else if c != '{' {
		return s.skipValue()
	}
	meta.HasDistInfo = true
	return s.object("distributedInfo", func(key string) error {
		var err error
		switch key {
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

// object reads an object at s.r, calling fn with each key (positioned at the value). The
// key is a copy: the buffer the scanner read it from may be refilled before the value.
// For the metadata objects only; the per-event loops avoid the closure and the copy.
func (s *scanner) object(what string, fn func(key string) error) error {
	more, err := s.open('}', what)
	for more && err == nil {
		var b []byte
		if b, err = s.readString(); err != nil {
			return err
		}
		key := string(b)
		if err := s.expect(':', what); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		more, err = s.next('}', what)
	}
	return err
}
