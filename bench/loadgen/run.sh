#!/usr/bin/env bash
# Measures pel's load driver on loopback (figures for BENCHMARKS.md). Short: ~1 minute.
#   bench/loadgen/run.sh [rates...]      default rates: 1000 2000 4000 6000 8000
# The SSE server runs as its own process, so the client's CPU and memory are its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
bin=$(mktemp -d)/loadgen-bench
go build -o "$bin" ./bench/loadgen
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(1000 2000 4000 6000 8000)
"$bin" server -addr 127.0.0.1:18080 & srv=$!
"$bin" server -addr 127.0.0.1:18081 -hold 20s & hold=$!
trap 'kill $srv $hold 2>/dev/null' EXIT
sleep 0.5
echo "# open-loop rate sweep (5 s each), nproc=$(nproc), GOMAXPROCS default"
for r in "${rates[@]}"; do "$bin" rate -target http://127.0.0.1:18080 -rate "$r" -duration 5s; done
echo "# 10,000 concurrent streams (ulimit -n $(ulimit -n))"
"$bin" streams -target http://127.0.0.1:18081 -n 10000 -rate 2000
