package sweep

// Progress hears of a sweep as it runs, for its caller to show: package report renders
// it (report.SweepProgress), and the sweep itself prints nothing.
type Progress interface {
	// Warning is a condition that weakens the sweep's figures (too few warm tasks, say).
	Warning(msg string)
	// Starting: the i-th point (1-based), name, is about to run, of n planned (atMost: a
	// search, which may stop before n).
	Starting(i, n int, atMost bool, name string)
	// Done: a point finished and was judged.
	Done(p Point)
}
