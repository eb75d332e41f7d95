#!/usr/bin/env bash
# PostgreSQL against SQLite, and what a member's histograms cost (members against one process
# is a scenario: benches/distributed.toml):
#  2. `history -n 0` over COUNT saved runs in a throwaway PostgreSQL against the same runs in
#     SQLite, alternating: the median ratio (the budget is 2×).
#  3. What keeping interval histograms costs a member: a run of MEMDUR s (1-s intervals) as a
#     member and as a run of its own, at once: peak RSS of each, and the size of the encoded
#     histograms in the member's report (the budget is 8 MiB for 10 minutes).
# Neither is a load over a network that a scenario describes: part 2 times the store's listing
# (as scripts/bench/history.sh does), part 3 a process's peak memory over ten minutes.
#   COUNT=100000 MEMDUR=600 PARTS="2 3" scripts/bench/distributed.sh
# Needs Debian's postgresql (the server binaries) and taskset; runs as root or as any user
# (as root the database runs as `postgres`, since initdb refuses root).
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-100000}
MEMDUR=${MEMDUR:-600}
PARTS=${PARTS:-2 3}
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
