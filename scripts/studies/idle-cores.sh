#!/usr/bin/env bash
# How much waking an idle vCPU costs a round trip on this machine: `wirespeed latency` over
# loopback, alternating rounds with the machine otherwise idle and with two spinning processes
# keeping both cores busy; the median of each state's p50 and p99 go to docs/studies/idle-cores.csv
# (the studies' README draws its figures from it).
#
#   scripts/studies/idle-cores.sh [ROUNDS] [SECONDS]     (default 3 rounds of 5 s each state)
set -euo pipefail
rounds=${1:-3}
secs=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${WIRESPEED:-$root/target/release/wirespeed}
out=$root/docs/studies/idle-cores.csv
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
work=$(mktemp -d)
"$bin" server -B 127.0.0.1 -p "$port" >"$work/server.log" 2>&1 &
server=$!
spinners=()
cleanup() {
  kill "${spinners[@]}" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
sleep 0.5
measure() {   # $1: state, $2: round
  "$bin" latency 127.0.0.1 -p "$port" -t "$secs" -f json --no-save >"$work/$1-$2.json"
}
for r in $(seq "$rounds"); do
  measure idle "$r"
  spinners=()
  for _ in 1 2; do
    timeout $((secs + 10)) sh -c 'while :; do :; done' &
    spinners+=($!)
  done
  measure busy "$r"
  kill "${spinners[@]}" 2>/dev/null || true
  wait "${spinners[@]}" 2>/dev/null || true
  spinners=()
done
machine="$(nproc) vCPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -1)), $(free -g | awk '/^Mem/{print $2}') GiB, Debian $(cat /etc/debian_version), Linux $(uname -r | cut -d- -f1)"
python3 - "$work" "$rounds" "$out" "$machine" <<'PY'
import csv, io, json, statistics, sys, datetime, pathlib
work, rounds, out, machine = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [["state", "p50_ns", "p99_ns", "rounds", "date", "machine"]]
for state in ("idle", "busy"):
    runs = [json.loads((work / f"{state}-{r}.json").read_text()) for r in range(1, rounds + 1)]
    p50 = statistics.median(run["summary"]["rtt"]["p50_ns"] for run in runs)
    p99 = statistics.median(run["summary"]["rtt"]["p99_ns"] for run in runs)
    rows.append([state, p50, p99, rounds, datetime.date.today().isoformat(), machine])
text = io.StringIO()
csv.writer(text, lineterminator="\n").writerows(rows)
pathlib.Path(out).write_text(text.getvalue())
print(open(out).read(), end="")
PY
