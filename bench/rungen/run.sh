#!/usr/bin/env bash
# pel analyze on synthetic soaks (figures for BENCHMARKS.md): wall time and peak RSS.
#   bench/rungen/run.sh [tasks...]      default: 100000 1000000 3600000 (3.4 GB of requests.jsonl)
# Each directory is generated once under ${PEL_BENCH_DIR:-/tmp}; evidence.json and
# report.html are removed before each measurement, so every run starts from the records.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${PEL_BENCH_DIR:-/tmp}
bin=$(mktemp -d)
go build -o "$bin/pel" ./cmd/pel
go build -o "$bin/rungen" ./bench/rungen
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(100000 1000000 3600000)
for n in "${sizes[@]}"; do
  run="$dir/pel-rungen-$n"
  [ -f "$run/requests.jsonl" ] || "$bin/rungen" -n "$n" -rate 1000 -o "$run"
  rm -f "$run/evidence.json" "$run/report.html"
  /usr/bin/time -f "$n tasks: %e s wall, %M KB peak RSS" "$bin/pel" analyze "$run" --json >/dev/null
done
rm -rf "$bin"
