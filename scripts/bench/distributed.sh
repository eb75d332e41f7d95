#!/usr/bin/env bash
# Members against one process, and PostgreSQL against SQLite, side by side in one run:
#  1. The HTTP fixture (core 0) loaded at RATE requests/s (open model) for DUR s by one process
#     of 4 threads, and by 4 members of 1 thread at RATE/4 each meeting at a --start-at, then
#     merged: all load on core 1, four event loops each way, so both get the same CPU and the
#     same scheduling, and only the members' split and merge differ. Alternating A B A B for
#     RUNS rounds: the merged rate against RATE, and the merged p50/p99 against the single
#     process's, beside the single process's own round-to-round spread (the noise the members
#     must stay within).
#  2. `history -n 0` over COUNT saved runs in a throwaway PostgreSQL against the same runs in
#     SQLite, alternating: the median ratio (the budget is 2×).
#  3. What keeping interval histograms costs a member: a run of MEMDUR s (1-s intervals) as a
#     member and as a run of its own, at once: peak RSS of each, and the size of the encoded
#     histograms in the member's report (the budget is 8 MiB for 10 minutes).
#   RUNS=3 RATE=20000 DUR=10 COUNT=100000 MEMDUR=600 PARTS="1 2 3" scripts/bench/distributed.sh
# Needs Debian's postgresql (the server binaries) and taskset; runs as root or as any user
# (as root the database runs as `postgres`, since initdb refuses root).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}
RATE=${RATE:-20000}
DUR=${DUR:-10}
COUNT=${COUNT:-100000}
MEMDUR=${MEMDUR:-600}
PARTS=${PARTS:-1 2 3}
part() { [[ " $PARTS " == *" $1 "* ]]; }
source scripts/bench/common.sh
need taskset python3
cargo build --release -q -p wirespeed-store --example fill --example list_all
PORT=15399
HTTP=$((PORT + 1))
URL="http://127.0.0.1:$HTTP/"

taskset -c 0 "$WS" server -B 127.0.0.1 -p $PORT --http $HTTP --dns $((PORT + 2)) >/dev/null 2>&1 & PIDS+=($!)
sleep 0.5

# field JSON-FILE EXPR: a value out of a report, by a Python expression on `r`.
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }

if part 1; then
echo "== 1. one process (4 threads) at $RATE req/s against 4 members at $((RATE / 4)) each, $DUR s, $RUNS rounds"
: >"$tmp/one"; : >"$tmp/four"
for round in $(seq "$RUNS"); do
  taskset -c 1 "$WS" http "$URL" -r "$RATE" -d "$DUR" -t 4 -f json --no-save >"$tmp/one.json"
  echo "$(field "$tmp/one.json" 'r["summary"]["sent_per_second"]') $(field "$tmp/one.json" 'r["summary"]["latency"]["p50_ns"]') $(field "$tmp/one.json" 'r["summary"]["latency"]["p99_ns"]')" >>"$tmp/one"
  at=$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%S.%3NZ)
  members=()
  for i in 0 1 2 3; do
    taskset -c 1 "$WS" http "$URL" -r "$RATE" -d "$DUR" --members 4 --index $i --run-id "b$round" \
      --start-at "$at" --max-clock-error 1m -f json --no-save >"$tmp/m$i.json" & members+=($!)
  done
  wait "${members[@]}"
  "$WS" merge "$tmp"/m0.json "$tmp"/m1.json "$tmp"/m2.json "$tmp"/m3.json -f json --no-save >"$tmp/four.json"
  echo "$(field "$tmp/four.json" 'r["summary"]["sent_per_second"]') $(field "$tmp/four.json" 'r["summary"]["latency"]["p50_ns"]') $(field "$tmp/four.json" 'r["summary"]["latency"]["p99_ns"]') $(field "$tmp/four.json" 'r["meta"]["merged"]["start_skew_ns"]')" >>"$tmp/four"
  echo "round $round: one $(tail -1 "$tmp/one")   four $(tail -1 "$tmp/four")   (sent/s p50_ns p99_ns [skew_ns])"
done
col() { awk -v c="$2" '{print $c}' "$1" | median; }
spread() { awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", (a[NR]-a[1])/a[1]}'; }
echo "merged rate / asked:        $(ratio "$(col "$tmp/four" 1)" "$RATE")   (one process: $(ratio "$(col "$tmp/one" 1)" "$RATE"))"
echo "merged p50 / one's p50:     $(ratio "$(col "$tmp/four" 2)" "$(col "$tmp/one" 2)")   (one process's spread max/min-1: $(spread "$tmp/one" 2))"
echo "merged p99 / one's p99:     $(ratio "$(col "$tmp/four" 3)" "$(col "$tmp/one" 3)")   (one process's spread max/min-1: $(spread "$tmp/one" 3))"
echo "members' start skew:        median $(col "$tmp/four" 4) ns"
fi

if part 2; then
echo "== 2. history over $COUNT runs: PostgreSQL against SQLite"
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
# Its own directory under /tmp: the scratch one is private to this user, and the database may
# run as `postgres`.
pgdir=$(mktemp -d /tmp/wirespeed-bench-pg.XXXXXX)
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$tmp" "$pgdir"' EXIT
as_pg=()
if [ "$(id -u)" = 0 ]; then chown postgres "$pgdir"; as_pg=(runuser -u postgres --); fi
"${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U wirespeed -A trust --no-sync >/dev/null
"${as_pg[@]}" "$pgbin/postgres" -D "$pgdir/data" -p $((PORT + 3)) -k "$pgdir" \
  -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off >"$tmp/pg.log" 2>&1 & PIDS+=($!)
sleep 2
PGURL="postgres://wirespeed@127.0.0.1:$((PORT + 3))/postgres?sslmode=disable"
SQ=$tmp/results.db
"$WS" bw 127.0.0.1:$PORT -t 1 --db "$SQ" >/dev/null
"$WS" lat 127.0.0.1:$PORT -t 1 --db "$SQ" >/dev/null
"$WS" dns -s 127.0.0.1 -p $((PORT + 2)) -l 1 --db "$SQ" >/dev/null
"$WS" export 1 2 3 --db "$SQ" -o "$tmp/seed.json"
rm -f "$SQ" "$SQ-wal" "$SQ-shm"
target/release/examples/fill "$SQ" "$COUNT" "$tmp/seed.json"
target/release/examples/fill "$PGURL" "$COUNT" "$tmp/seed.json"
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
: >"$tmp/hsq"; : >"$tmp/hpg"; : >"$tmp/lsq"; : >"$tmp/lpg"
"$WS" history -n 0 --db "$SQ" >/dev/null; "$WS" history -n 0 --db "$PGURL" >/dev/null   # warm both
for _ in $(seq 5); do
  ms "$WS" history -n 0 --db "$SQ" >>"$tmp/hsq"
  ms "$WS" history -n 0 --db "$PGURL" >>"$tmp/hpg"
  target/release/examples/list_all "$SQ" | cut -d' ' -f1 >>"$tmp/lsq"
  target/release/examples/list_all "$PGURL" | cut -d' ' -f1 >>"$tmp/lpg"
done
echo "history -n 0:  SQLite median $(median <"$tmp/hsq") ms, PostgreSQL $(median <"$tmp/hpg") ms, ratio $(ratio "$(median <"$tmp/hpg")" "$(median <"$tmp/hsq")") (budget 2)"
echo "Store::list:   SQLite median $(median <"$tmp/lsq") ms, PostgreSQL $(median <"$tmp/lpg") ms, ratio $(ratio "$(median <"$tmp/lpg")" "$(median <"$tmp/lsq")")"
fi

if part 3; then
echo "== 3. a member's kept interval histograms over $MEMDUR s"
/usr/bin/time -f "%M" -o "$tmp/rss_member" taskset -c 1 "$WS" http "$URL" -r 200 -d "$MEMDUR" -i 1 \
  --members 1 --run-id mem --start-at "$(date -u -d '+1 sec' +%Y-%m-%dT%H:%M:%S.%3NZ)" --max-clock-error 1m \
  -f json --no-save >"$tmp/mem.json" & runs=($!)
/usr/bin/time -f "%M" -o "$tmp/rss_plain" taskset -c 1 "$WS" http "$URL" -r 200 -d "$MEMDUR" -i 1 \
  -f json --no-save >/dev/null & runs+=($!)
wait "${runs[@]}"
echo "peak RSS: member $(cat "$tmp/rss_member") KiB, run of its own $(cat "$tmp/rss_plain") KiB"
echo "encoded histograms in the member's report: $(field "$tmp/mem.json" 'len(json.dumps(r["meta"]["histograms"]))') bytes ($(field "$tmp/mem.json" 'len(r["meta"]["histograms"]["intervals"])') intervals; budget 8 MiB)"
fi
