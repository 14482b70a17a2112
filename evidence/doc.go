// Package evidence holds pel's evidence model — stages, layers, signals, findings, stop
// conditions and rollback triggers — and its JSON codec (evidence.json).
//
// Everything downstream of ingestion speaks this model: sources (client records, engine
// /metrics, DCGM, profiler traces) produce Signals; diagnose turns Signals into Findings;
// report renders an Evidence without computing anything. The signal vocabulary in
// signals.go is the seam between producers and the diagnosis: a producer that measures one
// of these quantities must emit it under that name and unit.
//
// A Finding's prediction is data (Predicted, prediction.go; evidence.json "predicted"):
//
//	"predicted": {
//	  "change": {"action": "raise_concurrent_sequences", "knob": "raising -np (parallel slots…)",
//	             "from": "1", "to": "2", "config": "slots"},
//	  "expect": [
//	    {"signal": "client.queue_share_ttft", "op": "<=", "bound": 0.5},
//	    {"signal": "client.ttft_p50_ms", "op": "<=", "bound": 0, "relative": true},
//	    {"signal": "client.ttft_p99_ms", "op": "<=", "bound": -0.4, "relative": true, "task": "short-chat"},
//	    {"signal": "client.context_exhausted_rate", "op": "<=", "bound": 0, "absent_is_zero": true}],
//	  "note": "prose the data cannot carry"}
//
// action is one of the Act* constants; knob says it in the detected engine's terms; config
// names the run.engine_config key whose value shows the change was made. An expectation's
// bound is absolute, or with relative a fraction of the baseline's value ("<=" −0.4: falls by
// at least 40%; "within" 0.1: stays within ±10%); phase defaults to warm; task scopes it to
// one task type's labelled signal; absent_is_zero marks a rate reported only when non-zero.
// Finding.Prediction is rendered from it (Predicted.Render). Package verify checks it.
package evidence
