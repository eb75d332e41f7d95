# Shared by the benchmark scripts (sourced, not run): tool checks, the release build, a
# scratch directory removed on exit, a command's CPU seconds, ratios and medians.
# shellcheck shell=bash

# need TOOL...: stop with an install hint when a tool is missing.
need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is needed: apt-get install $tool" >&2; exit 1; }
  done
}

# cpu_of CMD...: runs CMD (its stdout to $tmp/out) and prints its user+system CPU seconds.
cpu_of() { /usr/bin/time -f "%U %S" "$@" 2>"$tmp/time" >"$tmp/out"; tail -1 "$tmp/time" | awk '{print $1 + $2}'; }
# per100k SECONDS COUNT: CPU seconds per 100,000 of COUNT.
per100k() { awk -v c="$1" -v n="$2" 'BEGIN {printf "%.3f", c / n * 100000}'; }
# ratio A B: A / B to three decimals (0 when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b == 0 ? 0 : a / b)}'; }

# median < numbers: the middle value (the mean of the two middle ones for an even count).
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

cargo build --release -q
# The Go programs scripts/peers.sh builds (gost, frp, vegeta, CoreDNS, dnsproxy).
export PATH="${WIRESPEED_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/wirespeed/peers}/bin:$PATH"
WS=target/release/wirespeed
tmp=$(mktemp -d)
PIDS=()
# Every background server the script starts goes in PIDS; they stop with the script.
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

# start_nginx PORT [PREFIX...]: Debian's nginx with one worker (started through PREFIX, such as
# `taskset -c 1`) serving a 615-byte page, like its welcome page, on 127.0.0.1:PORT, with
# keep-alive unlimited and no access log; it stops with the script. NGINX_HTTP_EXTRA and
# NGINX_SERVER_EXTRA add directives to its http and server blocks.
start_nginx() {
  local port=$1; shift
  mkdir -p "$tmp/html"
  head -c 615 /dev/zero | tr '\0' x >"$tmp/html/index.html"
  cat >"$tmp/nginx.conf" <<CONF
worker_processes 1;
user root;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  ${NGINX_HTTP_EXTRA:-}
  server { listen 127.0.0.1:$port backlog=4096; root $tmp/html; ${NGINX_SERVER_EXTRA:-} }
}
CONF
  "$@" nginx -p "$tmp" -c "$tmp/nginx.conf" -g 'daemon off;' & PIDS+=($!)
  sleep 0.5
}
