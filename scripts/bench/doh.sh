#!/usr/bin/env bash
# wirespeed dns --doh against dnsperf -m doh (Debian's dnsperf), side by side on the same DoH
# server: wirespeed's DNS fixture (`server --dns --dns-secure`, HTTP/2 over TLS at /dns-query)
# and CoreDNS's (scripts/peers.sh builds it), each pinned to CPU 1 with the generator on CPU 0.
# Alternates ws and dnsperf in each round at -c CLIENTS connections and dnsperf's default of
# 100 queries in flight, GET (dnsperf's default) then POST. Prints each run's answered
# queries/s and the generator's CPU seconds per million answers, and per case the median ratio
# ws/dnsperf of queries/s (what issue 25 asks to be at least 1.0) and of CPU per answer.
# Every run is bounded by SECS (plus the wait for the last answers); loopback only.
#   RUNS=3 SECS=3 CLIENTS=4 [SERVERS="fixture coredns"] scripts/bench/doh.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}
SECS=${SECS:-3}
CLIENTS=${CLIENTS:-4}
SERVERS=${SERVERS:-"fixture coredns"}
source scripts/bench/common.sh
need dnsperf taskset jq openssl
PLAIN=15363
DOH=15364

# A certificate for 127.0.0.1 (an end entity: webpki refuses a CA certificate as one), and the zone and queries benches/dns.toml asks (the DNS fixture's).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext basicConstraints=critical,CA:FALSE \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
{
  printf '$ORIGIN example.test.\n$TTL 3600\n'
  printf '@ IN SOA ns1.example.test. hostmaster.example.test. ( 1 7200 3600 1209600 3600 )\n'
  printf '@ IN NS ns1.example.test.\nns1 IN A 127.0.0.1\nwww IN A 192.0.2.10\n'
  for i in $(seq 1 1000); do printf 'host%d IN A 10.0.%d.%d\n' "$i" $((i / 256)) $((i % 256)); done
} >"$tmp/example.test.zone"
{
  printf 'www.example.test A\n'
  for i in $(seq 1 1000); do printf 'host%d.example.test A\n' "$i"; done
  printf 'nx1.example.test A\n'
} >"$tmp/queries.txt"

# start SERVER: its DoH on 127.0.0.1:$DOH, pinned to CPU 1; waits until it answers.
start() {
  case "$1" in
    fixture)
      taskset -c 1 $WS server -B 127.0.0.1 -p 15365 --dns $PLAIN --zone "$tmp/example.test.zone" \
        --dns-secure $DOH --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" 2>"$tmp/server.log" &
      server=$! ;;
    coredns)
      need coredns
      printf 'https://example.test:%s {\n  bind 127.0.0.1\n  tls %s %s\n  file %s example.test\n}\n' \
        $DOH "$tmp/cert.pem" "$tmp/key.pem" "$tmp/example.test.zone" >"$tmp/Corefile"
      taskset -c 1 coredns -conf "$tmp/Corefile" -quiet >/dev/null 2>&1 &
      server=$! ;;
  esac
  PIDS+=($server)
  for _ in $(seq 100); do
    ws_doh -n 1 -t 0.2 -f json 2>/dev/null | jq -e '.summary.completed > 0' >/dev/null && return
    sleep 0.1
  done
  echo "$1 did not answer DoH on $DOH" >&2; exit 1
}
ws_doh() { $WS dns --doh "https://127.0.0.1:$DOH/dns-query" --cacert "$tmp/cert.pem" -d "$tmp/queries.txt" --no-save "$@"; }

for name in $SERVERS; do
  start "$name"
  for method in GET POST; do
    post=(); [ $method = POST ] && post=(--doh-post)
    : >"$tmp/qps" && : >"$tmp/cpu"
    echo "== $name, DoH $method, -c $CLIENTS: run  ws_qps  dnsperf_qps  ratio  cpu/M: ws  dnsperf"
    for i in $(seq 1 "$RUNS"); do
      wc=$(cpu_of taskset -c 0 "$WS" dns --doh "https://127.0.0.1:$DOH/dns-query" --cacert "$tmp/cert.pem" \
        -d "$tmp/queries.txt" --no-save "${post[@]}" -c "$CLIENTS" -l "$SECS" -f json)
      wq=$(jq -r '.summary.queries_per_second' "$tmp/out"); wn=$(jq -r '.summary.completed' "$tmp/out")
      dc=$(cpu_of taskset -c 0 dnsperf -m doh -s 127.0.0.1 -p $DOH -O doh-uri="https://127.0.0.1:$DOH/dns-query" \
        -O doh-method=$method -d "$tmp/queries.txt" -c "$CLIENTS" -l "$SECS")
      dq=$(awk '/Queries per second:/ {print $4}' "$tmp/out"); dn=$(awk '/Queries completed:/ {print $3}' "$tmp/out")
      wm=$(per100k "$wc" "$wn"); dm=$(per100k "$dc" "$dn")
      printf "%3d  %10.0f  %10.0f  %s  %8.3f  %8.3f\n" "$i" "$wq" "$dq" "$(ratio "$wq" "$dq")" \
        "$(awk -v x="$wm" 'BEGIN {print x * 10}')" "$(awk -v x="$dm" 'BEGIN {print x * 10}')"
      echo "$(ratio "$wq" "$dq")" >>"$tmp/qps"; echo "$(ratio "$wm" "$dm")" >>"$tmp/cpu"
    done
    echo "$name DoH $method median ratio ws/dnsperf: queries/s $(median <"$tmp/qps"), CPU per answer $(median <"$tmp/cpu")"
  done
  kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true
done
