#!/usr/bin/env bash
# wirespeed http (closed model, HTTP/1.1 keep-alive) against oha and hey, the same number of
# connections, all against the same Debian nginx (one worker, a 615-byte page) on loopback,
# alternating ws, oha, hey in each round. Prints each run's requests/s and client CPU seconds
# per 100k requests, and the median ratios: requests/s (higher is better) and CPU per request
# (lower is better). PIN=1 (default) puts nginx on CPU 1 and every client on CPU 0, so nginx's
# one core is the ceiling and CPU per request is what tells the clients apart; PIN=0 lets all
# share both cores, and PIN=same puts nginx and the client on CPU 0 together: there a client
# that needs less CPU leaves more to nginx and gets more requests/s. Every run is bounded by
# SECS.
#   RUNS=5 SECS=3 CONNS=32 PIN=1 scripts/bench/http_peers.sh
# oha: cargo install oha --locked; hey: apt-get install hey.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-32}
PIN=${PIN:-1}
source scripts/bench/common.sh
need nginx oha hey taskset jq
PORT=15263
case "$PIN" in
  1) server_cpu=(taskset -c 1); client_cpu=(taskset -c 0) ;;
  same) server_cpu=(taskset -c 0); client_cpu=(taskset -c 0) ;;
  *) server_cpu=(); client_cpu=() ;;
esac
start_nginx $PORT "${server_cpu[@]}"
URL="http://127.0.0.1:$PORT/"


# One unmeasured run of each.
"${client_cpu[@]}" $WS http "$URL" -c "$CONNS" -d 1 --no-save >/dev/null
"${client_cpu[@]}" oha -z 1s -c "$CONNS" --no-tui "$URL" >/dev/null
"${client_cpu[@]}" hey -z 1s -c "$CONNS" "$URL" >/dev/null
echo "run   ws_req_s  oha_req_s  hey_req_s  ws/oha  ws/hey  cpu/100k: ws  oha    hey    ws/oha ws/hey  ($CONNS connections, PIN=$PIN)"
: >"$tmp/ro"; : >"$tmp/rh"; : >"$tmp/co"; : >"$tmp/ch"
for i in $(seq 1 "$RUNS"); do
  wc=$(cpu_of "${client_cpu[@]}" $WS http "$URL" -c "$CONNS" -d "$SECS" -f json --no-save)
  ws=$(jq -r '.summary.requests_per_second' "$tmp/out"); wn=$(jq -r '.summary.responses' "$tmp/out")
  oc=$(cpu_of "${client_cpu[@]}" oha -z "${SECS}s" -c "$CONNS" --no-tui --output-format json "$URL")
  oh=$(jq -r '.summary.requestsPerSec' "$tmp/out"); on=$(jq -r '.statusCodeDistribution["200"]' "$tmp/out")
  hc=$(cpu_of "${client_cpu[@]}" hey -z "${SECS}s" -c "$CONNS" "$URL")
  he=$(awk '/Requests\/sec:/ {print $2}' "$tmp/out"); hn=$(awk '/\[200\]/ {print $2}' "$tmp/out")
  wp=$(per100k "$wc" "$wn"); op=$(per100k "$oc" "$on"); hp=$(per100k "$hc" "$hn")
  ro=$(ratio "$ws" "$oh"); rh=$(ratio "$ws" "$he"); co=$(ratio "$wp" "$op"); ch=$(ratio "$wp" "$hp")
  printf "%3d  %9.0f  %9.0f  %9.0f  %6s  %6s  %12s  %5s  %5s  %6s %6s\n" "$i" "$ws" "$oh" "$he" "$ro" "$rh" "$wp" "$op" "$hp" "$co" "$ch"
  echo "$ro" >>"$tmp/ro"; echo "$rh" >>"$tmp/rh"; echo "$co" >>"$tmp/co"; echo "$ch" >>"$tmp/ch"
done
echo "median ratio requests/s: wirespeed/oha $(median <"$tmp/ro")  wirespeed/hey $(median <"$tmp/rh")"
echo "median ratio CPU per request: wirespeed/oha $(median <"$tmp/co")  wirespeed/hey $(median <"$tmp/ch")"
