#!/usr/bin/env bash
# QUIC libraries against each other and against TCP, one bulk transfer at a time over loopback:
# quinn (rustls, ring; GSO and GRO through quinn-udp) and quiche (BoringSSL; sans-IO, driven
# by the mio loop of its own examples, one datagram a system call). One connection, one
# stream, BYTES from client to server; rounds alternate (tcp, quinn, quiche, ...), the server
# pinned to core 0 and the client to core 1 where there are two. Prints each stack's median
# goodput and CPU seconds per GB on each side, and its goodput as a share of TCP's. What
# docs/architecture.md's choice of QUIC stack rests on. The last row, `wirespeed`, is
# `wirespeed bandwidth --quic` moving the same bytes the same way (this checkout's release
# build; its server's CPU from its report): how close the test's ends come to the library
# alone. wirespeed's own QUIC against its own TCP is benches/quic.toml.
#
# It stays a script, as scripts/bench/codecs.sh does: it compares libraries, each driven by a
# program of its own (a Cargo project outside the workspace, so that quiche and BoringSSL are
# never wirespeed's dependencies), not tools over a network, which is what `wirespeed bench`
# scenarios run.
#   ROUNDS=5 BYTES=1000000000 scripts/bench/quic_stacks.sh
set -euo pipefail
cd "$(dirname "$0")/quic_stacks"
ROUNDS=${ROUNDS:-5}
BYTES=${BYTES:-1000000000}
need() { command -v "$1" >/dev/null || { echo "$1 is needed: apt-get install $2" >&2; exit 1; }; }
need cmake cmake # quiche builds BoringSSL
[ -x /usr/bin/time ] || { echo "/usr/bin/time is needed: apt-get install time" >&2; exit 1; }
cargo build --release -q
BIN=$PWD/target/release/quic-stacks
(cd ../../.. && cargo build --release -q)
WS=$(cd ../../.. && pwd)/target/release/wirespeed
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
SERVER_PIN=() CLIENT_PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then
  SERVER_PIN=(taskset -c 0) CLIENT_PIN=(taskset -c 1)
fi
port=47310
# one STACK: a transfer; appends "bits_per_second client_cpu server_cpu" to $tmp/STACK.
one() {
  local stack=$1 dir="$tmp/run"
  rm -rf "$dir" && mkdir -p "$dir"
  port=$((port + 1))
  /usr/bin/time -f "%U %S" -o "$dir/server.time" "${SERVER_PIN[@]}" \
    "$BIN" server "$stack" "127.0.0.1:$port" "$dir" &
  local server=$!
  for _ in $(seq 100); do [ -e "$dir/cert.der" ] && break; sleep 0.05; done
  /usr/bin/time -f "%U %S" -o "$dir/client.time" "${CLIENT_PIN[@]}" \
    "$BIN" client "$stack" "127.0.0.1:$port" "$dir" "$BYTES" >"$dir/client.out"
  wait "$server"
  local bps client_cpu server_cpu
  bps=$(awk '{print $1}' "$dir/client.out")
  client_cpu=$(tail -1 "$dir/client.time" | awk '{print $1 + $2}')
  server_cpu=$(tail -1 "$dir/server.time" | awk '{print $1 + $2}')
  echo "$bps $client_cpu $server_cpu" >>"$tmp/$stack"
}
# one_wirespeed: the same transfer by `wirespeed bandwidth --quic`, its server started for it.
one_wirespeed() {
  local dir="$tmp/run"
  rm -rf "$dir" && mkdir -p "$dir"
  port=$((port + 1))
  "${SERVER_PIN[@]}" "$WS" server -B 127.0.0.1 -p "$port" 2>"$dir/server.log" &
  local server=$!
  for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
  /usr/bin/time -f "%U %S" -o "$dir/client.time" "${CLIENT_PIN[@]}" \
    "$WS" bandwidth 127.0.0.1 -p "$port" --quic -n "$BYTES" -f json --no-save >"$dir/client.json"
  kill "$server"; wait "$server" || true
  local client_cpu
  client_cpu=$(tail -1 "$dir/client.time" | awk '{print $1 + $2}')
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(s["received_bps"], sys.argv[2], s["server_cpu"]["total_ratio"] * s["duration_ns"] / 1e9)' \
    "$dir/client.json" "$client_cpu" >>"$tmp/wirespeed"
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
stacks=(tcp quinn quiche)
for _ in $(seq "$ROUNDS"); do
  for s in "${stacks[@]}"; do one "$s"; done
  one_wirespeed
done
stacks+=(wirespeed)
tcp=$(awk '{print $1}' "$tmp/tcp" | median)
gb=$(awk -v b="$BYTES" 'BEGIN {print b / 1e9}')
printf "%-7s %12s %10s %16s %16s\n" stack "Gbit/s" "of TCP" "client CPU s/GB" "server CPU s/GB"
for s in "${stacks[@]}"; do
  bps=$(awk '{print $1}' "$tmp/$s" | median)
  c=$(awk -v gb="$gb" '{print $2 / gb}' "$tmp/$s" | median)
  v=$(awk -v gb="$gb" '{print $3 / gb}' "$tmp/$s" | median)
  awk -v s="$s" -v b="$bps" -v t="$tcp" -v c="$c" -v v="$v" \
    'BEGIN {printf "%-7s %12.2f %10.3f %16.3f %16.3f\n", s, b / 1e9, b / t, c, v}'
done
echo "(median of $ROUNDS alternating rounds of $BYTES bytes; server on core 0, client on core 1 when pinned)"
