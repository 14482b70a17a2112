// Package scrape samples engine and GPU /metrics endpoints during a run, stores the
// samples in DIR/metrics.jsonl, and turns them into pel's normalized stage-4 (serving
// scheduler & KV cache), stage-2 (GPU execution & memory, from DCGM) and stage-5
// (replicas) signals.
package scrape
