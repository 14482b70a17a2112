#!/usr/bin/env bash
# pel's load driver side by side with vegeta v12.13.0 (plain HTTP) against one loopback
# token server (bench/loadgen tokens: loadgentest.Handler, 8-token prompts and answers,
# 5 ms to the first token, 1 ms between tokens, each token its own SSE event).
#
#   bench/vs-vegeta.sh [rates...]          default rates: 1000 3000 5000
#   PAIRS=2 DURATION=10s STREAMS=5000 HOLD=15s bench/vs-vegeta.sh
#   OLD=5b7c67d STREAMS=0 bench/vs-vegeta.sh 3000   also that commit's pel run --no-analysis
#
# For each rate, PAIRS interleaved rounds of: pel run, vegeta attack, pel run --no-analysis
# (driving only), and with OLD set, the OLD commit's pel run --no-analysis (builds compared
# in the same pairs, at the same load); even rounds run in the reverse order (ABBA), so give
# PAIRS even for a drift to cancel. Each is its own process under /usr/bin/time: CPU is user + sys of the
# whole process divided by the requests it sent, peak RSS its maximum resident set. pel's
# schedule lag p99 is read from its evidence.json. Every row carries the 1-minute load
# average seen before each of its runs: on a shared machine the lag is the neighbours' as
# much as the client's. Then (STREAMS > 0) each tool opens STREAMS streams that send a token
# every 100 ms, and its RSS after HOLD of tokens is divided by the streams.
# Loopback only; every process is bounded (timeout) and stopped on exit. ~6 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@"); [ ${#rates[@]} -gt 0 ] || rates=(1000 3000 5000)
PAIRS=${PAIRS:-2}
DURATION=${DURATION:-10s}
STREAMS=${STREAMS:-5000}
HOLD=${HOLD:-15s}
PORT=${PORT:-18190}
SPORT=$((PORT + 1))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$work/pel" ./cmd/pel
if [ -n "${OLD:-}" ]; then
	mkdir "$work/old"
	git archive "$OLD" | tar -x -C "$work/old"
	(cd "$work/old" && go build -o "$work/pel-old" ./cmd/pel)
fi
go build -o "$work/loadgen-bench" ./bench/loadgen
vegeta=${VEGETA:-$HOME/.cache/pel-vegeta/vegeta}
if [ ! -x "$vegeta" ]; then
	GOBIN=$(dirname "$vegeta") go install github.com/tsenart/vegeta/v12@v12.13.0
fi
[ -x /usr/bin/time ] || { echo "vs-vegeta: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }

"$work/loadgen-bench" tokens -addr "127.0.0.1:$PORT" -ttft 5ms -itl 1ms -tokens 8 -prompt-tokens 8 2>"$work/server.log" &
pids+=($!)
"$work/loadgen-bench" tokens -addr "127.0.0.1:$SPORT" -ttft 5ms -itl 100ms -tokens 400 -prompt-tokens 8 2>"$work/slow.log" &
pids+=($!)
for _ in $(seq 50); do
	curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && curl -sf "http://127.0.0.1:$SPORT/v1/models" >/dev/null 2>&1 && break
	sleep 0.1
done

# The same request for both: 8 words of prompt (the server counts 8), 8 tokens, streamed.
prompt='one two three four five six seven eight'
printf '{"model":"test-model","messages":[{"role":"user","content":"%s"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}' "$prompt" >"$work/body.json"

load1() { cut -d' ' -f1 /proc/loadavg; }
secs() { local d=$1; case $d in *ms) echo "scale=3; ${d%ms}/1000" | bc ;; *s) echo "${d%s}" ;; *m) echo "$((${d%m} * 60))" ;; esac; }
limit=$(( $(secs "$DURATION" | cut -d. -f1) + 60 ))

# contract RATE DURATION OUTPUT_TOKENS: a constant-rate contract (vegeta's arrivals).
contract() {
	printf 'name: vs-vegeta\nversion: "1"\narrival: {process: constant, rate: %s}\nduration: %s\ntimeout: 60s\ntasks:\n  - {name: short, prompt_tokens: 8, output_tokens: %s}\n' "$1" "$2" "$3"
}

# runpel OUT [flags]: prints "cpu_s rss_kb requests lag_p99_ms"
runpel() {
	local out=$1; shift
	rm -rf "$out"
	contract "$rate" "$DURATION" 8 >"$out.yaml"
	timeout "$limit" /usr/bin/time -f '%U %S %M' -o "$out.time" "${PELBIN:-$work/pel}" run "$@" --target "http://127.0.0.1:$PORT" \
		--contract "$out.yaml" -o "$out" >"$out.log" 2>&1 || true
	python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
try:
    u, s, m = open(out + ".time").read().split()[-3:]
    e = json.load(open(out + "/evidence.json"))
    lat = e["workload"]["latency"]
    print(float(u) + float(s), m, lat["schedule_lag_ms"]["n"], lat["schedule_lag_ms"]["p99"])
except Exception as err:  # a failed run: said, and counted as nothing
    print(f"vs-vegeta: pel run {out}: {err} (see {out}.log)", file=sys.stderr)
    print("0 0 1 0")
EOF
}

# runveg OUT: prints "cpu_s rss_kb requests success"
runveg() {
	local out=$1
	echo "POST http://127.0.0.1:$PORT/v1/chat/completions" | timeout "$limit" /usr/bin/time -f '%U %S %M' -o "$out.time" \
		"$vegeta" attack -rate "$rate/s" -duration "$DURATION" -body "$work/body.json" -header 'Content-Type: application/json' \
		-timeout 30s -output "$out.bin" 2>"$out.log" || true
	"$vegeta" report -type json "$out.bin" >"$out.json" 2>>"$out.log" || true
	rm -f "$out.bin"
	python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
try:
    u, s, m = open(out + ".time").read().split()[-3:]
    r = json.load(open(out + ".json"))
    print(float(u) + float(s), m, r["requests"], r["success"])
except Exception as err:
    print(f"vs-vegeta: vegeta {out}: {err} (see {out}.log)", file=sys.stderr)
    print("0 0 1 0")
EOF
}

# One run each of a pair (rate and i are the loop's): its figures, and the load before it in l.
runall() { l="$l $(load1)"; read -r pc pm pn plag <<<"$(runpel "$work/pel-$rate-$i")"; }
runv() { l="$l $(load1)"; read -r vc vm vn vok <<<"$(runveg "$work/veg-$rate-$i")"; }
rund() { l="$l $(load1)"; read -r dc dm dn dlag <<<"$(runpel "$work/drv-$rate-$i" --no-analysis)"; }
runold() {
	[ -n "${OLD:-}" ] || return 0
	ol=$(load1); read -r oc om on olag <<<"$(PELBIN=$work/pel-old runpel "$work/old-$rate-$i" --no-analysis)"
}

echo "# pel $(git rev-parse --short HEAD) vs vegeta v12.13.0; $(nproc) cores; $PAIRS interleaved pairs of $DURATION per rate; token server: 8-token answers, TTFT 5 ms, ITL 1 ms"
rows=()
olds=()
for rate in "${rates[@]}"; do
	for i in $(seq "$PAIRS"); do
		# Odd pairs run pel, vegeta, driving only, OLD; even pairs the mirror image (ABBA),
		# so a load that drifts steadily through the script favours no tool over a pair of pairs.
		l=""
		if [ $((i % 2)) -eq 1 ]; then runall; runv; rund; runold; else runold; rund; runv; runall; fi
		l=${l# }
		line=$(python3 -c "
pc,pn,vc,vn,dc,dn=$pc,$pn,$vc,$vn,$dc,$dn
p=pc/pn*1e6; v=vc/vn*1e6; d=dc/dn*1e6
r=lambda a: a/v if v else float('nan')
print(f'{p:.0f} {d:.0f} {v:.0f} {r(d):.2f} {r(p):.2f}')")
		read -r pus dus vus ratio fullratio <<<"$line"
		echo "rate $rate pair $i: pel ${pus} µs/req (driving only ${dus}), vegeta ${vus} (vegeta success $vok); ratio driving/vegeta $ratio (whole run $fullratio); peak RSS pel $((pm / 1024)) MB, --no-analysis $((dm / 1024)) MB, vegeta $((vm / 1024)) MB; lag p99 ${plag} ms (--no-analysis ${dlag} ms); load average $l"
		rows+=("$rate $pus $dus $vus $ratio $fullratio $pm $dm $vm $plag $dlag $l")
		if [ -n "${OLD:-}" ]; then
			read -r ous oratio <<<"$(python3 -c "o=$oc/$on*1e6; d=$dc/$dn*1e6; print(f'{o:.0f} {d/o if o else float(\"nan\"):.2f}')")"
			echo "rate $rate pair $i: $OLD --no-analysis ${ous} µs/req; this build / $OLD $oratio (lag p99 ${olag} ms; load average $ol)"
			olds+=("$rate $ous $oratio")
		fi
	done
done

echo
echo "| rate | CPU µs/request pel (driving only) | vegeta | ratio driving only / vegeta (whole run) | peak RSS pel (--no-analysis) / vegeta | pel schedule lag p99 (--no-analysis) | load average (1 min) |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}" | python3 -c '
import sys, statistics as st
rows = {}
for l in sys.stdin:
    f = l.split()
    rows.setdefault(int(f[0]), []).append(f)
med = lambda xs: st.median(float(x) for x in xs)
for r, fs in rows.items():
    col = lambda i: [f[i] for f in fs]
    loads = [float(x) for f in fs for x in f[11:]]
    lags = ", ".join(f"{float(x):.2f}" for x in col(9))
    dlags = ", ".join(f"{float(x):.2f}" for x in col(10))
    print(f"| {r:,}/s | {med(col(1)):.0f} ({med(col(2)):.0f}) | {med(col(3)):.0f} | {med(col(4)):.2f} ({med(col(5)):.2f}) |"
          f" {med(col(6))/1024:.0f} ({med(col(7))/1024:.0f}) / {med(col(8))/1024:.0f} MB | {lags} ms ({dlags}) | {min(loads):.2f}–{max(loads):.2f} |")
'
echo "(medians of $PAIRS pairs; ratios pair by pair; lag: every pair)"
if [ -n "${OLD:-}" ]; then
	printf '%s\n' "${olds[@]}" | python3 -c '
import sys, statistics as st
rows = {}
for l in sys.stdin:
    f = l.split()
    rows.setdefault(int(f[0]), []).append(f)
for r, fs in rows.items():
    print(f"{r:,}/s: '"$OLD"' driving only {st.median(float(f[1]) for f in fs):.0f} µs/request (median); this build / '"$OLD"' pair by pair: " + ", ".join(f[2] for f in fs))
'
fi

[ "$STREAMS" -gt 0 ] || exit 0
# Memory per open stream: STREAMS streams opened in 1 s, each sending a token every 100 ms
# for 40 s; RSS sampled HOLD after the last one opened, divided by STREAMS.
hold_s=$(secs "$HOLD" | cut -d. -f1)
rss_of() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
streams_rate=$STREAMS
echo
echo "# $STREAMS open streams, one token every 100 ms, RSS after $HOLD of tokens"
l=$(load1)
contract "$streams_rate" 1s 400 >"$work/streams.yaml"
"$work/pel" run --no-analysis --target "http://127.0.0.1:$SPORT" --contract "$work/streams.yaml" \
	-o "$work/streams-pel" >"$work/streams-pel.log" 2>&1 &
p=$!; pids+=($p)
sleep $((1 + hold_s)); prss=$(rss_of $p); kill -INT $p 2>/dev/null || true
wait $p 2>/dev/null || true # Ctrl-C: in-flight streams get pel's grace (5 s), then it writes and exits
echo "POST http://127.0.0.1:$SPORT/v1/chat/completions" | "$vegeta" attack -rate "$streams_rate/s" -duration 1s \
	-body "$work/body.json" -header 'Content-Type: application/json' -timeout 60s -output /dev/null 2>/dev/null &
v=$!; pids+=($v)
sleep $((1 + hold_s)); vrss=$(rss_of $v); kill $v 2>/dev/null || true
wait $v 2>/dev/null || true
echo "pel $((prss / 1024)) MB RSS = $(echo "scale=1; $prss / $STREAMS" | bc) KiB per stream; vegeta $((vrss / 1024)) MB = $(echo "scale=1; $vrss / $STREAMS" | bc) KiB per stream (load average $l → $(load1))"
