#!/usr/bin/env bash
# Runs every check wirespeed has: installs what the tests need on a fresh Debian machine
# (only what is missing), then formatting, lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Programs cargo installs below (librespeed-cli, rathole) are looked up on PATH by the tests.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Each step's wall time and the CPU time of the programs it ran (on 2 cores, a step that kept
# both busy shows twice its wall time), printed when the script ends (passing or not), so a
# slow run says where its time went.
times_file=$(mktemp)
children_cpu() {
  # `times`' second line: the finished children's user and system time, as 1m2.345s 0m0.678s.
  # Run in this shell (not a command substitution's, which has children of its own) into a
  # file, then read.
  times > "$times_file"
  cpu=$(tail -1 "$times_file" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t }')
}
step_name="checking what is installed"
step_started=$SECONDS
children_cpu
step_cpu=$cpu
step_times=()
step() {
  children_cpu
  step_times+=("$(printf '%6d s  %6d s cpu  %s' $((SECONDS - step_started)) $((cpu - step_cpu)) "$step_name")")
  step_name=$1
  step_started=$SECONDS
  step_cpu=$cpu
  echo "== $1"
}

# What the tests need that is not a Debian package is installed in background jobs, each with
# its own log, beside the tests' build (which needs none of it); the tests wait for every job
# (`wait_for_jobs`). On a fresh machine that was no faster than one install after another
# (84 minutes in all, both cores busy throughout the installs' 50): their CPU is the limit.
jobs_dir=$(mktemp -d)
job_pids=()
job_names=()
# Runs the rest of the line as job $1, in a process group of its own (so a failed run stops
# every program it started), its wall and CPU time the last line of its log: beside each other,
# the jobs' wall times say little of what each costs.
background() {
  local name=$1
  shift
  echo "   started: $name"
  setsid bash -c 'TIMEFORMAT="took %0R s, %0U s user + %0S s system CPU"; time "$@"' \
    "$name" "$@" >"$jobs_dir/$name.log" 2>&1 </dev/null &
  job_pids+=($!)
  job_names+=("$name")
}
stop_jobs() {
  for pid in "${job_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
# Waits for every job; a job that failed shows the end of its log (or all of it, with --log),
# and the script fails once every job has ended.
wait_for_jobs() {
  local i failed=0
  for i in "${!job_pids[@]}"; do
    if wait "${job_pids[$i]}"; then
      [ "${1:-}" = --log ] && cat "$jobs_dir/${job_names[$i]}.log"
      echo "   ${job_names[$i]}: $(tail -1 "$jobs_dir/${job_names[$i]}.log")"
    else
      echo "scripts/test.sh: ${job_names[$i]} failed; its log:" >&2
      tail -40 "$jobs_dir/${job_names[$i]}.log" >&2
      failed=1
    fi
  done
  job_pids=()
  job_names=()
  return "$failed"
}
trap 'stop_jobs; rm -rf "$jobs_dir"; step "end"; rm -f "$times_file"; printf "%s\n" "== wall and CPU time per step" "${step_times[@]}" "$(printf "%6d s  in all" $SECONDS)"' EXIT

# The programs the studies measure (gost, frp, vegeta, CoreDNS, dnsproxy, Caddy, ethr,
# goresponsiveness, dnspyre, upstream's iperf3), built from the Go module proxy at pinned
# versions or from ../shared/peers into one directory (only what is missing), then on PATH. They need nothing
# from apt but a C compiler, so they start first where there is one.
if ! command -v go >/dev/null 2>&1; then
  echo "scripts/test.sh: go is needed to build the studies' programs (scripts/peers.sh)" >&2
  exit 1
fi
step "installing in the background what is missing"
peers_started=0
if command -v cc >/dev/null 2>&1; then
  background "peers" scripts/peers.sh
  peers_started=1
fi
# Python's hdrhistogram: an HdrHistogram library that is not ours, to check merged members'
# histograms exact against every raw sample. kubernetes-validate (with PyYAML): checks
# `wirespeed k8s job`'s manifests offline against Kubernetes' own schemas (no cluster runs
# here). ansible-core: a study written as a playbook (`bench --ansible`) is run with Ansible
# itself against the tests' ssh hosts. One pip after another: they share PyYAML.
need_pip=()
python3 -c 'import hdrh.histogram' >/dev/null 2>&1 || need_pip+=(hdrhistogram==0.10.8)
command -v kubernetes-validate >/dev/null 2>&1 || need_pip+=(kubernetes-validate==1.37.0)
command -v ansible-playbook >/dev/null 2>&1 || need_pip+=(ansible-core==2.17.14)
if [ ${#need_pip[@]} -gt 0 ]; then
  background "python-packages" python3 -m pip install --quiet --disable-pip-version-check "${need_pip[@]}"
fi

need_apt=()
command -v iperf3 >/dev/null 2>&1 || need_apt+=(iperf3)
# The peer the latency benchmark scenario (benches/latency.toml) runs beside wirespeed.
command -v sockperf >/dev/null 2>&1 || need_apt+=(sockperf)
# The HTTP clients the HTTP benchmark scenarios (benches/http*.toml) run beside wirespeed's:
# wrk, hey, and nghttp2's h2load.
command -v wrk >/dev/null 2>&1 || need_apt+=(wrk)
command -v hey >/dev/null 2>&1 || need_apt+=(hey)
command -v h2load >/dev/null 2>&1 || need_apt+=(nghttp2-client)
# DNS-OARC's dnsperf, the client benches/dns.toml runs beside wirespeed's.
command -v dnsperf >/dev/null 2>&1 || need_apt+=(dnsperf)
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_apt+=(nginx-light)
# ip (network namespaces for trace's multi-hop paths) and setpriv (unprivileged ping checks).
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || need_apt+=(iproute2)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# nftables: a study's emulated links drop packets at random with it where the kernel has no
# netem (crates/netlab).
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || need_apt+=(nftables)
# tc (iproute2) sets the links' rates; OpenSSH's server and client: hosts reached over ssh.
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
# curl: the client the HTTP fixture is tested with.
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# socat: an echo service for latency --external.
command -v socat >/dev/null 2>&1 || need_apt+=(socat)
# Chromium: HTML reports are opened headless and their charts must render.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# mmdblookup (libmaxminddb): reads back the GeoIP databases the web tests write.
command -v mmdblookup >/dev/null 2>&1 || need_apt+=(mmdb-bin)
# Node.js and npm: playwright-core drives Chromium through the web speed test's pages.
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# script (a pseudo-terminal for the live panel's test) is in bsdutils, which Debian always has.
command -v script >/dev/null 2>&1 || need_apt+=(bsdutils)
# cmake and libclang: Cloudflare's mach (below) builds BoringSSL with them.
command -v mach >/dev/null 2>&1 || {
  command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
  # libclang itself: an image may have only libclang-cpp, which bindgen cannot use.
  ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1 \
    || need_apt+=(libclang-dev)
}
# Real DNS servers `wirespeed dns` is checked against.
[ -x /usr/sbin/unbound ] || need_apt+=(unbound)
[ -x /usr/sbin/nsd ] || need_apt+=(nsd)
[ -x /usr/sbin/knotd ] || need_apt+=(knot)
[ -x /usr/sbin/named ] || need_apt+=(bind9)
# zsh and fish: `wirespeed completions` is loaded in each (bash is Debian's own); groff and
# man-db render `wirespeed man`'s pages; dpkg-deb, objdump and systemd-analyze build and check
# the Debian package (scripts/deb.sh).
command -v zsh >/dev/null 2>&1 || need_apt+=(zsh)
command -v fish >/dev/null 2>&1 || need_apt+=(fish)
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)
command -v man >/dev/null 2>&1 || need_apt+=(man-db)
command -v objdump >/dev/null 2>&1 || need_apt+=(binutils)
command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
# Prometheus, its promtool and the Pushgateway: `--metrics` is scraped, linted and queried
# by the real ones, and `export --format openmetrics` pushed through the gateway.
[ -x /usr/bin/prometheus ] && command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
[ -x /usr/bin/prometheus-pushgateway ] || need_apt+=(prometheus-pushgateway)
# PostgreSQL's server: the shared results store is tested against a real one, which the tests
# start on a private port as the `postgres` user the package creates (its own service stays off).
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
# rathole's TLS transport links OpenSSL (native-tls): its headers and pkg-config, to build it.
command -v rathole >/dev/null 2>&1 || {
  command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
  [ -e /usr/include/openssl/ssl.h ] || need_apt+=(libssl-dev)
}
if [ ${#need_apt[@]} -gt 0 ]; then
  step "installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The DNS servers' packages would start system services on port 53: the tests start
  # their own, so keep the packages from starting anything while they install.
  added_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    added_policy=1
  fi
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
  [ "$added_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi
[ "$peers_started" = 1 ] || background "peers" scripts/peers.sh
# librespeed-cli: the real LibreSpeed command-line client the web speed test is checked with.
if ! command -v librespeed-cli >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/librespeed-cli" ]; then
  # (Built as its release profile says, LTO and one codegen unit: without them its build took
  # 150 s of CPU instead of 130, measured one after the other, and on a fresh machine the CPU is
  # what the installs wait for.)
  background "librespeed-cli" cargo install librespeed-cli --locked --quiet
fi
# rathole: the tunnel the example scenarios measure. Not --locked: its lock file pins time
# 0.3.29, which today's Rust no longer compiles; the newest compatible versions build.
command -v rathole >/dev/null 2>&1 || background "rathole" cargo install rathole --version 0.5.0 --quiet
# oha: the third HTTP client of benches/http*.toml (HTTP/1.1, HTTP/2 and, for http3.toml, HTTP/3,
# which needs its http3 feature; its JSON summary). An oha built without the feature says so
# when asked for HTTP/3 (here of a loopback port where nothing listens), and is built again.
if ! command -v oha >/dev/null 2>&1 \
  || timeout 10 oha -n 1 --no-tui --http-version 3 --insecure https://127.0.0.1:9/ 2>&1 \
    | grep -q "not been built with HTTP/3"; then
  background "oha" env CARGO_PROFILE_RELEASE_DEBUG=0 \
    cargo install oha --version 1.16.0 --locked --quiet --features http3 --force
fi
# Cloudflare's mach (crate cf-mach): a responsiveness client that is not ours, run against the
# web speed test's /.well-known/nq (always with --disable-aim-scores and a local config: its
# defaults reach Cloudflare).
# Its release profile keeps debug information (`debug = 1`), which only lengthens the build.
command -v mach >/dev/null 2>&1 \
  || background "mach" env CARGO_PROFILE_RELEASE_DEBUG=0 cargo install cf-mach --version 0.4.0 --quiet
# cargo-nextest: runs the test binaries side by side, and the example studies alone
# (.config/nextest.toml), so a busy machine does not decide their checks. Without its
# self-update (an HTTP client and TLS to build), as nextest asks of distributors and CI builds,
# and at -O1: a runner that waits on test processes does not show its own speed, while its
# build is a fresh machine's third-longest install (measured alone: 563 s of CPU as it comes,
# 491 s without the self-update, 358 s at -O1 too).
command -v cargo-nextest >/dev/null 2>&1 \
  || background "cargo-nextest" env CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
    cargo install cargo-nextest --locked --quiet --no-default-features --features default-no-update
# playwright-core (pinned in its package-lock.json), which drives Debian's Chromium.
browser_tests=crates/wirespeed/tests/browser
if [ ! -d "$browser_tests/node_modules/playwright-core" ]; then
  background "playwright-core" bash -c 'cd "$1" && npm ci --no-audit --no-fund --loglevel=error' npm "$browser_tests"
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt

# A fresh clone (CI) gains nothing from incremental compilation or full debug info, and they
# are most of the build's disk: without them the build needs about half the space.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi

# A test whose peer or privilege is missing fails here instead of skipping.
export WIRESPEED_REQUIRE_PEERS=1

step "cargo fmt --check"
cargo fmt --all -- --check
# The tests are built and run with the toolchain of Cargo.toml's rust-version: what checks that
# it holds, where a `cargo +VERSION check` beside the tests compiled the whole workspace once
# more (589 s of CI's last run, the longest check but clippy). Clippy and the docs take the
# newest (checks.sh).
step "building the tests with the Rust of rust-version"
msrv=$(scripts/rust-version.sh)
RUSTUP_TOOLCHAIN=$msrv cargo test --workspace --locked --no-run --quiet
if [ ${#job_pids[@]} -gt 0 ]; then
  # The jobs' CPU time counts in this step: a shell adds a child's time when it waits for it.
  step "waiting for the installs"
  wait_for_jobs || exit 1
fi
export PATH="$(scripts/peers.sh --dir):$PATH"

# The checks that run nothing (clippy, docs, the fuzz targets: scripts/checks.sh) compile beside
# the tests, at the lowest priority, in a target directory of their own. Run first, they kept both
# cores busy for about 9 minutes, while the tests leave most of a core idle (0.68 of 2 cores over
# 20 minutes: the studies on emulated links wait on their links). At nice 19 (and, where the
# kernel groups a session's processes, the same for their group) a test's processes take a core
# from them whenever they want one. The job sets its own group's nice once it is in a session of
# its own: set from here, it could land on this script's group (the tests') before the job's
# setsid, which once starved the tests instead.
background "checks" bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 scripts/checks.sh --without-rust-version'
step "tests"
# The crates have no doc tests (nextest would not run them).
tests_passed=1
RUSTUP_TOOLCHAIN=$msrv cargo nextest run --workspace --locked --no-fail-fast || tests_passed=0
step "the checks (scripts/checks.sh), begun beside the tests"
checks_passed=1
wait_for_jobs --log || checks_passed=0
[ "$tests_passed" = 1 ] && [ "$checks_passed" = 1 ]
