package profiling

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TraceWait bounds how long pel waits, after the stop call answered, for the trace to
// appear and stop growing: SGLang answers /stop_profile before its workers have written
// theirs ("This will take some time").
const TraceWait = 2 * time.Minute

// maxDirEntries bounds the entries of a trace directory pel looks at.
const maxDirEntries = 10_000

// pollEvery is how often the trace is looked for.
const pollEvery = 250 * time.Millisecond

// mtimeSlack allows for file systems whose modification times are coarser than the clock.
const mtimeSlack = 2 * time.Second

// FindTrace finds the trace the profiler wrote during a window that opened at since: path
// itself when it names a file, else the newest trace file (.json, .json.gz) directly in the
// directory path modified after since, once its size holds still across two looks. It
// gives up after wait (or when ctx ends) and says why in note; file is "" then.
func FindTrace(ctx context.Context, path string, since time.Time, wait time.Duration) (file, note string) {
	deadline := time.Now().Add(wait)
	var last string
	lastSize := int64(-1)
	why := ""
	for {
		f, size, w := newest(path, since)
		why = w
		if f != "" && f == last && size == lastSize && size > 0 {
			return f, fmt.Sprintf("trace %s, written during the profiling window, read into stages 2 and 3", f)
		}
		last, lastSize = f, size
		if time.Now().After(deadline) {
			break
		}
		t := time.NewTimer(pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			if last != "" && lastSize > 0 {
				// An engine that answers its stop once the trace is written (vLLM, pel sim)
				// has it complete by now; a partial one fails its analysis, which says so.
				return last, fmt.Sprintf("trace %s, written during the profiling window, taken as it was when the run was interrupted", last)
			}
			return "", fmt.Sprintf("no trace read from %s: interrupted while waiting for it (add it later: pel analyze DIR --trace FILE)", path)
		case <-t.C:
		}
	}
	if why == "" {
		why = "it was still being written"
	}
	return "", fmt.Sprintf("no trace read from %s within %s: %s (add it later: pel analyze DIR --trace FILE)", path, wait, why)
}

// newest is one look: the candidate file and its size, or why there is none.
func newest(path string, since time.Time) (string, int64, string) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, fmt.Sprintf("%v", err)
	}
	after := since.Add(-mtimeSlack)
	if fi.Mode().IsRegular() {
		if fi.ModTime().Before(after) {
			return "", 0, "the file was not modified during the window"
		}
		return path, fi.Size(), ""
	}
	if !fi.IsDir() {
		return "", 0, "neither a file nor a directory"
	}
	d, err := os.Open(path)
	if err != nil {
		return "", 0, err.Error()
	}
	defer d.Close()
	ents, err := d.ReadDir(maxDirEntries)
	if err != nil && len(ents) == 0 {
		return "", 0, "the directory is empty"
	}
	best, bestSize, bestT := "", int64(0), time.Time{}
	for _, e := range ents {
		if e.Type()&fs.ModeType != 0 || !isTraceName(e.Name()) {
			continue // links and directories are not followed
		}
		info, err := e.Info()
		if err != nil || info.ModTime().Before(after) {
			continue
		}
		if best == "" || info.ModTime().After(bestT) {
			best, bestSize, bestT = filepath.Join(path, e.Name()), info.Size(), info.ModTime()
		}
	}
	if best == "" {
		return "", 0, "no .json or .json.gz file in it was written during the window"
	}
	return best, bestSize, ""
}

func isTraceName(n string) bool {
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz")
}
