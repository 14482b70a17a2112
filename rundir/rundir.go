// Package rundir owns a run directory: the names of its files, reading them, writing them
// and rebuilding stage 1 from them.
//
// An analysis opens the directory once (Open reads contract.yaml and evidence.json) and
// streams requests.jsonl (Each): a multi-step task's step records come before their task
// record in the file (the driver writes a task when its last call has ended), so the
// stream attaches them as record.ReadFile does, holding only the steps of tasks whose
// record has not come yet. Stage1 reads the records once into a stats.Stream; when the run
// is more than the stream's sample holds, it reads them once more to join the sample
// against every task (stats.BuildJoins), and the diagnosis once more to count rejected
// tasks exactly. Memory does not grow with the number of tasks.
package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/internal/safefile"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// ErrBadInput marks a directory whose files cannot be used (exit 2): the program's one
// bad-input kind.
var ErrBadInput = badinput.ErrBadInput

func bad(err error) error { return badinput.Wrap(err) }

// Dir is an opened run directory.
type Dir struct {
	Path     string
	Contract *contract.Contract
	// Evidence is evidence.json as found; nil when there is none yet.
	Evidence *evidence.Evidence
	// Torn is the cut last line of requests.jsonl, once a pass has read it (see record.TornLine).
	Torn *record.TornLine
	// Orphans counts step records whose task record never came (the run ended mid-task).
	Orphans int
	// FoldedTasks counts the distinct task names past MaxTaskNames, analysed as OtherTasks.
	FoldedTasks int
	// Workers decode requests.jsonl in Each (record.ReadParallel; 0: GOMAXPROCS). One
	// reads a record at a time, the smallest footprint.
	Workers int
	// created: Create made the directory (Discard removes it).
	created bool
}

// Open reads the directory's contract and evidence.json (when present).
func Open(dir string) (*Dir, error) {
	if _, err := safefile.Regular(filepath.Join(dir, ContractFile)); err != nil {
		return nil, bad(err) // a link or a FIFO planted at contract.yaml is not followed
	}
	c, err := contract.Load(filepath.Join(dir, ContractFile))
	if err != nil {
		return nil, bad(err)
	}
	d := &Dir{Path: dir, Contract: c}
	ev, err := ReadEvidence(filepath.Join(dir, EvidenceFile))
	switch {
	case err == nil:
		d.Evidence = ev
	case !errors.Is(err, os.ErrNotExist):
		return nil, bad(err)
	}
	if ok, err := d.Has(RequestsFile); err != nil || !ok {
		if err == nil {
			_, err = os.Stat(d.File(RequestsFile))
		}
		return nil, bad(err)
	}
	return d, nil
}

// File is the path of a file of the directory.
func (d *Dir) File(name string) string { return filepath.Join(d.Path, name) }

// Each streams the task records of requests.jsonl in file order, each multi-step task with
// its step records attached in order of their index. A torn last line is skipped (Torn says
// which); f's error stops the pass and is returned.
func (d *Dir) Each(f func(*record.Record) error) error {
	file, err := d.OpenFile(RequestsFile)
	if err != nil {
		return bad(err)
	}
	defer file.Close()
	steps := record.NewJoiner()
	var stop error
	names := d.taskNames()
	torn, err := record.ReadParallel(file, d.Workers, nil, func(r *record.Record) error {
		names.fold(r)
		if r = steps.Add(r); r == nil {
			return steps.Err() // named with the file below

		}
		stop = f(r)
		return stop
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		return bad(fmt.Errorf("%s: %w", d.File(RequestsFile), err))
	}
	d.Torn = torn
	d.Orphans = steps.Orphans()
	d.FoldedTasks = names.folded
	return nil
}

// EachRejected streams the task records that were not accepted, without their steps,
// decoding no other line (a pass over a long run whose tasks were mostly accepted costs a
// scan): the diagnosis counts acceptance impact and rejections with it.
func (d *Dir) EachRejected(f func(*record.Record) error) error {
	file, err := d.OpenFile(RequestsFile)
	if err != nil {
		return bad(err)
	}
	defer file.Close()
	accepted, step := []byte(`"accepted":true`), []byte(`"step":{`)
	var stop error
	_, err = record.ReadParallel(file, 0, func(line []byte) bool {
		return bytes.Contains(line, accepted) || bytes.Contains(line, step)
	}, func(r *record.Record) error {
		if r.Step != nil || r.Accepted {
			return nil
		}
		stop = f(r)
		return stop
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		return bad(fmt.Errorf("%s: %w", d.File(RequestsFile), err))
	}
	return nil
}

// TornNote is the run note naming a torn last line.
func TornNote(t *record.TornLine) string {
	return fmt.Sprintf("warning: %s %s", RequestsFile, t)
}

// Options tune Stage1.
type Options struct {
	// SampleBytes bounds the records held per phase (stats.DefaultSampleBytes when 0).
	SampleBytes int64
	// JoinSets returns the diagnosis's sets to join against every task when the run is
	// sampled (diagnose.JoinSets), given the run's phases and start.
	JoinSets func(phases []evidence.Phase, start time.Time) []stats.JoinSet
	// Views returns the parts of the run whose stage 1 the diagnosis reads on their own
	// (diagnose.ViewSets), given the run's phases and start; over a sample they are counted
	// in the joins' pass over every task, so their JoinSets must share their names.
	Views func(phases []evidence.Phase, start time.Time) []stats.ViewSet
	// Observe, when set, sees every task record of the first pass (the runner counts why
	// tasks failed with it).
	Observe func(*record.Record)
}

// Records is what the analysis holds of a run's tasks after stage 1.
type Records struct {
	// Tasks holds every task record when Complete, else the seeded sample (stats.Sample).
	Tasks    []record.Record
	Complete bool
	// Total is how many task records the run has; NonCancelled per phase those not cancelled.
	Total        int
	NonCancelled map[string]int
	// Joins are the join sets' joins (when not Complete).
	Joins map[string]*stats.Join
	// Views are stage 1 over each of Options.Views' sets, by name.
	Views map[string]stats.View
}

// Stage1 (re)computes the contract reference, the workload block and stage 1 of ev from
// the directory's records, streamed. ev.Run.StartedAt is the time origin (when it is zero,
// the earliest scheduled_at, found by a quick scan first).
func (d *Dir) Stage1(ev *evidence.Evidence, o Options) (*Records, error) {
	start := ev.Run.StartedAt
	if start.IsZero() {
		var err error
		if start, err = d.firstScheduled(); err != nil {
			return nil, err
		}
	}
	opt := StatsOptions(d.Contract, start)
	st := stats.NewStream(opt, o.SampleBytes)
	err := d.Each(func(r *record.Record) error {
		if r.Phase == record.PhaseCanary {
			// An interleaved canary's candidate tasks have evidence of their own
			// (runner.BaselineSide): the diagnosis sees them, stage 1 does not.
			st.AddOutside(r)
		} else {
			st.Add(r)
		}
		if o.Observe != nil {
			o.Observe(r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if d.Torn != nil {
		if n := TornNote(d.Torn); !slices.Contains(ev.Run.Notes, n) {
			ev.Run.Notes = append(ev.Run.Notes, n)
		}
	}
	d.noteFolded(ev)
	recs := &Records{Tasks: st.Records(), Complete: st.Complete(), Total: st.Sample().Tasks(), NonCancelled: st.Sample().NonCancelled()}
	var views []stats.ViewSet
	if o.Views != nil {
		views = o.Views(st.Phases(), start)
	}
	var head *stats.Join
	if recs.Complete {
		recs.Views = stats.ViewsOf(recs.Tasks, opt, views, nil)
	} else {
		sets := []stats.JoinSet{st.HeadSet()}
		if o.JoinSets != nil {
			sets = append(sets, o.JoinSets(st.Phases(), start)...)
		}
		// One more pass over every task: the joins, and the views' counts and percentiles.
		va := stats.NewViewAcc(st, views)
		joins, err := stats.BuildJoins(recs.Tasks, sets, func(f func(*record.Record) error) error {
			return d.Each(func(r *record.Record) error {
				va.Add(r)
				return f(r)
			})
		})
		if err != nil {
			return nil, err
		}
		recs.Joins, head = joins, joins[sets[0].Name]
		recs.Views = va.Result(recs.Tasks, joins)
	}
	ApplyStage1(ev, d.Contract, st.Result(head))
	return recs, nil
}

// noteFolded adds the run note on task names folded past the bound, once.
func (d *Dir) noteFolded(ev *evidence.Evidence) {
	if n := foldNote(d.FoldedTasks); n != "" && !slices.Contains(ev.Run.Notes, n) {
		ev.Run.Notes = append(ev.Run.Notes, n)
	}
}

// StatsOptions are stage 1's options for a contract and a run start.
func StatsOptions(c *contract.Contract, start time.Time) stats.Options {
	opt := stats.Options{Start: start, Objectives: c.ObjectivesFor, AllObjectives: c.Objectives()}
	if c.Cost.Known() {
		opt.CostPerHourUSD = c.Cost.AcceleratorHourUSD * float64(c.Cost.Accelerators)
	}
	return opt
}

// ApplyStage1 writes a stage-1 result and the contract reference into ev; the run's start
// and duration come from the records when ev has none.
func ApplyStage1(ev *evidence.Evidence, c *contract.Contract, res *stats.Result) {
	ev.Contract = evidence.ContractRef{Name: c.Name, SHA256: c.SHA256()}
	if v, err := strconv.Atoi(strings.TrimSpace(c.Version)); err == nil {
		ev.Contract.Version = v
	} else {
		note := fmt.Sprintf("contract version %q is not an integer: evidence.json records version 0 (the sha256 still identifies the contract)", c.Version)
		if !slices.Contains(ev.Run.Notes, note) {
			ev.Run.Notes = append(ev.Run.Notes, note)
		}
	}
	ev.Run.RetentionS = int64(c.Retention / time.Second)
	res.Apply(ev)
	if ev.Run.StartedAt.IsZero() {
		ev.Run.StartedAt = res.Start
	}
	if ev.Run.DurationS == 0 && !res.End.IsZero() {
		ev.Run.DurationS = res.End.Sub(res.Start).Seconds()
	}
}

// Rebuild recomputes a run directory's evidence from its files: run information and the
// other stages are kept from an existing evidence.json; stage 1, the workload block and the
// contract reference are always recomputed. Nothing is written.
func Rebuild(dir string) (*evidence.Evidence, error) {
	d, err := Open(dir)
	if err != nil {
		return nil, err
	}
	ev := d.Evidence
	if ev == nil {
		ev = evidence.New()
	}
	if _, err := d.Stage1(ev, Options{}); err != nil {
		return nil, err
	}
	return ev, nil
}

// firstScheduled is the earliest scheduled_at of a task record: a scan that decodes only
// that field (and a whole line only when the field is not where pel writes it).
func (d *Dir) firstScheduled() (time.Time, error) {
	file, err := d.OpenFile(RequestsFile)
	if err != nil {
		return time.Time{}, bad(err)
	}
	defer file.Close()
	var first time.Time
	key := []byte(`"scheduled_at":"`)
	stepKey := []byte(`"step":{`)
	_, err = record.ReadFiltered(file, func(line []byte) bool {
		if bytes.Contains(line, stepKey) {
			return true // a step record
		}
		if i := bytes.Index(line, key); i >= 0 {
			rest := line[i+len(key):]
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				if t, err := time.Parse(time.RFC3339Nano, string(rest[:j])); err == nil {
					if first.IsZero() || t.Before(first) {
						first = t
					}
					return true
				}
			}
		}
		return false // not in pel's usual form: decode it
	}, func(r *record.Record) error {
		if r.Step == nil && (first.IsZero() || r.ScheduledAt.Before(first)) {
			first = r.ScheduledAt
		}
		return nil
	})
	if err != nil {
		return time.Time{}, bad(fmt.Errorf("%s: %w", d.File(RequestsFile), err))
	}
	return first, nil
}
