package stats

// NoteKind says what a stage-1 note is about, so that code decides on the kind and never
// on the text.
type NoteKind string

// Note kinds. The count kinds say how many tasks of which sort the headline holds: the
// stream's state counts every task, so over a sample its own notes of these kinds replace
// the sample's.
const (
	NoteNoRecords      NoteKind = "no_records"       // nothing was measured
	NoteNoWarm         NoteKind = "no_warm"          // the headline covers every phase
	NoteTokenEstimate  NoteKind = "token_estimate"   // completed tasks without usage
	NoteNeverSent      NoteKind = "never_sent"       // cancelled while queued
	NoteOneTask        NoteKind = "one_task"         // no rate over one task
	NoteFewCompleted   NoteKind = "few_completed"    // percentiles on few tasks
	NoteBandScaling    NoteKind = "band_scaling"     // band scaling not computed
	NoteHOLNotComputed NoteKind = "hol_not_computed" // head-of-line ratio not computed
	NoteSampled        NoteKind = "sampled"          // more tasks than the analysis holds
	NoteHeadlineOnly   NoteKind = "headline_only"    // a load-only tally: the rest is pel analyze's
	// NoteEventsSummarized: completed requests whose content events an importing tool
	// summarized are left out of the event-shape signals.
	NoteEventsSummarized NoteKind = "events_summarized"
)

// counts reports whether a note of kind k counts tasks (see the kinds).
func (k NoteKind) counts() bool {
	switch k {
	case NoteNoRecords, NoteNoWarm, NoteTokenEstimate, NoteNeverSent, NoteOneTask, NoteFewCompleted, NoteBandScaling,
		NoteEventsSummarized:
		return true
	}
	return false
}

// Note is one stage-1 note: its kind, and the text evidence.json and the report carry.
type Note struct {
	Kind NoteKind
	Text string
}

// texts is the notes' texts, in order.
func texts(ns []Note) []string {
	if ns == nil {
		return nil
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Text
	}
	return out
}
