#!/usr/bin/env bash
# wirespeed http (closed model, HTTP/1.1 keep-alive) vs wrk, the same number of connections
# and one thread each, both against the same Debian nginx (one worker, a 615-byte page) on
# loopback, alternating. Prints each run's requests/s and client CPU seconds per 100k
# requests, and the median ratios wirespeed/wrk: requests/s (higher is better) and CPU per
# request (lower is better). PIN=1 (default): nginx on CPU 1, both clients on CPU 0 (taskset),
# so nginx's core is the ceiling; PIN=same: nginx and the client share CPU 0, so a client that
# needs less CPU leaves more to nginx. Every run is bounded by -d.
#   RUNS=5 SECS=3 CONNS=32 PIN=1 scripts/bench/http.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-32}
PIN=${PIN:-1}
source scripts/bench/common.sh
need nginx wrk taskset jq
PORT=15261
if [ "$PIN" = same ]; then start_nginx $PORT taskset -c 0; else start_nginx $PORT taskset -c 1; fi
URL="http://127.0.0.1:$PORT/"

# One unmeasured run of each.
taskset -c 0 $WS http "$URL" -c "$CONNS" -d 1 --no-save >/dev/null
taskset -c 0 wrk -t 1 -c "$CONNS" -d 1s "$URL" >/dev/null
echo "run  ws_req_s  wrk_req_s  ws_cpu_s/100k  wrk_cpu_s/100k  rate_ratio  cpu_ratio  ($CONNS connections, PIN=$PIN)"
: >"$tmp/rate"; : >"$tmp/cpu"
for i in $(seq 1 "$RUNS"); do
  wc=$(cpu_of taskset -c 0 $WS http "$URL" -c "$CONNS" -d "$SECS" -f json --no-save)
  wr=$(jq -r '.summary.requests_per_second' "$tmp/out")
  wn=$(jq -r '.summary.responses' "$tmp/out")
  kc=$(cpu_of taskset -c 0 wrk -t 1 -c "$CONNS" -d "${SECS}s" "$URL")
  kr=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/out")
  kn=$(awk '/requests in/ {print $1}' "$tmp/out")
  wper=$(awk -v c="$wc" -v n="$wn" 'BEGIN {printf "%.3f", c / n * 100000}')
  kper=$(awk -v c="$kc" -v n="$kn" 'BEGIN {printf "%.3f", c / n * 100000}')
  rr=$(awk -v a="$wr" -v b="$kr" 'BEGIN {printf "%.3f", a/b}')
  cr=$(awk -v a="$wper" -v b="$kper" 'BEGIN {printf "%.3f", a/b}')
  printf "%3d  %8.0f  %9.0f  %13s  %14s  %10s  %9s\n" "$i" "$wr" "$kr" "$wper" "$kper" "$rr" "$cr"
  echo "$rr" >>"$tmp/rate"; echo "$cr" >>"$tmp/cpu"
done
echo "median ratio wirespeed/wrk: requests/s $(median <"$tmp/rate")  CPU per request $(median <"$tmp/cpu")"
