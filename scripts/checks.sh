#!/usr/bin/env bash
# The checks that build the workspace but run nothing: clippy, the docs, the build at the
# declared rust-version and the fuzz targets, each timed. scripts/test.sh runs them beside the
# tests at the lowest priority; run alone, they are the lint pass before a commit.
#
#   scripts/checks.sh
#   scripts/checks.sh --without-rust-version   # scripts/test.sh's: its tests are built with that toolchain
#
# They share a target directory of their own (target/checks; the rust-version's toolchain its
# own, target/msrv): none of them makes what the tests run, so sharing the tests' directory
# would only make one wait for the other's lock.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/checks}
with_msrv=1
case "${1:-}" in
  "") ;;
  --without-rust-version) with_msrv=0 ;;
  *) echo "scripts/checks.sh: unknown argument $1 (--without-rust-version)" >&2; exit 2 ;;
esac
# clippy, and the toolchain of the declared rust-version, where they are missing.
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
if [ "$with_msrv" = 1 ]; then
  msrv=$(scripts/rust-version.sh)
fi

# Runs the rest of the line as check $1 and says how long it took.
check() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "   $name: $((SECONDS - start)) s"
}
check "cargo clippy" cargo clippy --workspace --all-targets --locked --quiet -- -D warnings
check "cargo doc" env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
if [ "$with_msrv" = 1 ]; then
  check "build at rust-version $msrv" \
    env CARGO_TARGET_DIR=target/msrv cargo "+$msrv" check --workspace --all-targets --locked --quiet
fi
check "fuzz targets compile" cargo check --manifest-path fuzz/Cargo.toml --bins --locked --quiet
