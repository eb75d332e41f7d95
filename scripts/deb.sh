#!/usr/bin/env bash
# Builds wirespeed's Debian package: the binary, its manual pages (one per subcommand) and shell
# completions (bash, zsh, fish), systemd units for the web speed test and the test server
# (contrib/*.service, run as the `wirespeed` system user the package creates), and the
# maintainer scripts in contrib/debian/.
#
#   scripts/deb.sh                       # builds the release binary, writes target/debian/*.deb
#   scripts/deb.sh --binary PATH --out DIR
#   sudo apt install ./target/debian/wirespeed_*.deb
#
# Needs dpkg-deb, gzip and objdump (binutils); the package is built without root
# (dpkg-deb --root-owner-group).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
out=target/debian
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "scripts/deb.sh: unknown argument $1 (--binary PATH, --out DIR)" >&2; exit 2 ;;
  esac
done
if [ -z "$binary" ]; then
  cargo build --release --locked -p wirespeed
  binary=target/release/wirespeed
fi
[ -x "$binary" ] || { echo "scripts/deb.sh: $binary is not an executable" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

install -Dm755 "$binary" "$root/usr/bin/wirespeed"
# A release binary is stripped here, not in the build profile, so a build keeps its symbols
# for profiling.
strip --strip-unneeded "$root/usr/bin/wirespeed" 2>/dev/null || true

mkdir -p "$root/usr/share/man/man1"
"$root/usr/bin/wirespeed" man --dir "$root/usr/share/man/man1"
gzip -9n "$root"/usr/share/man/man1/*.1

"$root/usr/bin/wirespeed" completions bash |
  install -Dm644 /dev/stdin "$root/usr/share/bash-completion/completions/wirespeed"
"$root/usr/bin/wirespeed" completions zsh |
  install -Dm644 /dev/stdin "$root/usr/share/zsh/vendor-completions/_wirespeed"
"$root/usr/bin/wirespeed" completions fish |
  install -Dm644 /dev/stdin "$root/usr/share/fish/vendor_completions.d/wirespeed.fish"

# The units as contrib/ has them for a manual install, but run by the package's system user
# and from /usr/bin.
for unit in wirespeed-web wirespeed-server; do
  sed -e 's|/usr/local/bin/wirespeed|/usr/bin/wirespeed|' \
      -e 's|^DynamicUser=yes$|User=wirespeed\nGroup=wirespeed|' \
      -e '/^#   install -Dm644/d' \
      "contrib/$unit.service" > "$root/$unit.service"
  install -Dm644 "$root/$unit.service" "$root/lib/systemd/system/$unit.service"
  rm "$root/$unit.service"
done

install -Dm644 README.md "$root/usr/share/doc/wirespeed/README.md"
install -Dm644 docs/metrics.md "$root/usr/share/doc/wirespeed/metrics.md"
cat > "$root/usr/share/doc/wirespeed/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: wirespeed
License: MIT or Apache-2.0
COPYRIGHT

# The newest glibc symbol version the binary needs is the libc6 it depends on.
glibc=$(objdump -T "$root/usr/bin/wirespeed" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
  sort -V | tail -1)
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
mkdir -p "$root/DEBIAN"
install -m755 contrib/debian/postinst contrib/debian/prerm contrib/debian/postrm "$root/DEBIAN/"
cat > "$root/DEBIAN/control" <<CONTROL
Package: wirespeed
Version: $version
Architecture: $arch
Maintainer: wirespeed developers <wirespeed@example.invalid>
Installed-Size: $size
Depends: libc6 (>= ${glibc:-2.17}), adduser
Section: net
Priority: optional
Homepage: https://example.invalid/wirespeed
Description: network performance tests in one binary
 Bandwidth (iperf3-compatible, TCP, UDP and QUIC), latency, connections and packets per
 second, ping and traceroute, HTTP load (HTTP/1.1, h2, HTTP/3) and DNS load (UDP, TCP,
 DoT, DoH, DoQ), responsiveness (RPM), a LibreSpeed-compatible browser speed test, and
 side-by-side studies; every result saved, compared and charted.
CONTROL

mkdir -p "$out"
deb="$out/wirespeed_${version}_${arch}.deb"
# DEB_COMPRESSION=gzip builds faster (the tests use it); xz makes the smaller package.
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
echo "$deb"
