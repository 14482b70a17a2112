// Package ladder climbs the Performance Evidence Ladder over a run directory after the fact:
// it rebuilds the evidence from the directory's own files (contract, task records, sampled
// metrics), adds offline sources such as profiler traces, diagnoses, and writes
// evidence.json and report.html back. `pel analyze` is this package; `pel demo` ends with it.
// The directory is read through package rundir: each file once, the records as a stream, so
// an hour-long run is analysed in bounded memory.
package ladder
