#!/usr/bin/env bash
# wirespeed http against vegeta (built by scripts/peers.sh) on the same Debian nginx (one
# worker, a 615-byte page) on loopback, alternating wirespeed and vegeta in each round:
#  - closed model, the most requests/s: vegeta attack -rate 0 -max-workers CONNS (as rathole's
#    benchmark ran it) against wirespeed http -c CONNS;
#  - open model at RATE requests/s: both at the same fixed rate; their p50 and p99 (vegeta
#    counts from when a worker sent the request, wirespeed from when it was due, so under
#    queueing wirespeed's are the honest ones and may be higher).
# For each, the client's CPU seconds per 100k requests (vegeta attack only: its report is
# made afterwards and not counted). Prints every run and the median ratios wirespeed/vegeta.
# PIN=1 (default) puts nginx on CPU 1 and the client on CPU 0; PIN=0 lets both share both.
# Every run is bounded by SECS.
#   RUNS=5 SECS=3 CONNS=48 RATE=2000 PIN=1 scripts/bench/vegeta.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-48}
RATE=${RATE:-2000}
PIN=${PIN:-1}
source scripts/bench/common.sh
need nginx taskset jq
command -v vegeta >/dev/null || { echo "vegeta is needed: scripts/peers.sh builds it" >&2; exit 1; }
PORT=15264
case "$PIN" in
  1) server_cpu=(taskset -c 1); client_cpu=(taskset -c 0) ;;
  *) server_cpu=(); client_cpu=() ;;
esac
start_nginx $PORT "${server_cpu[@]}"
URL="http://127.0.0.1:$PORT/"

ms() { awk -v ns="$1" 'BEGIN {printf "%.3f", ns / 1e6}'; }

# vegeta_attack ARGS...: attacks $URL with ARGS (on the client CPU), leaving its JSON report in
# $tmp/vreport; prints its CPU seconds.
vegeta_attack() {
  local c
  c=$(echo "GET $URL" | cpu_of "${client_cpu[@]}" vegeta attack -duration "${SECS}s" "$@")
  vegeta report -type json <"$tmp/out" >"$tmp/vreport"
  echo "$c"
}

echo "GET $URL" | "${client_cpu[@]}" vegeta attack -duration 1s -rate 0 -max-workers "$CONNS" >/dev/null
"${client_cpu[@]}" $WS http "$URL" -c "$CONNS" -d 1 --no-save >/dev/null

echo "closed model, $CONNS connections (PIN=$PIN)"
echo "run   ws_req_s  vegeta_req_s  ws/vegeta  cpu/100k: ws  vegeta  ws/vegeta"
: >"$tmp/rate"; : >"$tmp/cpu"
for i in $(seq 1 "$RUNS"); do
  wc=$(cpu_of "${client_cpu[@]}" $WS http "$URL" -c "$CONNS" -d "$SECS" -f json --no-save)
  ws=$(jq -r '.summary.requests_per_second' "$tmp/out"); wn=$(jq -r '.summary.responses' "$tmp/out")
  vc=$(vegeta_attack -rate 0 -max-workers "$CONNS")
  vr=$(jq -r '.throughput' "$tmp/vreport"); vn=$(jq -r '.requests' "$tmp/vreport")
  wp=$(per100k "$wc" "$wn"); vp=$(per100k "$vc" "$vn")
  r=$(ratio "$ws" "$vr"); c=$(ratio "$wp" "$vp")
  printf "%3d  %9.0f  %12.0f  %9s  %12s  %6s  %9s\n" "$i" "$ws" "$vr" "$r" "$wp" "$vp" "$c"
  echo "$r" >>"$tmp/rate"; echo "$c" >>"$tmp/cpu"
done
echo "median ratio requests/s wirespeed/vegeta: $(median <"$tmp/rate")"
echo "median ratio CPU per request wirespeed/vegeta: $(median <"$tmp/cpu")"

echo
echo "open model, $RATE requests/s (PIN=$PIN)"
echo "run   ws_sent/s  vegeta_sent/s  ws/vegeta  p50 ms: ws  vegeta  p99 ms: ws  vegeta  cpu/100k: ws  vegeta  ws/vegeta"
: >"$tmp/orate"; : >"$tmp/ocpu"
for i in $(seq 1 "$RUNS"); do
  wc=$(cpu_of "${client_cpu[@]}" $WS http "$URL" --rate "$RATE" -d "$SECS" -f json --no-save)
  ws=$(jq -r '.summary.sent_per_second' "$tmp/out"); wn=$(jq -r '.summary.responses' "$tmp/out")
  w50=$(jq -r '.summary.latency.p50_ns' "$tmp/out"); w99=$(jq -r '.summary.latency.p99_ns' "$tmp/out")
  vc=$(vegeta_attack -rate "$RATE/s")
  vr=$(jq -r '.rate' "$tmp/vreport"); vn=$(jq -r '.requests' "$tmp/vreport")
  v50=$(jq -r '.latencies["50th"]' "$tmp/vreport"); v99=$(jq -r '.latencies["99th"]' "$tmp/vreport")
  wp=$(per100k "$wc" "$wn"); vp=$(per100k "$vc" "$vn")
  r=$(ratio "$ws" "$vr"); c=$(ratio "$wp" "$vp")
  printf "%3d  %9.0f  %13.0f  %9s  %10s  %6s  %10s  %6s  %12s  %6s  %9s\n" "$i" "$ws" "$vr" "$r" \
    "$(ms "$w50")" "$(ms "$v50")" "$(ms "$w99")" "$(ms "$v99")" "$wp" "$vp" "$c"
  echo "$r" >>"$tmp/orate"; echo "$c" >>"$tmp/ocpu"
done
echo "median ratio achieved rate wirespeed/vegeta: $(median <"$tmp/orate")"
echo "median ratio CPU per request wirespeed/vegeta: $(median <"$tmp/ocpu")"
