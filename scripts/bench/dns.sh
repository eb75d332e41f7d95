#!/usr/bin/env bash
# wirespeed dns against dnsperf, side by side on the same servers: Debian's unbound, nsd and
# knot (one worker each, rate limiting off, authoritative for a test zone of 1000 hosts), at
# -c 1, 8 and 64, alternating ws and dnsperf in each round; then the built-in fixture
# (`wirespeed server --dns`). The server is pinned to CPU 1 and the generator to CPU 0, so a
# server's one core is its ceiling and the generator's CPU seconds per million answered
# queries is what tells the generators apart. Both use their defaults otherwise (-q 100,
# -t 5, UDP). Prints each run's answered queries/s and CPU per million answers, and the
# median ratios ws/dnsperf: queries/s (higher is better), CPU per answer (lower is better).
# Every run is bounded by SECS (plus the wait for the last answers).
#   RUNS=3 SECS=3 CLIENTS="1 8 64" SERVERS="unbound nsd knot" scripts/bench/dns.sh
# dnsperf, unbound, nsd, knot: apt-get install dnsperf unbound nsd knot
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}
SECS=${SECS:-3}
CLIENTS=${CLIENTS:-"1 8 64"}
SERVERS=${SERVERS:-"unbound nsd knot"}
source scripts/bench/common.sh
need dnsperf taskset jq
[ -x /usr/sbin/unbound ] && [ -x /usr/sbin/nsd ] && [ -x /usr/sbin/knotd ] ||
  { echo "unbound, nsd and knot are needed: apt-get install unbound nsd knot" >&2; exit 1; }
PORT=15353

# The zone and the query file of shared/reference/dns.md §3.1: 1000 hosts, apex records, a
# name that does not exist (NXDOMAIN) and a type a name lacks (NODATA).
{
  printf '$ORIGIN example.test.\n$TTL 3600\n'
  printf '@ IN SOA ns1.example.test. hostmaster.example.test. ( 1 7200 3600 1209600 3600 )\n'
  printf '@ IN NS ns1.example.test.\nns1 IN A 127.0.0.1\n@ IN A 192.0.2.1\nwww IN A 192.0.2.10\n'
  printf 'mail IN A 192.0.2.20\n@ IN MX 10 mail.example.test.\n'
  for i in $(seq 1 1000); do printf 'host%d IN A 10.0.%d.%d\n' "$i" $((i / 256)) $((i % 256)); done
} >"$tmp/example.test.zone"
{
  printf '; queries for the test zone\nwww.example.test A\nexample.test SOA\nexample.test MX\n'
  for i in $(seq 1 1000); do printf 'host%d.example.test A\n' "$i"; done
  printf 'nx1.example.test A\nwww.example.test AAAA\n'
} >"$tmp/queries.txt"

# start_server NAME: starts it on CPU 1 on 127.0.0.1:$PORT; waits until it answers.
start_server() {
  local d="$tmp/$1"; mkdir -p "$d"
  case "$1" in
    unbound)
      cat >"$d/unbound.conf" <<CONF
server:
  interface: 127.0.0.1
  port: $PORT
  do-ip6: no
  num-threads: 1
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "$d"
  pidfile: "$d/unbound.pid"
  use-syslog: no
  logfile: "$d/unbound.log"
  verbosity: 0
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "test." nodefault
auth-zone:
  name: "example.test"
  zonefile: "$tmp/example.test.zone"
  for-downstream: yes
  for-upstream: no
  fallback-enabled: no
remote-control:
  control-enable: no
CONF
      taskset -c 1 unbound -d -c "$d/unbound.conf" & PIDS+=($!) ;;
    nsd)
      cat >"$d/nsd.conf" <<CONF
server:
  ip-address: 127.0.0.1@$PORT
  do-ip6: no
  server-count: 1
  username: ""
  chroot: ""
  zonesdir: "$tmp"
  database: ""
  zonelistfile: "$d/zone.list"
  xfrdfile: "$d/xfrd.state"
  xfrdir: "$d"
  pidfile: "$d/nsd.pid"
  logfile: "$d/nsd.log"
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
remote-control:
  control-enable: no
zone:
  name: "example.test"
  zonefile: "example.test.zone"
CONF
      taskset -c 1 nsd -d -c "$d/nsd.conf" & PIDS+=($!) ;;
    knot)
      mkdir -p "$d/db"
      cat >"$d/knot.conf" <<CONF
server:
    rundir: "$d"
    listen: 127.0.0.1@$PORT
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
log:
  - target: stderr
    any: error
database:
    storage: "$d/db"
template:
  - id: default
    storage: "$tmp"
    file: "%s.zone"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: example.test
CONF
      taskset -c 1 knotd -c "$d/knot.conf" & PIDS+=($!) ;;
    fixture)
      taskset -c 1 $WS server -B 127.0.0.1 -p $((PORT + 1)) --dns $PORT 2>"$d/log" & PIDS+=($!) ;;
  esac
  for _ in $(seq 1 100); do
    if $WS dns -p $PORT -n 1 -t 0.1 -f json --no-save 2>/dev/null | jq -e '.summary.completed > 0' >/dev/null; then
      return
    fi
    sleep 0.1
  done
  echo "$1 did not start" >&2; exit 1
}

stop_server() { kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'; sleep 0.3; }

per_m() { awk -v c="$1" -v n="$2" 'BEGIN {printf "%.3f", c / n * 1000000}'; }

summary=()
for server in $SERVERS; do
  start_server "$server"
  for c in $CLIENTS; do
    # One unmeasured run of each.
    taskset -c 0 $WS dns -p $PORT -d "$tmp/queries.txt" -c "$c" -l 1 --no-save >/dev/null
    taskset -c 0 dnsperf -s 127.0.0.1 -p $PORT -d "$tmp/queries.txt" -c "$c" -l 1 >/dev/null 2>&1
    echo "== $server, -c $c: run  ws_qps  dnsperf_qps  ratio  cpu/M: ws  dnsperf  ratio  (lost: ws dnsperf)"
    : >"$tmp/rq"; : >"$tmp/rc"
    for i in $(seq 1 "$RUNS"); do
      wc=$(cpu_of taskset -c 0 $WS dns -p $PORT -d "$tmp/queries.txt" -c "$c" -l "$SECS" -f json --no-save)
      wq=$(jq -r '.summary.queries_per_second' "$tmp/out"); wn=$(jq -r '.summary.completed' "$tmp/out")
      wl=$(jq -r '.summary.lost' "$tmp/out")
      dc=$(cpu_of taskset -c 0 dnsperf -s 127.0.0.1 -p $PORT -d "$tmp/queries.txt" -c "$c" -l "$SECS")
      dq=$(awk '/Queries per second:/ {print $4}' "$tmp/out"); dn=$(awk '/Queries completed:/ {print $3}' "$tmp/out")
      dl=$(awk '/Queries lost:/ {print $3}' "$tmp/out")
      wp=$(per_m "$wc" "$wn"); dp=$(per_m "$dc" "$dn"); rq=$(ratio "$wq" "$dq"); rc=$(ratio "$wp" "$dp")
      printf "%3d  %9.0f  %9.0f  %6s  %8s  %8s  %6s  (%s %s)\n" "$i" "$wq" "$dq" "$rq" "$wp" "$dp" "$rc" "$wl" "$dl"
      echo "$rq" >>"$tmp/rq"; echo "$rc" >>"$tmp/rc"
    done
    line="$server -c $c: median ratio queries/s $(median <"$tmp/rq"), CPU per answer $(median <"$tmp/rc")"
    echo "$line"; summary+=("$line")
  done
  stop_server
done

# The fixture: how many answers a second wirespeed gets from its own server, and dnsperf.
start_server fixture
echo "== fixture: run  ws_qps  dnsperf_qps  ratio"
: >"$tmp/fq"
for i in $(seq 1 "$RUNS"); do
  taskset -c 0 $WS dns -p $PORT -d "$tmp/queries.txt" -l "$SECS" -f json --no-save >"$tmp/out"
  wq=$(jq -r '.summary.queries_per_second' "$tmp/out")
  taskset -c 0 dnsperf -s 127.0.0.1 -p $PORT -d "$tmp/queries.txt" -l "$SECS" >"$tmp/out" 2>&1
  dq=$(awk '/Queries per second:/ {print $4}' "$tmp/out")
  printf "%3d  %9.0f  %9.0f  %6s\n" "$i" "$wq" "$dq" "$(ratio "$wq" "$dq")"
  echo "$wq" >>"$tmp/fq"
done
stop_server
summary+=("fixture: median answered queries/s $(median <"$tmp/fq")")
echo; printf '%s\n' "${summary[@]}"
