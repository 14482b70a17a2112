// Package runner is the orchestration behind `pel run` (and `pel demo`): validate the
// contract, its files and the target; then create the run directory, drive the load, let
// collectors sample the server, and write evidence.json with stage 1 filled.
//
// Order matters: every check that can fail on bad input happens before the run directory
// is created, so a typo never leaves a half-written directory behind. Errors carry their
// kind (ErrBadInput: exit 2; ErrRunFailed: exit 1) for the command line to map.
//
// With Config.Canary the run is an interleaved canary run (canary.go, package canary): one
// schedule split between the target and a candidate, the candidate's tasks in phase canary
// and kept out of the run's own evidence (the baseline's), with evidence of their own.
//
// Evidence is always derivable from the raw records: rundir.Rebuild recomputes stage 1 of
// a run directory from contract.yaml and requests.jsonl alone. Run's stage 1 streams
// requests.jsonl through package rundir too, so a run of any length ends in bounded
// memory. Package rundir also makes the directory (the one -o rule) and writes every file
// in it; a collector creates its own file there (rundir.Dir.Append).
//
// Sharding (shard.go): Config.Shard and StartAt run one shard's part of the contract's
// schedule (workload.Sharded) from a start all shards share, stamp every record with the
// shard, and compare this machine's clock with the target's before the start.
package runner
