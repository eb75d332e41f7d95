#!/usr/bin/env bash
# Soak: a `wirespeed server` (with its HTTP and DNS fixtures) and a `wirespeed web` under a mix
# of every kind from many clients at once for DURATION seconds (10 minutes by default):
# bandwidth (TCP, UDP, QUIC, reverse, bidirectional, iperf3's own client), latency (TCP, UDP,
# QUIC), cps, pps, UDP ping, HTTP/1.1 and h2 load, DNS over UDP and TCP, responsiveness and
# browser-style downloads, uploads and results against the web server; CONCURRENT slow tests
# held open at once; IDLE idle and slowloris connections kept against both servers. Every 5 s
# both servers' /metrics are read (resident memory, open file descriptors, runtime tasks,
# tests and connections open). When the load has stopped and 20 s passed, scripts/soak/
# analyse.py prints the figures (docs/reliability.md keeps a run's) and fails when a server
# died, file descriptors or tasks stayed above their level before the load, tests or
# connections were left open, or a client failed for a reason other than a stated refusal.
# Loopback only; every client run is bounded by its own time or count, and the whole soak by
# DURATION.
#   DURATION=600 WARMUP=300 CONCURRENT=200 IDLE=2000 [WS=path/to/wirespeed] scripts/soak.sh
# The RSS slope is fitted to the samples after WARMUP seconds (the allocator's arenas fill for
# the first minutes of a load this varied), until the load stops. The test server's levels off
# after about 15 minutes: DURATION=1800 WARMUP=900 shows it (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-600}
WARMUP=${WARMUP:-300}
CONCURRENT=${CONCURRENT:-200}
IDLE=${IDLE:-2000}
OUT=${OUT:-target/soak}
command -v iperf3 >/dev/null || { echo "iperf3 is needed: apt-get install iperf3" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed: apt-get install curl" >&2; exit 1; }
# WS=path runs another build (an older commit's, to compare); by default this checkout's.
if [ -z "${WS:-}" ]; then
  cargo build --release -q -p wirespeed
  WS=$PWD/target/release/wirespeed
fi
rm -rf "$OUT"; mkdir -p "$OUT"
# Thousands of connections, each a file descriptor on both sides: as many as the hard limit allows.
ulimit -n "$(ulimit -Hn)"
(( IDLE + 4 * CONCURRENT + 1000 < $(ulimit -n) )) ||
  { echo "IDLE=$IDLE and CONCURRENT=$CONCURRENT need more file descriptors than $(ulimit -n)" >&2; exit 1; }

SRV=15301 HTTP=15302 DNS=15303 SRV_METRICS=15304 WEB=15305 WEB_METRICS=15306
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
$WS server -B 127.0.0.1 -p $SRV --max-tests 1000 --http $HTTP --dns $DNS \
  --metrics 127.0.0.1:$SRV_METRICS 2>"$OUT/server.log" & server_pid=$!
$WS web -B 127.0.0.1 -p $WEB --db "$OUT/web.db" --max-results 1000 \
  --metrics 127.0.0.1:$WEB_METRICS 2>"$OUT/web.log" & web_pid=$!
pids+=("$server_pid" "$web_pid")
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$SRV_METRICS/metrics" >/dev/null &&
    curl -sf "http://127.0.0.1:$WEB_METRICS/metrics" >/dev/null && break
  sleep 0.1
done

# sample PHASE: one line per server: phase, name, seconds since start, RSS, fds, tasks, tests
# open, connections open.
t0=$(date +%s)
sample() {
  local phase=$1 name port text
  for name in server web; do
    port=$SRV_METRICS; [ $name = web ] && port=$WEB_METRICS
    text=$(curl -sf --max-time 5 "http://127.0.0.1:$port/metrics") || { echo "$name died" >&2; return 1; }
    awk -v phase="$phase" -v name=$name -v t=$(( $(date +%s) - t0 )) '
      /^process_resident_memory_bytes / {rss=$2} /^process_open_fds / {fds=$2}
      /^wirespeed_runtime_alive_tasks / {tasks=$2} /^wirespeed_tests_active/ {active+=$2}
      /^wirespeed_connections_open / {conns=$2}
      END {print phase, name, t, rss, fds, tasks, active+0, conns+0}' <<<"$text"
  done >>"$OUT/samples"
}
sample before

end=$(( $(date +%s) + DURATION ))
# forever NAME CMD...: runs CMD again and again until the soak's end, noting each exit code.
forever() {
  local name=$1; shift
  while [ "$(date +%s)" -lt "$end" ]; do
    local code=0
    "$@" >/dev/null 2>>"$OUT/clients.err" || code=$?
    echo "$name $code" >>"$OUT/exits"
  done
}
T=127.0.0.1
q=(--no-save --quiet)
forever bw-tcp        $WS bw $T -p $SRV -t 5 -b 50M "${q[@]}" & pids+=($!)
forever bw-tcp-rev    $WS bw $T -p $SRV -t 5 -b 20M -P 2 -R "${q[@]}" & pids+=($!)
forever bw-udp        $WS bw $T -p $SRV -t 5 -u -b 10M "${q[@]}" & pids+=($!)
forever bw-bidir      $WS bw $T -p $SRV -t 5 -b 10M --bidir "${q[@]}" & pids+=($!)
forever bw-quic       $WS bw $T -p $SRV -t 5 -b 20M --quic "${q[@]}" & pids+=($!)
forever iperf3        iperf3 -c $T -p $SRV -t 5 -b 20M & pids+=($!)
forever latency-tcp   $WS latency $T -p $SRV -t 5 "${q[@]}" & pids+=($!)
forever latency-udp   $WS latency $T -p $SRV -t 5 -u --rate 2000 "${q[@]}" & pids+=($!)
forever latency-quic  $WS latency $T -p $SRV -t 5 --quic --rate 2000 "${q[@]}" & pids+=($!)
forever cps           $WS cps $T -p $SRV -n 500 "${q[@]}" & pids+=($!)
forever pps           $WS pps $T -p $SRV -t 3 --rate 20000 "${q[@]}" & pids+=($!)
forever ping-udp      $WS ping $T -p $SRV --udp -c 20 -i 0.05 "${q[@]}" & pids+=($!)
forever http-h1       $WS http "http://$T:$HTTP/" -r 500 -d 5 "${q[@]}" & pids+=($!)
forever http-h2       $WS http "http://$T:$HTTP/" --h2 -c 2 -r 500 -d 5 "${q[@]}" & pids+=($!)
forever dns-udp       $WS dns -s $T -p $DNS -l 5 --rate 2000 "${q[@]}" & pids+=($!)
forever dns-tcp       $WS dns -s $T -p $DNS -l 5 --rate 500 --tcp "${q[@]}" & pids+=($!)
forever rpm           $WS rpm "http://$T:$WEB/.well-known/nq" -t 6 --max-connections 2 "${q[@]}" & pids+=($!)
# Browser-style visitors from 50 addresses (each has its own budget): a download, an upload,
# the address lookup and a result, as LibreSpeed's page does.
visitor() {
  local ip=127.0.1.$1 base=http://$T:$WEB code
  while [ "$(date +%s)" -lt "$end" ]; do
    for req in "garbage.php?ckSize=2" "empty.php" "getIP.php" "results/telemetry.php"; do
      case $req in
        empty.php) code=$(curl -s -o /dev/null -w '%{http_code}' --interface "$ip" --max-time 30 \
                     --data-binary @"$OUT/upload" "$base/$req") || code=000 ;;
        results/*) code=$(curl -s -o /dev/null -w '%{http_code}' --interface "$ip" --max-time 30 \
                     -d 'dl=90&ul=20&ping=3&jitter=1' "$base/$req") || code=000 ;;
        *) code=$(curl -s -o /dev/null -w '%{http_code}' --interface "$ip" --max-time 30 "$base/$req") || code=000 ;;
      esac
      # A 429 is a refusal with a stated reason (the visitor's budget), counted as exit 4.
      case $code in 200) echo "web 0" ;; 429) echo "web 4" ;; *) echo "web-http-$code 1" ;; esac >>"$OUT/exits"
    done
    sleep 1
  done
}
head -c 2000000 /dev/urandom >"$OUT/upload"
for i in $(seq 1 50); do visitor "$i" & pids+=($!); done
# Slow tests held open at once: low-rate bandwidth and latency tests of 30 s.
for i in $(seq 1 "$CONCURRENT"); do
  if (( i % 2 )); then
    forever slow-bw      $WS bw $T -p $SRV -t 30 -b 200k "${q[@]}" & pids+=($!)
  else
    forever slow-latency $WS latency $T -p $SRV -t 30 --rate 20 "${q[@]}" & pids+=($!)
  fi
done
python3 scripts/soak/idle.py $T "$end" "$IDLE" $SRV $WEB >"$OUT/idle.txt" & pids+=($!)

while [ "$(date +%s)" -lt "$end" ]; do
  sample load || break
  sleep 5
done
load_end=$(( $(date +%s) - t0 ))
# Client runs end by their own limits (30 s at most); then the servers have time to close.
wait "${pids[@]:2}" 2>/dev/null || true
sleep 20
sample after
kill -0 "$server_pid" && kill -0 "$web_pid" || { echo "a server died" >&2; exit 1; }
cat "$OUT/idle.txt"
for port in $SRV_METRICS $WEB_METRICS; do
  curl -sf "http://127.0.0.1:$port/metrics" | grep -E '^wirespeed_(tests_refused|protocol_errors|web_budget_refusals)_total\{.*\} [1-9]' || true
done
python3 scripts/soak/analyse.py "$OUT/samples" "$OUT/exits" "$WARMUP" "$load_end" | tee "$OUT/summary.md"
