#!/usr/bin/env bash
# wirespeed latency vs Debian's sockperf ping-pong on loopback, side by side, alternating.
# sockperf prints half the round trip; its figures are doubled here so both are full RTTs.
# Prints each run and the median ratios wirespeed/sockperf of p50 and p99 (lower is better),
# for TCP and UDP, 16-byte messages, one connection. Every run is bounded by -t. sockperf's
# client busy-polls its socket, so wirespeed runs with --busy-poll (like with like) and, in a
# second set, in its default mode that sleeps until the answer comes (MODES to choose).
#   RUNS=5 SECS=3 PIN=1 scripts/bench/latency.sh
# PIN=1 pins both servers to CPU 1 and both clients to CPU 0 with taskset.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
PIN=${PIN:-0}
MODES=${MODES:-"--busy-poll default"}
source scripts/bench/common.sh
need sockperf jq
server_pin=(); client_pin=()
if [ "$PIN" = 1 ]; then need taskset; server_pin=(taskset -c 1); client_pin=(taskset -c 0); fi
WS_PORT=15221
SP_TCP=15222
SP_UDP=15223
"${server_pin[@]}" $WS server -B 127.0.0.1 -p $WS_PORT 2>"$tmp/ws.log" & PIDS+=($!)
"${server_pin[@]}" sockperf server -i 127.0.0.1 -p $SP_TCP --tcp >/dev/null 2>&1 & PIDS+=($!)
"${server_pin[@]}" sockperf server -i 127.0.0.1 -p $SP_UDP >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5

# sockperf's percentile line for P, as a full round trip in microseconds.
sp_pct() { awk -v p="$2" '$0 ~ "percentile " p " " {print $NF * 2}' "$1"; }

echo "(pin=$PIN)"
echo "proto run  ws_p50_us sp_p50_us ws_p99_us sp_p99_us  p50_ratio p99_ratio"
for mode in $MODES; do
for proto in tcp udp; do
  if [ "$mode" = default ]; then poll=""; else poll="$mode"; fi
  : >"$tmp/r50"; : >"$tmp/r99"
  if [ $proto = tcp ]; then sp_args="--tcp -p $SP_TCP"; ws_args=""; else sp_args="-p $SP_UDP"; ws_args="-u"; fi
  # One unmeasured run of each.
  # shellcheck disable=SC2086
  sockperf ping-pong -i 127.0.0.1 $sp_args -t 1 -m 16 >/dev/null 2>&1
  # shellcheck disable=SC2086
  $WS latency 127.0.0.1 -p $WS_PORT $ws_args -t 1 --no-save >/dev/null
  for i in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    # shellcheck disable=SC2086
    "${client_pin[@]}" $WS latency 127.0.0.1 -p $WS_PORT $ws_args $poll -t "$SECS" --format json --no-save >"$tmp/ws.json"
    # shellcheck disable=SC2086
    "${client_pin[@]}" sockperf ping-pong -i 127.0.0.1 $sp_args -t "$SECS" -m 16 >"$tmp/sp.txt" 2>&1
    w50=$(jq -r '.summary.rtt.p50_ns / 1000' "$tmp/ws.json")
    w99=$(jq -r '.summary.rtt.p99_ns / 1000' "$tmp/ws.json")
    s50=$(sp_pct "$tmp/sp.txt" "50.000")
    s99=$(sp_pct "$tmp/sp.txt" "99.000")
    r50=$(awk -v a="$w50" -v b="$s50" 'BEGIN {printf "%.3f", a/b}')
    r99=$(awk -v a="$w99" -v b="$s99" 'BEGIN {printf "%.3f", a/b}')
    printf "%-5s %3d  %-9.2f %-9.2f %-9.2f %-9.2f  %-9s %s\n" $proto "$i" "$w50" "$s50" "$w99" "$s99" "$r50" "$r99"
    echo "$r50" >>"$tmp/r50"; echo "$r99" >>"$tmp/r99"
  done
  echo "$proto ($mode) median ratio wirespeed/sockperf: p50 $(median <"$tmp/r50")  p99 $(median <"$tmp/r99")"
done
done
