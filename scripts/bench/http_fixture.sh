#!/usr/bin/env bash
# The HTTP fixture (`wirespeed server --http`) vs Debian's nginx with one worker, both serving
# a 615-byte body on loopback, measured with wrk (-t1, keep-alive), alternating. Both servers
# are pinned to CPU 1 and wrk to CPU 0 with taskset, so each server has one core (the fixture
# would otherwise spread over both). Prints each run and the median ratio fixture/nginx of
# requests/s (higher is better). Every run is bounded by -d.
#   RUNS=5 SECS=3 CONNS=32 scripts/bench/http_fixture.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
CONNS=${CONNS:-32}
source scripts/bench/common.sh
need nginx wrk taskset
NGINX_PORT=15251
WS_PORT=15252
HTTP_PORT=15253
start_nginx $NGINX_PORT taskset -c 1
taskset -c 1 $WS server -B 127.0.0.1 -p $WS_PORT --http $HTTP_PORT 2>"$tmp/ws.log" & PIDS+=($!)
sleep 0.5

rps() { taskset -c 0 wrk -t 1 -c "$CONNS" -d "${2}s" "http://127.0.0.1:$1/" | awk '/^Requests\/sec:/ {print $2}'; }

# One unmeasured run of each.
rps $NGINX_PORT 1 >/dev/null
rps $HTTP_PORT 1 >/dev/null
echo "run  fixture_req_s  nginx_req_s  ratio  ($CONNS connections)"
: >"$tmp/ratios"
for i in $(seq 1 "$RUNS"); do
  f=$(rps $HTTP_PORT "$SECS")
  n=$(rps $NGINX_PORT "$SECS")
  r=$(awk -v a="$f" -v b="$n" 'BEGIN {printf "%.3f", a/b}')
  printf "%3d  %13.0f  %11.0f  %s\n" "$i" "$f" "$n" "$r"
  echo "$r" >>"$tmp/ratios"
done
echo "median ratio fixture / nginx (1 worker) req/s: $(median <"$tmp/ratios")"
