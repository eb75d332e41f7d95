#!/usr/bin/env bash
# wirespeed cps --external vs wrk with "Connection: close", both against the same Debian nginx
# (one worker) on loopback, side by side, alternating. Prints each run and the median ratio
# of wirespeed's connections/s to wrk's requests/s (higher is better): each wrk request is a
# new connection, so both count the connections nginx can take. Every run is bounded by -d/-t.
#   RUNS=5 SECS=3 CONNS=8 PIN=1 scripts/bench/cps.sh
# PIN=1 pins nginx to CPU 1 and both clients to CPU 0 with taskset.
# Then, against `wirespeed server`: the default (FIN) mode, in which the server closes first and
# keeps the TIME_WAIT, against --rst, alternating; the median ratio default / --rst (the goal:
# within 10 %), and --rst against the server over wrk's Connection: close rate against nginx.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-8}
PIN=${PIN:-0}
source scripts/bench/common.sh
need nginx wrk jq
PORT=15241
server_pin=(); client_pin=()
if [ "$PIN" = 1 ]; then need taskset; server_pin=(taskset -c 1); client_pin=(taskset -c 0); fi
start_nginx $PORT "${server_pin[@]}"

ws() { "${client_pin[@]}" $WS cps -x "127.0.0.1:$PORT" -P "$CONNS" -t "$1" --format json --no-save; }
wrk_run() { "${client_pin[@]}" wrk -t 1 -c "$CONNS" -d "${1}s" -H "Connection: close" "http://127.0.0.1:$PORT/"; }

# One unmeasured run of each.
ws 1 >/dev/null
wrk_run 1 >/dev/null
echo "run  wirespeed_cps  wrk_req_s  ratio  (pin=$PIN, $CONNS connections)"
: >"$tmp/ratios"
for i in $(seq 1 "$RUNS"); do
  w=$(ws "$SECS" | jq -r '.summary.connections_per_second')
  k=$(wrk_run "$SECS" | awk '/^Requests\/sec:/ {print $2}')
  r=$(awk -v a="$w" -v b="$k" 'BEGIN {printf "%.3f", a/b}')
  printf "%3d  %13.0f  %9.0f  %s\n" "$i" "$w" "$k" "$r"
  echo "$r" >>"$tmp/ratios"
done
echo "median ratio wirespeed cps / wrk Connection: close req/s: $(median <"$tmp/ratios")"

# Against wirespeed server (pinned like nginx): FIN (server closes first) vs --rst.
WPORT=15242
"${server_pin[@]}" $WS server -B 127.0.0.1 -p $WPORT 2>/dev/null & PIDS+=($!)
sleep 0.5
wsrv() { "${client_pin[@]}" $WS cps "127.0.0.1:$WPORT" -P "$CONNS" -t "$1" "${@:2}" --format json --no-save; }
wsrv 1 >/dev/null
wsrv 1 --rst >/dev/null
echo "run  fin_cps  rst_cps  fin/rst  rst/wrk  (against wirespeed server; wrk against nginx)"
: >"$tmp/fin_rst"; : >"$tmp/rst_wrk"
for i in $(seq 1 "$RUNS"); do
  f=$(wsrv "$SECS" | jq -r '.summary.connections_per_second')
  r=$(wsrv "$SECS" --rst | jq -r '.summary.connections_per_second')
  k=$(wrk_run "$SECS" | awk '/^Requests\/sec:/ {print $2}')
  fr=$(awk -v a="$f" -v b="$r" 'BEGIN {printf "%.3f", a/b}')
  rk=$(awk -v a="$r" -v b="$k" 'BEGIN {printf "%.3f", a/b}')
  printf "%3d  %7.0f  %7.0f  %7s  %7s\n" "$i" "$f" "$r" "$fr" "$rk"
  echo "$fr" >>"$tmp/fin_rst"; echo "$rk" >>"$tmp/rst_wrk"
done
echo "median ratio default (server closes first) / --rst, against wirespeed server: $(median <"$tmp/fin_rst")"
echo "median ratio --rst against wirespeed server / wrk Connection: close against nginx: $(median <"$tmp/rst_wrk")"
