#!/usr/bin/env bash
# Fuzzes every decoder a peer's bytes reach: each fuzz target (fuzz/fuzz_targets/) for RUNS
# executions (10 million by default) or SECS seconds, starting from its corpus in the
# repository (fuzz/corpus/TARGET) and its past findings (fuzz/regressions/TARGET), then
# minimises the corpus back into fuzz/corpus/TARGET, so what a campaign learned is kept and
# committed. A crash is left in fuzz/artifacts/TARGET/ and stops the script: copy it into
# fuzz/regressions/TARGET/ (every file there, and in the corpora, is run by the
# decoders_never_panic tests in CI) and fix the decoder. Prints each target's executions,
# their rate and its coverage; docs/reliability.md keeps a campaign's.
#   scripts/fuzz.sh                     # every target, 10M executions each
#   RUNS=100000 TARGETS="dns web" scripts/fuzz.sh
#   SECS=600 scripts/fuzz.sh            # by time instead
# cargo-fuzz is installed when missing; it needs nightly features, which RUSTC_BOOTSTRAP=1
# gives a stable toolchain where no nightly one is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10000000}
TARGETS=${TARGETS:-$(sed -n 's/^name = "\(.*\)"/\1/p' fuzz/Cargo.toml | grep -v '^wirespeed-fuzz$')}
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --quiet
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
limit=(-runs="$RUNS")
[ -n "${SECS:-}" ] && limit=(-max_total_time="$SECS")
cd fuzz
for target in $TARGETS; do
  mkdir -p "corpus/$target" "regressions/$target"
  work=$(mktemp -d)
  log=$(mktemp)
  # New inputs go to a scratch directory first; the kept corpus is the minimised union.
  "${fuzz[@]}" run --release "$target" "$work" "corpus/$target" "regressions/$target" -- \
    "${limit[@]}" -max_len=8192 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    >"$log" 2>&1 || { tail -40 "$log"; echo "fuzz target $target failed: see fuzz/artifacts/$target/" >&2; exit 1; }
  stats=$(sed -n 's/^stat::\(number_of_executed_units\|average_exec_per_sec\|peak_rss_mb\): *\([0-9]*\)/\1=\2/p' "$log" |
    tr '\n' ' ')
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  before=$(find "corpus/$target" -type f | wc -l)
  minimised=$(mktemp -d)
  # libFuzzer's set-cover merge into an empty directory keeps the fewest inputs that cover
  # every feature the others do.
  "${fuzz[@]}" run --release "$target" "$minimised" "corpus/$target" "$work" -- -set_cover_merge=1 \
    -max_len=8192 -timeout=10 -rss_limit_mb=4096 >/dev/null 2>&1 || true
  if [ -n "$(ls -A "$minimised")" ]; then
    rm -rf "corpus/$target"; mv "$minimised" "corpus/$target"
  fi
  echo "$target: $stats$cov, corpus $before -> $(find "corpus/$target" -type f | wc -l) files"
  rm -rf "$work" "$log" "$minimised"
done
