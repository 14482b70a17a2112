package rundir

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/safefile"
)

// Bounds on a prune's walk: a ROOT deeper or wider than this is not a tree of runs.
const (
	MaxPruneDepth   = 8
	MaxPruneEntries = 100_000
)

// IsRun reports whether dir (reached without following a link) is a pel run directory: a
// directory holding contract.yaml and requests.jsonl as regular files, as Open requires.
func IsRun(dir string) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	for _, n := range []string{ContractFile, RequestsFile} {
		if ok, err := safefile.Regular(filepath.Join(dir, n)); err != nil || !ok {
			return false
		}
	}
	return true
}

// PruneOptions tune Prune.
type PruneOptions struct {
	// OlderThan removes runs that started longer ago than it; 0: each run's own retention
	// (evidence.json's run.retention_s, else its contract's retention:), and a run with
	// none is kept.
	OlderThan time.Duration
	// Now is the time ages are measured at.
	Now time.Time
	// Remove deletes the runs found; without it Prune only lists them (a dry run).
	Remove bool
	// Context stops the prune between two run directories once done (Ctrl-C).
	Context context.Context
}

// PruneEntry is one run directory Prune looked at.
type PruneEntry struct {
	// Path is the directory, ROOT joined with its path below ROOT.
	Path      string
	StartedAt time.Time
	Age       time.Duration
	// Limit is the age past which it goes (--older-than or its retention); 0: none.
	Limit time.Duration
	// Expired: Age > Limit > 0. Removed: it was deleted.
	Expired, Removed bool
	// Note says why a run is kept that cannot be judged (no recorded time, no retention).
	Note string
}

// Prune walks root for run directories (IsRun; a run directory is not descended into, a
// symbolic link is never followed) and removes, with Remove, those whose recorded start
// (evidence.json's run.started_at, else the first record's scheduled_at) is older than
// their limit. Every removal goes through an os.Root opened at root, so nothing outside
// root is ever removed whatever is swapped in during the walk.
func Prune(root string, o PruneOptions) ([]PruneEntry, error) {
	st, err := os.Lstat(root)
	if err != nil {
		return nil, bad(err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, bad(fmt.Errorf("%s is a symbolic link: give the directory itself", root))
	}
	if !st.IsDir() {
		return nil, bad(fmt.Errorf("%s is not a directory", root))
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, bad(err)
	}
	defer r.Close()
	var runs []string
	seen := 0
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if IsRun(filepath.Join(root, rel)) {
			runs = append(runs, rel)
			return nil
		}
		if depth >= MaxPruneDepth {
			return nil
		}
		f, err := r.Open(rel)
		if err != nil {
			return nil // unreadable: nothing of it is judged
		}
		ents, err := f.ReadDir(MaxPruneEntries - seen + 1)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil
		}
		if seen += len(ents); seen > MaxPruneEntries {
			return bad(fmt.Errorf("%s: more than %d entries: not a tree of pel runs", root, MaxPruneEntries))
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
				continue
			}
			if err := walk(path.Join(rel, e.Name()), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(".", 0); err != nil {
		return nil, err
	}
	var out []PruneEntry
	for _, rel := range runs {
		if o.Context != nil && o.Context.Err() != nil {
			return out, o.Context.Err()
		}
		e := PruneEntry{Path: filepath.Join(root, rel)}
		e.StartedAt = recordedStart(e.Path)
		e.Limit = o.OlderThan
		if e.Limit == 0 {
			e.Limit = recordedRetention(e.Path)
		}
		switch {
		case e.StartedAt.IsZero():
			e.Note = "no recorded start (no evidence.json, no record): kept"
		case e.Limit == 0:
			e.Note = "no retention in its contract and no --older-than: kept"
		default:
			e.Age = o.Now.Sub(e.StartedAt)
			e.Expired = e.Age > e.Limit
		}
		if e.Expired && o.Remove {
			if rel == "." {
				return out, bad(fmt.Errorf("%s is itself a run directory: prune removes runs below ROOT, give the directory above it", root))
			}
			// Checked again right before: still a run directory, reached without a link.
			if !IsRun(e.Path) {
				e.Note = "changed during the prune: kept"
			} else if err := r.RemoveAll(rel); err != nil {
				return out, fmt.Errorf("removing %s: %w", e.Path, err)
			} else {
				e.Removed = true
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// recordedStart is the run's start as the run recorded it: evidence.json's run.started_at,
// else the scheduled time of requests.jsonl's first record (zero when neither says).
func recordedStart(dir string) time.Time {
	var ev struct {
		Run struct {
			StartedAt time.Time `json:"started_at"`
		} `json:"run"`
	}
	if f, err := safefile.Open(filepath.Join(dir, EvidenceFile)); err == nil {
		err = json.NewDecoder(io.LimitReader(f, 256<<20)).Decode(&ev)
		f.Close()
		if err == nil && !ev.Run.StartedAt.IsZero() {
			return ev.Run.StartedAt
		}
	}
	f, err := safefile.Open(filepath.Join(dir, RequestsFile))
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	if !sc.Scan() {
		return time.Time{}
	}
	var rec struct {
		ScheduledAt time.Time `json:"scheduled_at"`
	}
	if json.Unmarshal(sc.Bytes(), &rec) != nil {
		return time.Time{}
	}
	return rec.ScheduledAt
}

// recordedRetention is the run's retention: evidence.json's run.retention_s, else its
// contract's retention: (0 when neither sets one).
func recordedRetention(dir string) time.Duration {
	var ev struct {
		Run struct {
			RetentionS int64 `json:"retention_s"`
		} `json:"run"`
	}
	if f, err := safefile.Open(filepath.Join(dir, EvidenceFile)); err == nil {
		err = json.NewDecoder(io.LimitReader(f, 256<<20)).Decode(&ev)
		f.Close()
		if err == nil && ev.Run.RetentionS > 0 {
			return time.Duration(ev.Run.RetentionS) * time.Second
		}
	}
	c, err := contract.Load(filepath.Join(dir, ContractFile))
	if err != nil {
		return 0
	}
	return c.Retention
}
