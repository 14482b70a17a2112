package stats

import (
	"reflect"
	"slices"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// A tally holds stage 1's headline exactly: the phases, the headline and per-phase
// summaries, and the headline signals they give, are Compute's over the same tasks.
func TestTallyIsComputesHeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		recs []record.Record
	}{
		{"one task", genRun(1, 1)},
		{"cold only", genRun(60, 2)},
		{"cold and warm", genRun(3000, 3)},
		{"no warm phase", allPhase(genRun(500, 4), "")},
		{"with canary tasks", withCanary(genRun(800, 5))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Stage 1 leaves the candidate's tasks out (Stream.AddOutside): so does Compute
			// over the baseline's.
			want := Compute(slices.DeleteFunc(slices.Clone(tc.recs), func(r record.Record) bool { return r.Phase == record.PhaseCanary }), streamOpts())
			ta := NewTally(streamOpts())
			for i := range tc.recs {
				ta.Add(&tc.recs[i])
			}
			got := ta.Result()
			if got.Workload.TokenSource != want.Workload.TokenSource || got.Workload.TokenSource == "" {
				t.Errorf("token source %q, want %q", got.Workload.TokenSource, want.Workload.TokenSource)
			}
			if !reflect.DeepEqual(got.Workload.Summary, want.Workload.Summary) {
				t.Errorf("headline summary:\n got %+v\nwant %+v", got.Workload.Summary, want.Workload.Summary)
			}
			if !reflect.DeepEqual(got.Workload.ByPhase, want.Workload.ByPhase) {
				t.Errorf("by phase:\n got %+v\nwant %+v", got.Workload.ByPhase, want.Workload.ByPhase)
			}
			if !reflect.DeepEqual(got.Phases, want.Phases) || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) {
				t.Errorf("phases/window: %v %v %v, want %v %v %v", got.Phases, got.Start, got.End, want.Phases, want.Start, want.End)
			}
			wantSig := map[string]evidence.Signal{}
			for _, s := range want.Signals {
				wantSig[sigKey(s)] = s
			}
			if len(got.Signals) < 8 {
				t.Errorf("only %d signals", len(got.Signals))
			}
			for _, s := range got.Signals {
				if w, ok := wantSig[sigKey(s)]; !ok || !reflect.DeepEqual(s, w) {
					t.Errorf("signal %s:\n got %+v\nwant %+v", s.Name, s, w)
				}
			}
			for _, n := range want.Notes {
				// The headline's own caveats; the never-sent and band notes are of figures a
				// tally does not hold.
				if n.Kind.counts() && n.Kind != NoteNeverSent && n.Kind != NoteBandScaling && !slices.Contains(got.Notes, n) {
					t.Errorf("note %q missing: %q", n.Text, got.Notes)
				}
			}
			if last := got.Notes[len(got.Notes)-1]; last.Kind != NoteHeadlineOnly {
				t.Errorf("no note says the tally is the headline only: %q", got.Notes)
			}
		})
	}
	if got := NewTally(streamOpts()).Result(); len(got.Notes) != 1 || got.Notes[0].Kind != NoteNoRecords {
		t.Errorf("empty tally: %+v", got.Notes)
	}
}

func allPhase(recs []record.Record, phase string) []record.Record {
	for i := range recs {
		recs[i].Phase = phase
	}
	return recs
}

// withCanary marks every fifth warm task a canary's candidate: neither Compute's stage 1
// (Stream.AddOutside) nor a tally counts them.
func withCanary(recs []record.Record) []record.Record {
	for i := range recs {
		if recs[i].Phase == record.PhaseWarm && i%5 == 0 {
			recs[i].Phase = record.PhaseCanary
		}
	}
	return recs
}
