// Package hostile is pel's hostile-server suite: every known way a server, an endpoint or a
// file can hang pel, exhaust its memory or lose finished records, replayed
// against the real pel binary, one case per finding.
//
// Each case builds nothing itself: TestMain builds ./cmd/pel once (or takes
// PEL_HOSTILE_BIN, to run the suite against another build, e.g. one without a bound, to see its case fail) and
// runs it as a child process under a virtual-memory limit (ulimit -v, childMemLimitKiB),
// against servers this test process plays on 127.0.0.1. Every case asserts that
//
//   - the child ends by itself within a generous bound derived from the contract's
//     duration, timeout and grace (never a tight wall-clock threshold);
//   - its peak RSS (the child's VmHWM, sampled every 10 ms; see watchHWM) stays under
//     rssBound;
//   - the records that finished and evidence.json are written;
//   - the error is named (in the records, the output or the exit status).
//
// Peak RSS of every case is logged (go test -v ./test/hostile); BENCHMARKS.md quotes the
// endless-stream and 1.5M-series ones.
package hostile
