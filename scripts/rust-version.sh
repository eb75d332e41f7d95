#!/usr/bin/env bash
# Prints the Rust version Cargo.toml declares (`rust-version`), installing that toolchain with
# rustup first where it is missing (its progress on stderr). scripts/test.sh builds and runs the
# tests with it; scripts/checks.sh, run alone, checks the workspace with it.
#
#   RUSTUP_TOOLCHAIN=$(scripts/rust-version.sh) cargo test
set -euo pipefail
cd "$(dirname "$0")/.."
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
rustup toolchain list 2>/dev/null | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal >&2
echo "$msrv"
