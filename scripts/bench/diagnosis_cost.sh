#!/usr/bin/env bash
# What watching costs: every run's diagnosis has a probe thread in the client (it wakes 200
# times a second and reads /proc every 100 ms). This runs a build without it (OLD: any commit
# before the diagnosis, e.g. 895193d) against this one (NEW) on the figures a waking thread
# could disturb: TCP and UDP round trips (closed model, p50 and p99), UDP packets/s with
# 64-byte datagrams, and one TCP stream. Each build runs its own server (pinned to core 1)
# and client (core 0); runs alternate old, new, old, new. Prints each run and per figure the
# median ratio new / old. Loopback only; every run is bounded by -t.
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
OLD_PORT=15213
NEW_PORT=15214
taskset -c 1 "$OLD" server -B 127.0.0.1 -p $OLD_PORT 2>"$tmp/old.log" & PIDS+=($!)
taskset -c 1 "$NEW" server -B 127.0.0.1 -p $NEW_PORT 2>"$tmp/new.log" & PIDS+=($!)
sleep 0.5

# run BIN PORT JQ ARGS...: one run; prints the figure JQ picks from its JSON report.
run() {
  local bin=$1 port=$2 pick=$3; shift 3
  taskset -c 0 "$bin" "$@" -p "$port" -t "$SECS" --format json --no-save >"$tmp/out"
  jq -r "$pick" "$tmp/out"
}

cases=(
  "tcp round trip p50|.summary.rtt.p50_ns|lat 127.0.0.1"
  "tcp round trip p99|.summary.rtt.p99_ns|lat 127.0.0.1"
  "udp round trip p50|.summary.rtt.p50_ns|lat 127.0.0.1 -u"
  "udp round trip p99|.summary.rtt.p99_ns|lat 127.0.0.1 -u"
  "pps 64|.summary.received_pps|pps 127.0.0.1"
  "tcp upload|.summary.received_bps|bw 127.0.0.1"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name pick args <<<"$c"
  [[ "$name" == *"${ONLY:-}"* ]] || continue
  # The first test after a server starts is reliably slow: one unmeasured run of each.
  # shellcheck disable=SC2086
  run "$OLD" $OLD_PORT "$pick" $args >/dev/null; run "$NEW" $NEW_PORT "$pick" $args >/dev/null
  : >"$tmp/ratios"
  echo "$name ($args):"
  for i in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    o=$(run "$OLD" $OLD_PORT "$pick" $args)
    # shellcheck disable=SC2086
    n=$(run "$NEW" $NEW_PORT "$pick" $args)
    printf "  %d  old %-15.0f new %-15.0f ratio %s\n" "$i" "$o" "$n" "$(ratio "$n" "$o")"
    ratio "$n" "$o" >>"$tmp/ratios"; echo >>"$tmp/ratios"
  done
  echo "$name: median ratio new / old: $(grep . "$tmp/ratios" | median)"
done
