#!/usr/bin/env bash
# Two builds of wirespeed (another commit, or the same commit with other build settings) on
# the bandwidth paths where code generation shows: TCP one stream each way, UDP 1400-byte
# datagrams unlimited, and UDP packets/s with 64-byte datagrams. Each build runs its own server
# (pinned to core 1) and client (core 0); runs alternate old, new, old, new. Prints each run,
# both binaries' sizes, and per case the median ratio new / old of the received rate.
# The HTTP side of the same comparison: scripts/bench/http_before_after.sh with the same OLD
# and NEW. Loopback only; every run is bounded by -t.
#   OLD=/tmp/ws-base NEW=/tmp/ws-lto RUNS=5 SECS=3 scripts/bench/build_before_after.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
source scripts/bench/common.sh
need taskset jq
NEW=${NEW:-$WS}
[ -x "${OLD:-}" ] || { echo "OLD must name the other build's wirespeed binary" >&2; exit 1; }
OLD_PORT=15211
NEW_PORT=15212
taskset -c 1 "$OLD" server -B 127.0.0.1 -p $OLD_PORT 2>"$tmp/old.log" & PIDS+=($!)
taskset -c 1 "$NEW" server -B 127.0.0.1 -p $NEW_PORT 2>"$tmp/new.log" & PIDS+=($!)
sleep 0.5
echo "size: old $(stat -c %s "$OLD") bytes, new $(stat -c %s "$NEW") bytes, ratio $(ratio "$(stat -c %s "$NEW")" "$(stat -c %s "$OLD")")"

# run BIN PORT ARGS...: one run; prints the received rate (bit/s, or packets/s for pps).
run() {
  local bin=$1 port=$2; shift 2
  taskset -c 0 "$bin" "$@" -p "$port" -t "$SECS" --format json --no-save >"$tmp/out"
  jq -r '.summary.received_pps // .summary.received_bps' "$tmp/out"
}

cases=(
  "tcp upload|bw 127.0.0.1"
  "tcp download|bw 127.0.0.1 -R"
  "udp 1400 unlimited|bw 127.0.0.1 -u -b 0 -l 1400"
  "pps 64|pps 127.0.0.1"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name args <<<"$c"
  # The first test after a server starts is reliably slow: one unmeasured run of each.
  # shellcheck disable=SC2086
  run "$OLD" $OLD_PORT $args >/dev/null; run "$NEW" $NEW_PORT $args >/dev/null
  : >"$tmp/ratios"
  echo "$name ($args):"
  for i in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    o=$(run "$OLD" $OLD_PORT $args)
    # shellcheck disable=SC2086
    n=$(run "$NEW" $NEW_PORT $args)
    printf "  %d  old %-15.0f new %-15.0f ratio %s\n" "$i" "$o" "$n" "$(ratio "$n" "$o")"
    ratio "$n" "$o" >>"$tmp/ratios"; echo >>"$tmp/ratios"
  done
  echo "$name: median ratio new / old: $(grep . "$tmp/ratios" | median)"
done
