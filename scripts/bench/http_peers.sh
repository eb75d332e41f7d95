#!/usr/bin/env bash
# wirespeed http (closed model, HTTP/1.1 keep-alive) against oha and hey, the same number of
# connections, all against the same Debian nginx (one worker, a 615-byte page) on loopback,
# alternating ws, oha, hey in each round. Prints each run's requests/s and the median ratios
# wirespeed/oha and wirespeed/hey (higher is better). nginx is pinned to CPU 1 and every
# client to CPU 0 (taskset), so each client gets the same single core. Runs bounded by SECS.
#   RUNS=5 SECS=3 CONNS=32 scripts/bench/http_peers.sh
# oha: cargo install oha --locked; hey: apt-get install hey.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-32}
source scripts/bench/common.sh
need nginx oha hey taskset jq
PORT=15263
start_nginx $PORT taskset -c 1
URL="http://127.0.0.1:$PORT/"

# One unmeasured run of each.
taskset -c 0 $WS http "$URL" -c "$CONNS" -d 1 --no-save >/dev/null
taskset -c 0 oha -z 1s -c "$CONNS" --no-tui "$URL" >/dev/null
taskset -c 0 hey -z 1s -c "$CONNS" "$URL" >/dev/null
echo "run   ws_req_s  oha_req_s  hey_req_s  ws/oha  ws/hey  ($CONNS connections)"
: >"$tmp/oha"; : >"$tmp/hey"
for i in $(seq 1 "$RUNS"); do
  ws=$(taskset -c 0 $WS http "$URL" -c "$CONNS" -d "$SECS" -f json --no-save | jq -r '.summary.requests_per_second')
  oh=$(taskset -c 0 oha -z "${SECS}s" -c "$CONNS" --no-tui -j "$URL" | jq -r '.summary.requestsPerSec')
  he=$(taskset -c 0 hey -z "${SECS}s" -c "$CONNS" "$URL" | awk '/Requests\/sec:/ {print $2}')
  ro=$(awk -v a="$ws" -v b="$oh" 'BEGIN {printf "%.3f", a/b}')
  rh=$(awk -v a="$ws" -v b="$he" 'BEGIN {printf "%.3f", a/b}')
  printf "%3d  %9.0f  %9.0f  %9.0f  %6s  %6s\n" "$i" "$ws" "$oh" "$he" "$ro" "$rh"
  echo "$ro" >>"$tmp/oha"; echo "$rh" >>"$tmp/hey"
done
echo "median ratio requests/s: wirespeed/oha $(median <"$tmp/oha")  wirespeed/hey $(median <"$tmp/hey")"
