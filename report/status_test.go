package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/redact"
	"github.com/pel-ladder/pel/rundir"
)

// TestPrune: one line per entry saying what happened to it, the dry-run hint only for a dry
// run that would remove something, and a name found on disk never reaching the terminal
// as control characters.
func TestPrune(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	old := rundir.PruneEntry{Path: "root/a", StartedAt: start, Age: 40 * 24 * time.Hour, Limit: 30 * 24 * time.Hour, Expired: true}
	gone := old
	gone.Path, gone.Removed = "root/b", true
	kept := rundir.PruneEntry{Path: "root/c", Age: 90 * time.Minute, Limit: 30 * 24 * time.Hour}
	noted := rundir.PruneEntry{Path: "root/\x1b[2Jd", Note: "no retention set"}
	for _, tc := range []struct {
		name    string
		entries []rundir.PruneEntry
		dryRun  bool
		want    []string
	}{
		{"dry run", []rundir.PruneEntry{old, kept}, true, []string{
			"would remove root/a  (started 2026-01-02, 40.0d old, limit 30.0d)",
			"keep         root/c  (1h30m0s old, limit 30.0d)",
			"dry run: 1 run directories would be removed; run again with --yes to remove them"}},
		{"removed", []rundir.PruneEntry{gone}, false, []string{"removed      root/b  (started 2026-01-02, 40.0d old, limit 30.0d)"}},
		{"nothing to remove", []rundir.PruneEntry{kept}, true, []string{"keep         root/c  (1h30m0s old, limit 30.0d)"}},
		{"hostile name", []rundir.PruneEntry{noted}, true, []string{"keep         root/ [2Jd  (no retention set)"}},
	} {
		var b bytes.Buffer
		if err := Prune(&b, tc.entries, tc.dryRun); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), strings.Join(tc.want, "\n")+"\n"; got != want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, got, want)
		}
	}
}

// TestRedactions: a removed kind gives its occurrences, a replaced one its distinct values
// too, each kind padded to the width given.
func TestRedactions(t *testing.T) {
	var b bytes.Buffer
	err := redactions(&b, []redact.Count{{Kind: "ip", Distinct: 2, Occurrences: 5, Action: "replaced"}, {Kind: "prompt", Occurrences: 3, Action: "removed"}}, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := "  ip       replaced: 2 distinct, 5 occurrences\n  prompt   removed: 3\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestPacked: the package, its file count, each kind redacted and each file left out, a
// name found on disk never reaching the terminal as control characters.
func TestPacked(t *testing.T) {
	var b bytes.Buffer
	if err := Packed(&b, "p.tar.gz", 7, []redact.Count{{Kind: "host", Occurrences: 2, Action: "removed"}}, []string{"notes.txt", "x\x1b]0;y\x07"}); err != nil {
		t.Fatal(err)
	}
	want := "wrote p.tar.gz: 7 files\n  host                       removed: 2\n  left out: notes.txt\n  left out: x ]0;y\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestRunNotes: a note about a step that failed after the load names the step and, for the
// diagnosis, the command that redoes it; an error carrying a terminal escape from outside
// reaches the terminal without it.
func TestRunNotes(t *testing.T) {
	var b bytes.Buffer
	DiagnosisSkipped(&b, errors.New("evidence.json: line 3: \x1b[31mbad\x1b[0m"), "runs/a")
	DiagnosisNotWritten(&b, errors.New("disk full"))
	TraceNotAnalysed(&b, errors.New("trace.json: truncated"))
	want := "pel: diagnosis skipped: evidence.json: line 3: [31mbad [0m (rerun: pel analyze runs/a)\n" +
		"pel: writing the diagnosis: disk full\n" +
		"pel: the profiling window's trace was not analysed: trace.json: truncated\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
