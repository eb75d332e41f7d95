#!/usr/bin/env bash
# wirespeed against Microsoft's ethr (built from its source snapshot by scripts/peers.sh) on
# loopback: the tests of the seed's ethr practice, each tool against its own server. TCP bandwidth
# on one stream (ethr -t b); connections/s on one thread (-t c; closed with RST, as ethr's client
# does); UDP packets/s on one thread (-t p -p udp: ethr always sends 1-byte payloads, its source
# says, unpaced, datagram by datagram, and its client counts those sent; `wirespeed pps` sends
# 16-byte ones, the least that carries its sequence number, also datagram by datagram with no GSO,
# and the figure compared is its rate sent, like ethr's); TCP round-trip latency p50 (-t l:
# batches of 1000 back-to-back round trips). Servers are pinned to core 1 and clients to core 0,
# so that neither tool's client and server fight over one core. Runs alternate (wirespeed, ethr,
# wirespeed, ethr, ...): RUNS of SECS seconds each. Prints each run's figure and the client's and
# server's CPU seconds, and per case the median ratio wirespeed / ethr of the figure and of CPU
# per unit of work (client + server). ethr's figures are the median of its per-second lines (its
# log's TestResult rows, the first second left out); its latency comes from its text table,
# because its JSON log shifts the percentile columns.
#   RUNS=5 SECS=5 scripts/bench/ethr.sh        (ONLY=latency: the cases whose name has it)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-5}
source scripts/bench/common.sh
need taskset jq
command -v ethr >/dev/null || { echo "ethr is needed: scripts/peers.sh builds it" >&2; exit 1; }
WS_PORT=15331
ETHR_PORT=15332

# cpu_seconds PID: a process's user + system CPU so far, in seconds.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

# unit NUMBER[K|M|G|T][us|ms|s]: ethr's printed figure as a plain number (bits, counts, µs).
unit() {
  awk -v s="$1" 'BEGIN {
    m = 1; if (s ~ /us$/) { sub(/us$/, "", s) } else if (s ~ /ms$/) { sub(/ms$/, "", s); m = 1000 }
    else if (s ~ /s$/) { sub(/s$/, "", s); m = 1000000 }
    if (s ~ /K$/) m *= 1e3; else if (s ~ /M$/) m *= 1e6; else if (s ~ /G$/) m *= 1e9; else if (s ~ /T$/) m *= 1e12
    sub(/[KMGT]$/, "", s); printf "%.6g\n", s * m }'
}

# A fresh server per run: ethr's keeps accepted connections open past what its fd limit allows
# after a connections/s run ("accept4: too many open files").
start_servers() {
  taskset -c 1 "$WS" server -B 127.0.0.1 -p "$WS_PORT" 2>"$tmp/ws.log" & WS_PID=$!
  (cd "$tmp" && exec taskset -c 1 ethr -s -ip 127.0.0.1 -port "$ETHR_PORT" -no >"$tmp/ethrs.txt" 2>&1) & ETHR_PID=$!
  PIDS+=("$WS_PID" "$ETHR_PID")
  sleep 0.5
}
stop_servers() { kill "$WS_PID" "$ETHR_PID" 2>/dev/null || true; wait "$WS_PID" "$ETHR_PID" 2>/dev/null || true; }

# ws_run FILTER ARGS...: one wirespeed run; prints "figure client_cpu server_cpu".
ws_run() {
  local pick=$1; shift
  local before after cpu
  before=$(cpu_seconds "$WS_PID")
  cpu=$(cpu_of taskset -c 0 "$WS" "$@" -p "$WS_PORT" -t "$SECS" -f json --no-save)
  after=$(cpu_seconds "$WS_PID")
  # The round trips a latency run made (0 for the others), for its CPU per round trip.
  echo "$(jq -r "$pick" "$tmp/out") $cpu $(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}') $(jq -r '.summary.received // 0' "$tmp/out")"
}

# ethr_run FIELD ARGS...: one ethr run; FIELD names its log's per-second figure (or "latency"
# for the p50 column of its text table); prints "median-figure client_cpu server_cpu".
ethr_run() {
  local field=$1; shift
  local before after cpu figure trips=0
  before=$(cpu_seconds "$ETHR_PID")
  rm -f "$tmp/ethrc.log"
  cpu=$(cpu_of taskset -c 0 ethr -c 127.0.0.1 -port "$ETHR_PORT" -d "${SECS}s" -dp 2 -o "$tmp/ethrc.log" "$@")
  after=$(cpu_seconds "$ETHR_PID")
  if [ "$field" = latency ]; then
    # Rows of Avg, Min, 50%, ... after the header; the p50 column, in µs.
    figure=$(awk '/^ *[0-9.]+[um]?s +[0-9.]+[um]?s/ {print $3}' "$tmp/out" | while read -r v; do unit "$v"; done | median)
    # Each row is a batch of 1000 round trips (ethr's -i default).
    trips=$(awk '/^ *[0-9.]+[um]?s +[0-9.]+[um]?s/ {n++} END {print n * 1000}' "$tmp/out")
  else
    figure=$(jq -r "select(.Type == \"TestResult\") | .$field" "$tmp/ethrc.log" | tail -n +2 |
      while read -r v; do unit "$v"; done | median)
  fi
  echo "$figure $cpu $(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}') $trips"
}

# bench NAME UNIT WS_FILTER "WS ARGS" ETHR_FIELD "ETHR ARGS" [lower]: RUNS alternating pairs;
# "lower" when a smaller figure is better (latency).
bench() {
  local name=$1 what=$2 pick=$3 ws_args=$4 field=$5 ethr_args=$6 better=${7:-higher}
  [[ "$name" == *"${ONLY:-}"* ]] || return 0
  echo "$name ($what; wirespeed $ws_args | ethr $ethr_args):"
  printf '  %-3s %14s %8s %8s   %14s %8s %8s\n' run wirespeed client server ethr client server
  local i w e ratios=() cpu_ratios=()
  for i in $(seq 1 "$RUNS"); do
    start_servers
    # shellcheck disable=SC2086
    w=$(ws_run "$pick" $ws_args)
    # shellcheck disable=SC2086
    e=$(ethr_run "$field" $ethr_args)
    stop_servers
    read -r wf wc wsv wn <<<"$w"
    read -r ef ec esv en <<<"$e"
    printf '  %-3s %14.6g %8.2f %8.2f   %14.6g %8.2f %8.2f\n' "$i" "$wf" "$wc" "$wsv" "$ef" "$ec" "$esv"
    ratios+=("$(ratio "$wf" "$ef")")
    # CPU per unit of work, wirespeed's over ethr's: (client + server CPU) per round trip for
    # latency (ethr rests a second between its batches, so per second of test says nothing),
    # per unit of the figure for the rates.
    if [ "$better" = lower ]; then
      cpu_ratios+=("$(awk -v wc="$wc" -v ws="$wsv" -v wn="$wn" -v ec="$ec" -v es="$esv" -v en="$en" \
        'BEGIN {printf "%.3f", (wn == 0 || en == 0) ? 0 : ((wc + ws) / wn) / ((ec + es) / en)}')")
    else
      cpu_ratios+=("$(awk -v wc="$wc" -v ws="$wsv" -v wf="$wf" -v ec="$ec" -v es="$esv" -v ef="$ef" \
        'BEGIN {printf "%.3f", ((wc + ws) / wf) / ((ec + es) / ef)}')")
    fi
  done
  echo "  $name: median ratio wirespeed / ethr: $(printf '%s\n' "${ratios[@]}" | median) ($better is better); CPU per unit of work: $(printf '%s\n' "${cpu_ratios[@]}" | median)"
}

# Bandwidth as the bytes the client wrote: the one count ethr's client has.
bench "tcp bandwidth" "bit/s written, 1 stream" '.summary.sent_bps' "bw 127.0.0.1" \
  BitsPerSecond "-t b -n 1"
# ethr's client closes each connection with RST (SO_LINGER 0 in client.go's tcpRunCpsTest):
# `cps --rst` is the like-with-like case. wirespeed's default has its server close first, so
# the TIME_WAIT stays there: a FIN exchange and a wait more per connection on the client.
bench "connections/s" "connections/s, 1 thread, RST close" '.summary.connections_per_second' \
  "cps 127.0.0.1 --rst" ConnectionsPerSecond "-t c -n 1"
bench "connections/s, server closes" "connections/s, 1 thread" '.summary.connections_per_second' \
  "cps 127.0.0.1" ConnectionsPerSecond "-t c -n 1"
bench "packets/s" "UDP datagrams/s sent, 1 thread" '.summary.sent_pps' "pps 127.0.0.1 -l 16" \
  PacketsPerSecond "-t p -p udp -n 1"
# Beside it, the same 16-byte datagrams from a UDP bandwidth test, which batches them with GSO
# (a kernel packet carries up to 64): what the sender can do when it need not count datagram by
# datagram. Not like with like: ethr has nothing of the kind.
bench "packets/s, GSO" "UDP datagrams/s sent, 1 stream" '.summary.sent_pps' "bw 127.0.0.1 -u -l 16 -b 0" \
  PacketsPerSecond "-t p -p udp -n 1"
bench "tcp latency" "round-trip p50 in µs" '.summary.rtt.p50_ns / 1000' "latency 127.0.0.1" \
  latency "-t l -n 1" lower
# Go's scheduler spins a while before it parks a thread, so ethr's side of each round trip
# rarely waits for an idle core to wake; `--busy-poll` is wirespeed's client polling without
# sleeping, and its server polling its echo for such a client.
bench "tcp latency, busy-poll" "round-trip p50 in µs" '.summary.rtt.p50_ns / 1000' \
  "latency 127.0.0.1 --busy-poll" latency "-t l -n 1" lower
