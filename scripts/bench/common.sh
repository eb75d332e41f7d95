# Shared by the benchmark scripts (sourced, not run): tool checks, the release build, a
# scratch directory removed on exit, and the median of a column of numbers.
# shellcheck shell=bash

# need TOOL...: stop with an install hint when a tool is missing.
need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is needed: apt-get install $tool" >&2; exit 1; }
  done
}

# median < numbers: the middle value (the mean of the two middle ones for an even count).
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

cargo build --release -q
WS=target/release/wirespeed
tmp=$(mktemp -d)
PIDS=()
# Every background server the script starts goes in PIDS; they stop with the script.
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
