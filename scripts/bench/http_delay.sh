#!/usr/bin/env bash
# How close to a server's delay wirespeed http measures, next to wrk on the same machine: both
# load the HTTP fixture's `?delay=10ms` (the fixture answers each request 10 ms after it came)
# with 2 connections, alternating. Prints each run's p50 of both, what each adds above the
# 10 ms, and the median ratio of what wirespeed adds to what wrk adds (lower is better; wrk's
# latency is from its own send to its read). Moved here from a test, where a busy 2-core
# machine decided it. Every run is bounded by -d.
#   RUNS=5 SECS=3 scripts/bench/http_delay.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
source scripts/bench/common.sh
need wrk jq
WS_PORT=15261
HTTP_PORT=15262
$WS server -B 127.0.0.1 -p $WS_PORT --http $HTTP_PORT 2>"$tmp/ws.log" & PIDS+=($!)
sleep 0.5
url="http://127.0.0.1:$HTTP_PORT/?delay=10ms"

# p50 in microseconds, each tool's way.
ws_p50() { $WS http "$url" -c 2 -d "${1}s" --format json --no-save | jq -r '.summary.latency.p50_ns / 1000'; }
wrk_p50() {
  wrk -t 1 -c 2 -d "${1}s" --latency "$url" |
    awk '$1 == "50%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
         print (u == "ms") ? v * 1000 : (u == "s") ? v * 1e6 : v }'
}

ws_p50 1 >/dev/null; wrk_p50 1 >/dev/null
echo "run  ws_p50_us  wrk_p50_us  ws_over_us  wrk_over_us  over_ratio"
: >"$tmp/ratios"
for i in $(seq 1 "$RUNS"); do
  w=$(ws_p50 "$SECS")
  k=$(wrk_p50 "$SECS")
  line=$(awk -v w="$w" -v k="$k" 'BEGIN { a = w - 10000; b = k - 10000; if (b < 1) b = 1;
         printf "%9.1f  %10.1f  %10.1f  %11.1f  %.3f", w, k, a, b, a / b }')
  printf "%3d  %s\n" "$i" "$line"
  echo "$line" | awk '{print $5}' >>"$tmp/ratios"
done
echo "median ratio of the time each adds above the delay, wirespeed / wrk: $(median <"$tmp/ratios")"
