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
echo "size: old $(stat -c %s "$OLD") bytes, new $(stat -c %s "$NEW") bytes, ratio $(ratio "$(stat -c %s "$NEW")" "$(stat -c %s "$OLD")")"
rate='.summary.received_pps // .summary.received_bps'
before_after 15211 15212 \
  "tcp upload|$rate|bw 127.0.0.1" \
  "tcp download|$rate|bw 127.0.0.1 -R" \
  "udp 1400 unlimited|$rate|bw 127.0.0.1 -u -b 0 -l 1400" \
  "pps 64|$rate|pps 127.0.0.1"
