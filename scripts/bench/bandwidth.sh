#!/usr/bin/env bash
# wirespeed vs Debian's iperf3 on loopback, side by side in one run, alternating A B A B.
# Prints each run and the median ratio wirespeed / iperf3 per case, plus the wirespeed
# server's peak RSS during the 4-stream TCP runs. Loopback only; every run is bounded by -t.
# Each tool first runs once unmeasured: the first test after a server starts is reliably slow.
#   RUNS=3 SECS=5 [ONLY=tcp-1] [PIN=1] scripts/bench/bandwidth.sh
# PIN=1 pins both servers to CPU 1 and both clients to CPU 0 (taskset), so neither tool's
# sender and receiver fight for one core; unpinned is the default because that is how people run.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}
SECS=${SECS:-5}
source scripts/bench/common.sh
need iperf3 jq
WS_PORT=15201
IP_PORT=15202
SRV=(); CLI=()
if [ -n "${PIN:-}" ]; then SRV=(taskset -c 1); CLI=(taskset -c 0); fi
"${SRV[@]}" $WS server -B 127.0.0.1 -p $WS_PORT 2>"$tmp/ws.log" & ws_pid=$!
PIDS+=($ws_pid)
"${SRV[@]}" iperf3 -s -B 127.0.0.1 -p $IP_PORT >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
"${CLI[@]}" $WS bw 127.0.0.1 -p $WS_PORT -t 1 --no-save >/dev/null
"${CLI[@]}" iperf3 -c 127.0.0.1 -p $IP_PORT -t 1 >/dev/null

# Each case: name, wirespeed args, iperf3 args, jq path for wirespeed, jq path for iperf3.
ws_recv='.summary.received_bps'
ip_tcp_recv='.end.sum_received.bits_per_second'
ip_udp_recv='.end.sum_received.bits_per_second // .end.sum.bits_per_second'
cases=(
  "tcp-1|-t $SECS|-t $SECS|$ws_recv|$ip_tcp_recv"
  "tcp-1-zerocopy|-Z -t $SECS|-Z -t $SECS|$ws_recv|$ip_tcp_recv"
  "tcp-4|-P 4 -t $SECS|-P 4 -t $SECS|$ws_recv|$ip_tcp_recv"
  "udp-1400-unlimited|-u -b 0 -l 1400 -t $SECS|-u -b 0 -l 1400 -t $SECS|$ws_recv|$ip_udp_recv"
  "udp-1G-rate|-u -b 1G -l 1400 -t $SECS|-u -b 1G -l 1400 -t $SECS|$ws_recv|$ip_udp_recv"
)

peak_rss_kib() { awk '/VmHWM/ {print $2}' /proc/$ws_pid/status; }


echo "case                   run  wirespeed_bps     iperf3_bps        ratio   extra"
for c in "${cases[@]}"; do
  [ -n "${ONLY:-}" ] && [[ "$c" != "$ONLY"* ]] && continue
  IFS='|' read -r name ws_args ip_args ws_jq ip_jq <<<"$c"
  : >"$tmp/ratios"
  for i in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    "${CLI[@]}" $WS bw 127.0.0.1 -p $WS_PORT $ws_args --format json --no-save >"$tmp/ws.json"
    # shellcheck disable=SC2086
    "${CLI[@]}" iperf3 -c 127.0.0.1 -p $IP_PORT $ip_args -J >"$tmp/ip.json"
    w=$(jq -r "$ws_jq" "$tmp/ws.json")
    p=$(jq -r "$ip_jq" "$tmp/ip.json")
    r=$(awk -v w="$w" -v p="$p" 'BEGIN {printf "%.3f", w/p}')
    extra=""
    case $name in
      udp-1G-rate)
        wl=$(jq -r '.summary.loss_ratio' "$tmp/ws.json")
        il=$(jq -r '.end.sum.lost_percent / 100' "$tmp/ip.json")
        ws_sent=$(jq -r '.summary.sent_bps' "$tmp/ws.json")
        extra="ws_sent/target=$(awk -v s="$ws_sent" 'BEGIN {printf "%.4f", s/1e9}') loss ws=$wl iperf3=$il"
        ;;
      tcp-4) extra="ws_server_peak_rss=$(peak_rss_kib) KiB" ;;
    esac
    printf "%-22s %3d  %-15.0f %-15.0f %-7s %s\n" "$name" "$i" "$w" "$p" "$r" "$extra"
    echo "$r" >>"$tmp/ratios"
  done
  echo "$name median ratio: $(median <"$tmp/ratios")"
done
echo "wirespeed server peak RSS over the whole run: $(peak_rss_kib) KiB"
