// Package ladder climbs the Performance Evidence Ladder over a run directory after the fact:
// it rebuilds the evidence from the directory's own files (contract, task records, sampled
// metrics), adds offline sources such as profiler traces, diagnoses, and writes
// evidence.json and report.html back. `pel analyze` is this package; `pel demo` ends with it.
package ladder
