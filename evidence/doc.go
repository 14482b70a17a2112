// Package evidence holds pel's evidence model — stages, layers, signals, findings, stop
// conditions and rollback triggers — and its JSON codec (evidence.json, DESIGN.md §3).
//
// Everything downstream of ingestion speaks this model: sources (client records, engine
// /metrics, DCGM, profiler traces) produce Signals; diagnose turns Signals into Findings;
// report renders an Evidence without computing anything. The signal vocabulary in
// signals.go is the seam between producers and the diagnosis: a producer that measures one
// of these quantities must emit it under that name and unit.
package evidence
