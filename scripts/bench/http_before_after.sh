#!/usr/bin/env bash
# Two builds of wirespeed's HTTP client against one fixture: what a refactor of the load loops
# cost or saved. OLD is another build's binary (a `git worktree` of the commit before, built
# with --release); the new one is this checkout's. The fixture (this checkout's, on core 1)
# serves both; each client runs on core 0. Runs alternate (old, new, old, new, ...) for each
# case: HTTP/1.1 and HTTP/2 closed model (requests/s and client CPU per 100k requests), and
# HTTP/2 open model at a fixed rate (p50 and p99 latency). Prints each run and, per case, the
# median ratio new / old. Loopback only; every run is bounded by -d.
#   OLD=/tmp/before-target/release/wirespeed RUNS=5 SECS=3 scripts/bench/http_before_after.sh
# NEW names another binary for the new side (default: this checkout's release build).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SECS=${SECS:-3}
RATE=${RATE:-20000}
source scripts/bench/common.sh
need taskset jq
[ -x "${OLD:-}" ] || { echo "OLD must name the other build's wirespeed binary" >&2; exit 1; }
NEW=${NEW:-$WS}
PORT=15391
URL="http://127.0.0.1:$PORT/"  # cleartext: HTTP/2 by prior knowledge
taskset -c 1 $NEW server -B 127.0.0.1 -p 15392 --http $PORT 2>"$tmp/server.log" &
PIDS+=($!)
for _ in $(seq 100); do
  $NEW http "$URL" -n 1 --no-save -f json 2>/dev/null | jq -e '.summary.responses == 1' >/dev/null && break
  sleep 0.1
done

# run BIN ARGS...: one client run; prints "requests_per_second cpu_per_100k p50_us p99_us".
run() {
  local bin=$1; shift
  local cpu n
  cpu=$(cpu_of taskset -c 0 "$bin" http "$URL" -d "$SECS" -f json --no-save "$@")
  n=$(jq -r '.summary.responses' "$tmp/out")
  jq -r --arg p "$(per100k "$cpu" "$n")" \
    '.summary | [.requests_per_second, $p, .latency.p50_ns / 1e3, .latency.p99_ns / 1e3] | @tsv' \
    "$tmp/out"
}

cases=(
  "h1 closed|-c 10|rps"
  "h2 closed|--h2 -c 4 --streams 16|rps"
  "h2 open|--h2 -c 4 --streams 16 -r $RATE|p50"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name args what <<<"$c"
  # shellcheck disable=SC2086
  run "$OLD" $args >/dev/null
  : >"$tmp/ratios"; : >"$tmp/cpu"
  echo "$name ($args):   old req/s  cpu/100k  p50 µs  p99 µs  |  new req/s  cpu/100k  p50 µs  p99 µs"
  for i in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    read -r or oc op o9 <<<"$(run "$OLD" $args)"
    # shellcheck disable=SC2086
    read -r nr nc np n9 <<<"$(run "$NEW" $args)"
    printf "  %d  %10.0f  %8s  %6.0f  %6.0f  |  %9.0f  %8s  %6.0f  %6.0f\n" \
      "$i" "$or" "$oc" "$op" "$o9" "$nr" "$nc" "$np" "$n9"
    if [ "$what" = rps ]; then ratio "$nr" "$or" >>"$tmp/ratios"; else ratio "$np" "$op" >>"$tmp/ratios"; fi
    echo >>"$tmp/ratios"
    ratio "$nc" "$oc" >>"$tmp/cpu"; echo >>"$tmp/cpu"
  done
  label="requests/s"; [ "$what" = p50 ] && label="p50 latency"
  echo "$name: median ratio new / old, $label: $(grep . "$tmp/ratios" | median), CPU per request: $(grep . "$tmp/cpu" | median)"
done
