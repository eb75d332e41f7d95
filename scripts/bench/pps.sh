#!/usr/bin/env bash
# wirespeed pps vs sockperf throughput and iperf3 UDP (-l 64 -b 0) on loopback, alternating.
# wirespeed's figure is datagrams *received* per second. sockperf tp only reports what its
# client sent, which bounds what its server received from above, so that ratio is conservative.
# iperf3's is received datagrams (sent − lost) over the test time. One socket, 64-byte datagrams.
#   RUNS=5 SECS=3 scripts/bench/pps.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
source scripts/bench/common.sh
need sockperf iperf3 jq
WS_PORT=15231
SP_PORT=15232
IP_PORT=15233
$WS server -B 127.0.0.1 -p $WS_PORT 2>"$tmp/ws.log" & PIDS+=($!)
sockperf server -i 127.0.0.1 -p $SP_PORT >/dev/null 2>&1 & PIDS+=($!)
iperf3 -s -B 127.0.0.1 -p $IP_PORT >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
$WS pps 127.0.0.1 -p $WS_PORT -t 1 --no-save >/dev/null

: >"$tmp/rs"; : >"$tmp/ri"
echo "run  ws_received_pps  sockperf_sent_pps  iperf3_received_pps  ws/sockperf  ws/iperf3"
for i in $(seq 1 "$RUNS"); do
  w=$($WS pps 127.0.0.1 -p $WS_PORT -t "$SECS" --format json --no-save | jq -r '.summary.received_pps')
  s=$(sockperf throughput -i 127.0.0.1 -p $SP_PORT -m 64 -t "$SECS" 2>&1 | awk '/Message Rate is/ {print $(NF-1)}')
  p=$(iperf3 -c 127.0.0.1 -p $IP_PORT -u -l 64 -b 0 -t "$SECS" -J |
      jq -r '(.end.sum.packets - .end.sum.lost_packets) / .end.sum.seconds')
  rs=$(awk -v a="$w" -v b="$s" 'BEGIN {printf "%.2f", a/b}')
  ri=$(awk -v a="$w" -v b="$p" 'BEGIN {printf "%.2f", a/b}')
  printf "%3d  %-16.0f %-18.0f %-20.0f %-12s %s\n" "$i" "$w" "$s" "$p" "$rs" "$ri"
  echo "$rs" >>"$tmp/rs"; echo "$ri" >>"$tmp/ri"
done
echo "median ratio received pps: wirespeed/sockperf $(median <"$tmp/rs")  wirespeed/iperf3 $(median <"$tmp/ri")"
