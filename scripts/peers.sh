#!/usr/bin/env bash
# Builds the Go programs the studies measure (gost, frp, vegeta, CoreDNS, AdGuard's dnsproxy,
# Caddy: an HTTP/3 server and, as a reverse proxy, an HTTP/3 client that are not ours)
# from the Go module proxy, at pinned versions, and those it refuses (goresponsiveness, the
# reference RPM client; ethr; dnspyre) and upstream's iperf3 (C) from the snapshots in
# ../shared/peers, into one directory that scripts/test.sh and the benchmarks put on PATH. Only
# what is missing (or pinned at another version) is built; a program that fails to build is
# reported with Go's own error and the others go on.
#
#   scripts/peers.sh            # build what is missing; prints the directory (alone on stdout)
#   WIRESPEED_PEERS=DIR scripts/peers.sh
#   scripts/peers.sh --dir      # only prints the directory
#
# Each program is built in a module of its own under $WIRESPEED_PEERS/src (`go get` of its
# packages at the pinned version, then `go build`), not with `go install PKG@VERSION`: the
# proxy here serves exact versions but not version lists, and `go install` asks for the list
# to look up deprecations. versions.txt records each program's version and build time.
set -euo pipefail

peers=${WIRESPEED_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/wirespeed/peers}
bin="$peers/bin"
mkdir -p "$bin" "$peers/src"
if [ "${1:-}" = --dir ]; then
  echo "$bin"
  exit 0
fi
export GOFLAGS=-buildvcs=false

# name  module  version  package=binary ...  [X:VARIABLE]
# X:VARIABLE sets that string variable to the version at link time (`go build -ldflags -X`), as
# the program's own release build does, so its --version says which it is.
# gost v2's tags have no /v2 module path, so only its commits are modules: this is v2.12.0
# plus two fixes (2024-12-31). frp 0.38.0 is the version rathole's benchmark measured; its
# binaries carry the version in their names, the newest frp's do not.
PEERS=(
  "gost github.com/ginuerzh/gost v0.0.0-20241231130840-1d516e35e654 cmd/gost=gost"
  "frp-0.38 github.com/fatedier/frp v0.38.0 cmd/frps=frps-0.38.0 cmd/frpc=frpc-0.38.0"
  "frp github.com/fatedier/frp v0.71.0 cmd/frps=frps cmd/frpc=frpc"
  "vegeta github.com/tsenart/vegeta/v12 v12.13.0 .=vegeta X:main.Version"
  "coredns github.com/coredns/coredns v1.15.0 .=coredns"
  "dnsproxy github.com/AdguardTeam/dnsproxy v0.82.0 .=dnsproxy X:github.com/AdguardTeam/golibs/version.version"
  "caddy github.com/caddyserver/caddy/v2 v2.11.9 cmd/caddy=caddy"
)
# Not here: the module proxy answers "403 Forbidden ... This module version is not available"
# for ethr (github.com/microsoft/ethr at v1.0.0 and at its last commit's pseudo-version: it is
# built from its snapshot in ../shared/peers below), AdGuard Home (github.com/AdguardTeam/AdGuardHome@v0.107.57) and gost v3
# (github.com/go-gost/gost/v3@v3.0.0); dnsproxy is AdGuard's DNS engine in its place.

# Run after `go get`, in the program's module, when a program needs more than its module holds.
# frp 0.6x embeds its web dashboard from web/*/dist, which its Makefile builds with npm and its
# module does not carry: the module is built from a copy with a one-line page in its place
# (the dashboard is no part of any study; frps and frpc are otherwise frp's own).
prepare_frp() {
  local dir
  dir=$(go list -m -f '{{.Dir}}' github.com/fatedier/frp)
  cp -r "$dir" ./frp-src
  chmod -R u+w ./frp-src
  for part in frps frpc; do
    mkdir -p "frp-src/web/$part/dist"
    echo '<!doctype html><title>frp</title><p>The dashboard was not built.' \
      >"frp-src/web/$part/dist/index.html"
  done
  go mod edit -replace github.com/fatedier/frp=./frp-src
}

if ! command -v go >/dev/null; then
  echo "peers.sh: go is needed (apt-get install golang-go, or the Go toolchain)" >&2
  exit 1
fi

failed=()
# Records that $1 ($2) was built (its stamp $3, started at $4, with toolchain $5, Go's where
# not given) in versions.txt.
built() {
  local name=$1 wanted=$2 stamp=$3 start=$4 toolchain=${5:-$(go env GOVERSION)} secs
  echo "$wanted" >"$stamp"
  secs=$(( $(date +%s) - start ))
  grep -v "^$name " "$peers/versions.txt" 2>/dev/null >"$peers/versions.tmp" || true
  echo "$name $wanted built in ${secs}s on $(date -u +%F) with $toolchain" >>"$peers/versions.tmp"
  mv "$peers/versions.tmp" "$peers/versions.txt"
  echo "   built in ${secs}s" >&2
}
# Says that $1 ($2) did not build, with the end of its log $3.
not_built() {
  echo "peers.sh: $1 ($2) did not build; the end of its log ($3):" >&2
  tail -5 "$3" >&2
  failed+=("$1")
}
for entry in "${PEERS[@]}"; do
  read -r name module version targets <<<"$entry"
  stamp="$bin/.$name.version"
  wanted="$module@$version"
  ldflags=()
  if [[ "$targets" == *" X:"* ]]; then
    ldflags=(-ldflags "-X ${targets##* X:}=$version")
    targets=${targets% X:*}
    wanted="$wanted, version stamped"
  fi
  all_there=1
  for t in $targets; do [ -x "$bin/${t#*=}" ] || all_there=0; done
  if [ "$all_there" = 1 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    continue
  fi
  echo "== building $name ($wanted)" >&2
  src="$peers/src/$name"
  rm -rf "$src" && mkdir -p "$src"
  start=$(date +%s)
  log="$peers/$name.log"
  if (
    cd "$src"
    go mod init "wirespeed.peers/$name" >/dev/null 2>&1
    pkgs=()
    for t in $targets; do
      pkg=${t%%=*}
      [ "$pkg" = . ] && pkgs+=("$module@$version") || pkgs+=("$module/$pkg@$version")
    done
    go get "${pkgs[@]}"
    prepare="prepare_${name//[-.]/_}"
    if declare -F "$prepare" >/dev/null; then "$prepare"; fi
    for t in $targets; do
      pkg=${t%%=*} out=${t#*=}
      [ "$pkg" = . ] && path=$module || path=$module/$pkg
      go build -trimpath "${ldflags[@]}" -o "$bin/$out" "$path"
    done
  ) >"$log" 2>&1; then
    built "$name" "$wanted" "$stamp" "$start"
  else
    not_built "$name" "$wanted" "$log"
  fi
done
# Programs the module proxy refuses, built from the snapshots in ../shared/peers (its README
# says how each builds). That folder is read-only: each is copied under $peers/src and built
# there, never in our tree. The stamp is the snapshot's commit (.origins).
shared=${WIRESPEED_SHARED_PEERS:-$(cd "$(dirname "$0")/.." && pwd)/../shared/peers}
# How a snapshot builds, in its copy, into $bin/$1; each with the toolchain versions.txt names.
go_program() {
  go build -trimpath -o "$bin/$1" .
}
go_program_toolchain() {
  go env GOVERSION
}
# iperf3 from the head of its main branch (3.21+: streams on threads of their own, UDP GSO/GRO
# with --gsro), beside Debian's 3.12, which has neither: the fair bandwidth peer, and a second
# version for the iperf3 interop tests. Its own configure and make (a C compiler is all it
# needs), linked statically against its own library so that it runs from PATH with no
# LD_LIBRARY_PATH.
configure_and_make() {
  ./configure --disable-shared --enable-static --without-openssl
  make -j"$(nproc)"
  cp src/iperf3 "$bin/$1"
}
# dnspyre (DNS load over UDP, TCP, DoT, DoH and DoQ): two of its modules (doh-go, doq-go) are
# refused by the proxy, so its copy is pointed at their snapshots (copied beside it); its version
# is the snapshot's commit, stamped as its release build stamps a tag.
dnspyre_program() {
  cp -r "$shared/dnspyre-deps" ./snapshot-deps && chmod -R u+w ./snapshot-deps
  go mod edit -replace "github.com/tantalor93/doq-go=$PWD/snapshot-deps/doq-go" \
    -replace "github.com/tantalor93/doh-go=$PWD/snapshot-deps/doh-go"
  go build -trimpath -ldflags "-X github.com/tantalor93/dnspyre/v3/cmd.Version=v3-${origin:0:12}" \
    -o "$bin/$1" .
}
dnspyre_program_toolchain() {
  go env GOVERSION
}
configure_and_make_toolchain() {
  echo "cc $(cc -dumpfullversion 2>/dev/null || cc -dumpversion)"
}
# name  program  how it builds
SHARED=(
  "goresponsiveness goresponsiveness go_program"
  "ethr ethr go_program"
  "iperf iperf3-3.21 configure_and_make"
  "dnspyre dnspyre dnspyre_program"
)
for entry in "${SHARED[@]}"; do
  read -r name out how <<<"$entry"
  stamp="$bin/.$name.version"
  origin=$(grep "^$name " "$shared/.origins" 2>/dev/null | cut -d' ' -f2 || true)
  if [ -z "$origin" ]; then
    echo "peers.sh: $name: no snapshot in $shared (set WIRESPEED_SHARED_PEERS)" >&2
    failed+=("$name")
    continue
  fi
  wanted="$name@$origin (shared/peers)"
  if [ -x "$bin/$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    continue
  fi
  echo "== building $name ($wanted)" >&2
  src="$peers/src/$name"
  rm -rf "$src" && cp -r "$shared/$name" "$src" && chmod -R u+w "$src"
  start=$(date +%s)
  log="$peers/$name.log"
  toolchain=$("${how}_toolchain")
  if (cd "$src" && "$how" "$out") >"$log" 2>&1; then
    built "$name" "$wanted" "$stamp" "$start" "$toolchain"
  else
    not_built "$name" "$wanted" "$log"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "peers.sh: not built: ${failed[*]}" >&2
fi
echo "$bin"
