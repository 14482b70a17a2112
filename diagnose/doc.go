// Package diagnose turns an evidence package into a diagnosis: which layer limits accepted
// tasks, what evidence supports it, what a change should move, and what rollback thresholds
// a change must respect.
//
// It reads only the normalized signals and series of an evidence.Evidence (the vocabulary in
// evidence/signals.go) plus the client's task records; it never looks inside the simulated
// engine. Each rule in rules.go is one symptom row of the ladder's catalog, with its
// thresholds as named constants that say why they sit where they do. A rule that cannot see
// the evidence that would separate two layers lowers its confidence and names the missing
// source instead of guessing: a missing source may cost a verdict, never produce a confident
// wrong one.
//
// Stop conditions are computed: the owner finding is re-evaluated on each half of the warm
// window (stage 1 over that half's tasks, from package stats, and the series samples in it),
// its acceptance impact is counted from rejected tasks that coincide with the symptom in
// time and kind, and rollback triggers come from bootstrap confidence intervals of the
// baseline's own distributions.
package diagnose
