#!/usr/bin/env bash
# Listing a large history: `wirespeed history` over N saved runs (100 000 by default) against
# the sqlite3 shell running the same query on the same database file, alternating the two in
# each round. The runs are copies of three real runs (bandwidth, latency, DNS) made against an
# in-process server on loopback, saved with the store's own code (the `fill` example).
# Prints the median time of the store's listing query alone (the issue's budget for listing
# everything is 200 ms), each command's median wall time, and the ratio wirespeed/sqlite3.
#   RUNS=5 COUNT=100000 scripts/bench/history.sh
# sqlite3: apt-get install sqlite3
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
COUNT=${COUNT:-100000}
source scripts/bench/common.sh
need sqlite3
cargo build --release -q -p wirespeed-store --example fill --example list_all
PORT=15299
DB=$tmp/results.db

"$WS" server -B 127.0.0.1 -p $PORT --dns $((PORT + 1)) >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5
"$WS" bw 127.0.0.1:$PORT -t 1 --db "$DB" >/dev/null
"$WS" lat 127.0.0.1:$PORT -t 1 --db "$DB" >/dev/null
"$WS" dns -s 127.0.0.1 -p $((PORT + 1)) -l 1 --db "$DB" >/dev/null
"$WS" export 1 2 3 --db "$DB" -o "$tmp/seed.json"
rm -f "$DB" "$DB-wal" "$DB-shm"
target/release/examples/fill "$DB" "$COUNT" "$tmp/seed.json"
echo "database: $(du -h "$DB" | cut -f1), $COUNT runs"

# ms CMD...: wall time of one run of CMD, in milliseconds, output discarded.
ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

QUERY="SELECT id, kind, target, started_at_ms, tag, headline, headline_unit FROM runs ORDER BY started_at_ms DESC, id DESC"
: >"$tmp/ws" ; : >"$tmp/sq" ; : >"$tmp/ws20" ; : >"$tmp/kind" ; : >"$tmp/list"
"$WS" history -n 0 --db "$DB" >/dev/null   # warm the page cache once for both
for _ in $(seq "$RUNS"); do
  ms "$WS" history -n 0 --db "$DB" >>"$tmp/ws"
  ms sqlite3 "$DB" "$QUERY" >>"$tmp/sq"
  ms "$WS" history --db "$DB" >>"$tmp/ws20"
  ms "$WS" history -n 0 --kind latency --tag batch --db "$DB" >>"$tmp/kind"
  target/release/examples/list_all "$DB" | cut -d' ' -f1 >>"$tmp/list"
done
ws=$(median <"$tmp/ws"); sq=$(median <"$tmp/sq")
echo "Store::list of all $COUNT rows:          median $(median <"$tmp/list") ms   (budget 200 ms)"
echo "history -n 0 (all rows, printed):        median ${ws} ms"
echo "sqlite3, the same query, printed:        median ${sq} ms"
echo "history (newest 20):                     median $(median <"$tmp/ws20") ms"
echo "history -n 0 --kind latency --tag batch: median $(median <"$tmp/kind") ms"
awk -v a="$ws" -v b="$sq" 'BEGIN { printf "ratio wirespeed/sqlite3 (all rows, lower is better): %.2f\n", a / b }'
