#!/usr/bin/env bash
# `wirespeed bw --quic` against wirespeed's own TCP on loopback, one stream each way, side by
# side in one run, alternating (TCP, QUIC, TCP, QUIC, ...). Server pinned to core 0 and client
# to core 1 where there are two, so each end has a core as in scripts/bench/quic_stacks.sh.
# Prints each run's goodput (the receiver's) and both ends' CPU seconds per GB, then per case
# the median ratio QUIC / TCP: what issue 25 asks to be at least 0.3. With PROFILE=1 it then
# records one more QUIC upload with `perf` on the server (the receiving end) and prints where its
# CPU went, by symbol. Loopback only; every run is bounded by -t.
# Then, unless QUINN=0, quinn's own bulk loop beside `bw --quic`: the library's ceiling here.
#   RUNS=5 SECS=5 [PROFILE=1] [QUINN=0] scripts/bench/quic_bandwidth.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-5}
source scripts/bench/common.sh
need jq
PORT=15251
SRV=() CLI=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then SRV=(taskset -c 0) CLI=(taskset -c 1); fi
"${SRV[@]}" $WS server -B 127.0.0.1 -p $PORT 2>"$tmp/server.log" & server=$!
PIDS+=($server)
sleep 0.5
for p in "" --quic; do "${CLI[@]}" $WS bw 127.0.0.1 -p $PORT $p -t 1 --no-save >/dev/null; done

# one ARGS...: a run; prints "received_bps client_cpu_s_per_GB server_cpu_s_per_GB".
one() {
  # shellcheck disable=SC2068
  "${CLI[@]}" $WS bw 127.0.0.1 -p $PORT -t "$SECS" --format json --no-save $@ >"$tmp/run.json"
  jq -r '.summary as $s | ($s.duration_ns / 1e9) as $t | ($s.received_bytes / 1e9) as $gb
    | [$s.received_bps, $s.client_cpu.total_ratio * $t / $gb, $s.server_cpu.total_ratio * $t / $gb]
    | @tsv' \
    "$tmp/run.json"
}

echo "case       run  tcp_bps          quic_bps         ratio  tcp_cpu_s/GB(c,s)  quic_cpu_s/GB(c,s)"
for c in "upload|" "download|-R"; do
  IFS='|' read -r name args <<<"$c"
  : >"$tmp/ratios"
  for i in $(seq 1 "$RUNS"); do
    read -r tb tc ts <<<"$(one $args)"
    read -r qb qc qs <<<"$(one --quic $args)"
    r=$(ratio "$qb" "$tb")
    printf "%-10s %3d  %-16.0f %-16.0f %-6s %.2f, %.2f         %.2f, %.2f\n" \
      "$name" "$i" "$tb" "$qb" "$r" "$tc" "$ts" "$qc" "$qs"
    echo "$r" >>"$tmp/ratios"
  done
  echo "$name median ratio QUIC/TCP: $(median <"$tmp/ratios")"
done

# quinn's own bulk loop (scripts/bench/quic_stacks: one stream, client to server, no test
# around it) against `bw --quic` upload, alternating: how close wirespeed's QUIC ends come to
# what the library does alone. Skipped with QUINN=0 (it builds quiche too, which needs cmake).
if [ "${QUINN:-1}" != 0 ]; then
  need cmake
  (cd scripts/bench/quic_stacks && cargo build --release -q)
  BARE=$PWD/scripts/bench/quic_stacks/target/release/quic-stacks
  : >"$tmp/bare"
  echo "quinn's own loop against bw --quic (upload, ${SECS} s of bytes at the QUIC rate):"
  for i in $(seq 1 "$RUNS"); do
    read -r qb _ _ <<<"$(one --quic)"
    bytes=$(awk -v b="$qb" -v s="$SECS" 'BEGIN {printf "%d", b * s / 8}')
    rm -rf "$tmp/bare.d" && mkdir -p "$tmp/bare.d"
    "${SRV[@]}" "$BARE" server quinn 127.0.0.1:$((PORT + 1)) "$tmp/bare.d" &
    bare_server=$!
    for _ in $(seq 100); do [ -e "$tmp/bare.d/cert.der" ] && break; sleep 0.05; done
    bb=$("${CLI[@]}" "$BARE" client quinn 127.0.0.1:$((PORT + 1)) "$tmp/bare.d" "$bytes" | awk '{print $1}')
    wait "$bare_server"
    r=$(ratio "$qb" "$bb")
    printf "  run %d: bw --quic %.2f Gbit/s, quinn alone %.2f Gbit/s, ratio %s\n" "$i" \
      "$(awk -v b="$qb" 'BEGIN {print b / 1e9}')" "$(awk -v b="$bb" 'BEGIN {print b / 1e9}')" "$r"
    echo "$r" >>"$tmp/bare"
  done
  echo "median ratio bw --quic / quinn alone: $(median <"$tmp/bare")"
fi

if [ -n "${PROFILE:-}" ]; then
  need perf
  perf record -q -g -o "$tmp/perf.data" -p "$server" -- sleep "$((SECS + 1))" 2>/dev/null &
  rec=$!
  sleep 0.3
  "${CLI[@]}" $WS bw 127.0.0.1 -p $PORT -t "$SECS" --quic --no-save >/dev/null
  wait "$rec" || true
  echo "QUIC upload, server (receiver) CPU by symbol:"
  perf report -q -i "$tmp/perf.data" --no-children --sort dso,symbol --percent-limit 1.5 \
    --stdio 2>/dev/null | grep -v '^$' | grep -v '^ *|' | grep -v '^ *-' | head -30
fi
