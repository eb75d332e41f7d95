#!/usr/bin/env bash
# iperf3 interoperability throughput, side by side in one run, alternating:
#   A: stock iperf3 client -> wirespeed server     vs  B: stock client -> stock iperf3 server
#   C: wirespeed --iperf3 client -> stock server   vs  B
# Prints each run and the median ratios A/B and C/B (TCP, one stream). Loopback only; every
# run is bounded by -t.   RUNS=5 SECS=5 scripts/bench/iperf3_interop.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-5}
source scripts/bench/common.sh
need iperf3 jq
WS_PORT=15211
IP_PORT=15212
$WS server -B 127.0.0.1 -p $WS_PORT 2>"$tmp/ws.log" & PIDS+=($!)
iperf3 -s -B 127.0.0.1 -p $IP_PORT >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
# One unmeasured run of each pairing: the first test after a server starts is often slow.
iperf3 -c 127.0.0.1 -p $WS_PORT -t 1 >/dev/null
iperf3 -c 127.0.0.1 -p $IP_PORT -t 1 >/dev/null
$WS bw 127.0.0.1 -p $IP_PORT --iperf3 -t 1 --no-save >/dev/null

stock_to() { iperf3 -c 127.0.0.1 -p "$1" -t "$SECS" -J | jq -r '.end.sum_received.bits_per_second'; }
ws_to_stock() { $WS bw 127.0.0.1 -p $IP_PORT --iperf3 -t "$SECS" --format json --no-save | jq -r '.summary.received_bps'; }

: >"$tmp/a"; : >"$tmp/c"
echo "run  stock->ws_bps    stock->stock_bps  ws->stock_bps     A/B     C/B"
for i in $(seq 1 "$RUNS"); do
  a=$(stock_to $WS_PORT)
  b=$(stock_to $IP_PORT)
  c=$(ws_to_stock)
  ra=$(awk -v x="$a" -v y="$b" 'BEGIN {printf "%.3f", x/y}')
  rc=$(awk -v x="$c" -v y="$b" 'BEGIN {printf "%.3f", x/y}')
  printf "%3d  %-16.0f %-17.0f %-17.0f %-7s %s\n" "$i" "$a" "$b" "$c" "$ra" "$rc"
  echo "$ra" >>"$tmp/a"; echo "$rc" >>"$tmp/c"
done
echo "stock client -> wirespeed server / stock -> stock, median: $(median <"$tmp/a")"
echo "wirespeed --iperf3 client -> stock server / stock -> stock, median: $(median <"$tmp/c")"
