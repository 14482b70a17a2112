// Package comparetest builds synthetic run directories (contract.yaml, requests.jsonl,
// evidence.json) with known latency distributions, for tests of compare and of the
// command line.
package comparetest
