// Package quantile is pel's one definition of a sample quantile: every p50, p95 and p99 that
// pel prints or judges — stage 1 (stats), pel compare and its bootstrap, pel sweep, the
// canary, the rollback triggers, the OTLP join, the diagnosis — is read by this package, so
// one run's warm p99 is one number in `pel report`, `pel compare`, `pel sweep` and
// report.html. Like benchmath's Sample (golang.org/x/perf), it is a sorted set of values
// with documented order statistics.
//
// Which order statistic. The q-quantile of n values is the value of rank k = ⌈q·n⌉ in
// ascending order (1-based, k at least 1): the nearest-rank definition (Hyndman & Fan's
// type 1), the smallest value with at least a share q of the values at or below it. It is
// always a value that was measured, so no quantile lies above the maximum, and the p99 of
// at most 100 values is their maximum: a headline p99 over 100 tasks or fewer is never below
// the p99 of one of its task types. A quantile of weighted values (a bootstrap
// resample, where a task drawn twice counts twice) takes the same rank over the weights'
// total. q·n is computed with a tolerance of 1e-9 so that 0.99·100 is rank 99, not 100.
//
// Ties and small samples. Ties need no rule: the order statistic is a value, and equal
// values are interchangeable. No sample is too small to have a quantile — below 1/(1−q)
// values the q-quantile is the maximum (a p99 of 61 tasks is the slowest one) — so
// callers say how many values a figure rests on (stats' "few samples" notes), and an
// interval of a quantile needs MinSamples values (resample.MinSamples) before it can bound
// it on both sides. No values give NaN (Sorted, Hist.Quantile reports ok false).
//
// Recorded values and the HDR buckets. A latency is recorded in whole microseconds
// (truncated), clamped to [0, 1 h], and held at three significant decimal digits: stats
// keeps each distribution in an HDR histogram (github.com/HdrHistogram/hdrhistogram-go, 1 µs
// to 1 h, 3 significant digits), whose bucket at value v is 2^max(0, ⌊log2 v⌋−10) µs
// wide — exact below 2,048 µs, and less than 0.1% of the value above. A recorded value is
// its bucket's lower bound (Recorded), so it is at most 0.1% below the measured one and
// never above it. Hist.Quantile is the rank-⌈q·n⌉ value of the histogram as recorded, and
// Sorted over Recorded values gives the same number exactly: a consumer that holds the
// values (pel compare's bootstrap) and one that holds only the histogram (the streamed
// stage 1) agree to the microsecond.
//
// The one exception is Linear, linear interpolation between closest ranks (Hyndman & Fan
// type 7, the default of numpy and pandas). It is used only where pel reproduces a figure
// defined by an outside tool — the trace package's kernel and queue figures, checked
// against Holistic Trace Analysis (pandas), and the simulator's calibration against the
// benchmark tools' reports (numpy) — and to read the percentiles of a bootstrap
// distribution (resample.PercentileCI), which is a smooth distribution of a statistic, not
// a sample of measured latencies.
//
// Server-side histograms scraped from an engine's /metrics (package scrape) are not samples
// of values but bucket counts: their quantile is Prometheus's histogram_quantile, read with
// the bucket bounds that hold the order statistic as its interval, and pel never prints it
// as a client figure.
package quantile
