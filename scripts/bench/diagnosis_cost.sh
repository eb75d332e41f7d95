#!/usr/bin/env bash
# What watching costs: every run's diagnosis has a probe thread in the client (it wakes about
# 200 times in a paced test, however long, and reads /proc about 40 times). This runs a
# build without it (OLD: any commit before the diagnosis, e.g. 895193d) against this one (NEW)
# on the figures a waking thread could disturb: TCP and UDP round trips (closed model, p50 and
# p99; and paced at 2,000 a second, where the probe wakes most), UDP packets/s with 64-byte
# datagrams, and one TCP stream. Each build runs its own
# server (pinned to core 1) and client (core 0); runs alternate old, new, old, new. Prints
# each run and per figure the median ratio new / old. Loopback only; every run is bounded by -t.
#   OLD=/tmp/ws-before RUNS=5 SECS=3 scripts/bench/diagnosis_cost.sh
#   ONLY="round trip" OLD=... scripts/bench/diagnosis_cost.sh     # the cases whose name matches
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
source scripts/bench/common.sh
need taskset jq
NEW=${NEW:-$WS}
[ -x "${OLD:-}" ] || { echo "OLD must name a wirespeed binary built before the diagnosis" >&2; exit 1; }
before_after 15213 15214 \
  "tcp round trip p50|.summary.rtt.p50_ns|lat 127.0.0.1" \
  "tcp round trip p99|.summary.rtt.p99_ns|lat 127.0.0.1" \
  "udp round trip p50|.summary.rtt.p50_ns|lat 127.0.0.1 -u" \
  "udp round trip p99|.summary.rtt.p99_ns|lat 127.0.0.1 -u" \
  "udp paced round trip p99|.summary.rtt.p99_ns|lat 127.0.0.1 -u --rate 2000" \
  "pps 64|.summary.received_pps|pps 127.0.0.1" \
  "tcp upload|.summary.received_bps|bw 127.0.0.1"
