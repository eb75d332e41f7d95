#!/usr/bin/env bash
# Our hot-path codecs against the libraries that could replace them (`domain` for DNS query
# building and answer reading, httparse for chunked bodies), timed in one process in
# alternating rounds; prints median ns per operation and library/ours (above 1: ours is faster).
# docs/architecture.md keeps our code on a path only where this shows it wins. Pinned to one
# core with taskset when there is one to spare, so both sides run on the same core.
#   ROUNDS=7 N=200000 scripts/bench/codecs.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p wirespeed-proto --example codecs
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then PIN=(taskset -c 1); fi
ROUNDS=${ROUNDS:-7} N=${N:-200000} "${PIN[@]}" target/release/examples/codecs
