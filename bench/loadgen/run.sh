#!/usr/bin/env bash
# Measures pel's load driver on loopback (figures for BENCHMARKS.md). Short: ~1.5 minutes.
#   bench/loadgen/run.sh [rates...]      default rates: 1000 2000 4000 6000 8000
#   STREAMS=5000 bench/loadgen/run.sh    the open-streams part's stream count
# The SSE servers run as their own processes, so the client's CPU and memory are its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
STREAMS=${STREAMS:-5000}
bin=$(mktemp -d)/loadgen-bench
go build -o "$bin" ./bench/loadgen
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(1000 2000 4000 6000 8000)
"$bin" server -addr 127.0.0.1:18080 & srv=$!
# Long answers: a token every 100 ms for 40 s, so every stream is open and sending when measured.
"$bin" tokens -addr 127.0.0.1:18081 -ttft 5ms -itl 100ms -tokens 400 & slow=$!
trap 'kill $srv $slow 2>/dev/null' EXIT
sleep 0.5
echo "# open-loop rate sweep (5 s each), nproc=$(nproc), GOMAXPROCS default"
for r in "${rates[@]}"; do "$bin" rate -target http://127.0.0.1:18080 -rate "$r" -duration 5s; done
echo "# $STREAMS concurrent streams after 15 s of tokens (ulimit -n $(ulimit -n)), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" streams -target http://127.0.0.1:18081 -n "$STREAMS" -rate 2000 -tokens-for 15s
