#!/usr/bin/env bash
# The open model held at a high rate: wirespeed http -r RATE for SECS seconds against the
# built-in HTTP fixture (its own process) on loopback, with the client's RSS sampled every
# second. Reports the achieved rate against the target (within 1 % is the goal), late and
# dropped requests, and RSS at the start and end (flat, ≤ 64 MiB, is the goal: histograms, not
# sample vectors). The client runs on CPU 0 and the fixture on CPU 1 (taskset).
#   RATE=20000 SECS=60 scripts/bench/http_open.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${RATE:-20000}
SECS=${SECS:-60}
source scripts/bench/common.sh
need taskset jq
PORT=15265
taskset -c 1 $WS server -B 127.0.0.1 -p 15266 --http $PORT >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
taskset -c 0 $WS http "http://127.0.0.1:$PORT/" -r "$RATE" -d "$SECS" -f json --no-save >"$tmp/out" &
client=$!
: >"$tmp/rss"
while kill -0 "$client" 2>/dev/null; do
  awk '/^VmRSS/ {print $2}' "/proc/$client/status" 2>/dev/null >>"$tmp/rss" || true
  sleep 1
done
wait "$client"
jq -r --arg rate "$RATE" '.summary | "target \($rate)/s  sent \(.sent_per_second | floor)/s (\(.sent_per_second / ($rate|tonumber) * 100 | . * 100 | floor / 100) %)  answered \(.requests_per_second | floor)/s  late \(.late)  errors \(.errors)  p50 \(.latency.p50_ns / 1000 | floor) µs  p99 \(.latency.p99_ns / 1000 | floor) µs"' "$tmp/out"
first=$(sed -n 2p "$tmp/rss"); last=$(tail -1 "$tmp/rss"); peak=$(sort -n "$tmp/rss" | tail -1)
echo "client RSS: after 1 s ${first} KiB, at the end ${last} KiB, peak ${peak} KiB"
