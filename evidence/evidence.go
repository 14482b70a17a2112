package evidence

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/pel-ladder/pel/internal/safefile"
)

// New returns an Evidence with the fixed fields set and all five stages present as missing.
func New() *Evidence {
	e := &Evidence{
		Framework:      Framework,
		SchemaVersion:  SchemaVersion,
		AcceptanceUnit: AcceptanceUnit,
		StopConditions: map[string]StopCondition{},
		Findings:       []Finding{},
		Rollback:       Rollback{Triggers: []Trigger{}},
	}
	for s := StageRequestTrace; s <= StageDistributed; s++ {
		e.Stages = append(e.Stages, Stage{Stage: s, Name: StageNames[s], Status: StatusMissing, Signals: []Signal{}})
	}
	return e
}

// Stage returns the stage with number n, adding it if absent.
func (e *Evidence) Stage(n int) *Stage {
	for i := range e.Stages {
		if e.Stages[i].Stage == n {
			return &e.Stages[i]
		}
	}
	e.Stages = append(e.Stages, Stage{Stage: n, Name: StageNames[n], Status: StatusMissing, Signals: []Signal{}})
	sort.Slice(e.Stages, func(i, j int) bool { return e.Stages[i].Stage < e.Stages[j].Stage })
	return e.Stage(n)
}

// Signal finds the headline value of a signal: unlabelled, preferring phase warm, then
// no phase. ok is false when absent.
func (e *Evidence) Signal(name string) (Signal, bool) {
	var best Signal
	found := false
	for _, st := range e.Stages {
		for _, s := range st.Signals {
			if s.Name != name || len(s.Labels) > 0 {
				continue
			}
			if s.Phase == PhaseWarm || s.Phase == "" {
				if !found || s.Phase == PhaseWarm {
					best, found = s, true
				}
			}
		}
	}
	return best, found
}

// SignalsNamed returns every signal with that name (any labels, any phase).
func (e *Evidence) SignalsNamed(name string) []Signal {
	var out []Signal
	for _, st := range e.Stages {
		for _, s := range st.Signals {
			if s.Name == name {
				out = append(out, s)
			}
		}
	}
	return out
}

// PhaseWarm mirrors record.PhaseWarm without importing it (evidence sits below record users).
const PhaseWarm = "warm"

// PhaseCold mirrors record.PhaseCold.
const PhaseCold = "cold"

// Add appends a signal to its stage and marks that stage at least partial.
func (e *Evidence) Add(s Signal) {
	st := e.Stage(s.Stage)
	st.Signals = append(st.Signals, s)
	if st.Status == StatusMissing {
		st.Status = StatusPartial
	}
}

// Encode writes the evidence as indented JSON.
func (e *Evidence) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// Bounds on an evidence.json read back (outside input: a file anyone may hand to pel
// report). pel's own is well under 1 MiB: series hold at most a few hundred points and
// histograms 1-2-5 bounds (~30 buckets). Decoding costs several times the file's size, so
// the file is bounded before it is decoded.
const (
	MaxEvidenceBytes    = 32 << 20
	MaxHistogramBuckets = 10_000
)

// Decode reads evidence.json, refusing an unknown schema version, a file over
// MaxEvidenceBytes and a histogram over MaxHistogramBuckets.
func Decode(r io.Reader) (*Evidence, error) {
	var e Evidence
	lr := &io.LimitedReader{R: r, N: MaxEvidenceBytes + 1}
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&e); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("larger than %d MiB (MaxEvidenceBytes): not an evidence.json pel writes", MaxEvidenceBytes>>20)
		}
		return nil, err
	}
	if e.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("schema_version %d, this pel reads %d", e.SchemaVersion, SchemaVersion)
	}
	for _, k := range sortedHistKeys(e.Workload.Histograms) {
		h := e.Workload.Histograms[k]
		if n := max(len(h.Bounds), len(h.Counts)); n > MaxHistogramBuckets {
			return nil, fmt.Errorf("workload.histograms.%s: %d buckets, over %d (MaxHistogramBuckets): not an evidence.json pel writes", k, n, MaxHistogramBuckets)
		}
	}
	if e.StopConditions == nil {
		e.StopConditions = map[string]StopCondition{}
	}
	return &e, nil
}

// WriteFile writes evidence.json atomically (temp file + rename), mode 0600.
func (e *Evidence) WriteFile(path string) error { return WriteAtomic(path, e.Encode) }

// WriteAtomic writes a run directory file: write fills a new temporary file in path's
// directory (mode 0600, since a run describes a private deployment; created exclusively,
// never through a link), which then replaces path, so a reader never sees half a file and a
// failed write leaves the old one in place. A symbolic link at path is refused.
func WriteAtomic(path string, write func(io.Writer) error) error {
	return safefile.Write(path, true, write)
}

// ReadFile reads an evidence.json file.
func ReadFile(path string) (*Evidence, error) {
	f, err := safefile.OpenNamed(path) // a FIFO would block the open
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

func sortedHistKeys(m map[string]Histogram) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
