// Package resample is the task-clustered percentile bootstrap that pel's confidence
// intervals rest on: the rollback triggers diagnose derives from a baseline, and the
// accept/reject intervals of pel compare.
//
// Latency values belong to tasks (one TTFT per task, many correlated ITLs per task), so a
// resample draws tasks with replacement and carries all of a task's values with it (a
// cluster bootstrap); resampling single ITLs would treat one slow task's tokens as many
// independent observations and give intervals that are too narrow. A resample is a weight
// per task (how often it was drawn), and the quantiles are read from the pooled values in
// one pass, so no resample copies the data.
package resample
