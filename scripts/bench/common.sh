# Shared by the benchmark scripts (sourced, not run): tool checks, the release build, a
# scratch directory removed on exit, a command's CPU seconds, ratios and medians, and two builds
# side by side (before_after).
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

# before_after OLD_PORT NEW_PORT CASE...: two builds of wirespeed, $OLD and $NEW, side by side.
# Each runs its own server on 127.0.0.1 (pinned to core 1) and its clients on core 0. A CASE is
# "name|jq filter|client arguments": one unmeasured run of each build (the first test after a
# server starts is reliably slow), then RUNS runs alternating old, new, old, new, each -t SECS
# with --format json, the figure the filter picks from the report. Prints each run and the
# case's median ratio new / old. ONLY keeps the cases whose name contains it.
before_after() {
  local old_port=$1 new_port=$2; shift 2
  taskset -c 1 "$OLD" server -B 127.0.0.1 -p "$old_port" 2>"$tmp/old.log" & PIDS+=($!)
  taskset -c 1 "$NEW" server -B 127.0.0.1 -p "$new_port" 2>"$tmp/new.log" & PIDS+=($!)
  sleep 0.5
  local c name pick args i o n
  for c in "$@"; do
    IFS='|' read -r name pick args <<<"$c"
    [[ "$name" == *"${ONLY:-}"* ]] || continue
    # shellcheck disable=SC2086
    _ab_run "$OLD" "$old_port" "$pick" $args >/dev/null
    # shellcheck disable=SC2086
    _ab_run "$NEW" "$new_port" "$pick" $args >/dev/null
    : >"$tmp/ratios"
    echo "$name ($args):"
    for i in $(seq 1 "$RUNS"); do
      # shellcheck disable=SC2086
      o=$(_ab_run "$OLD" "$old_port" "$pick" $args)
      # shellcheck disable=SC2086
      n=$(_ab_run "$NEW" "$new_port" "$pick" $args)
      printf "  %d  old %-15.0f new %-15.0f ratio %s\n" "$i" "$o" "$n" "$(ratio "$n" "$o")"
      ratio "$n" "$o" >>"$tmp/ratios"; echo >>"$tmp/ratios"
    done
    echo "$name: median ratio new / old: $(grep . "$tmp/ratios" | median)"
  done
}

# _ab_run BIN PORT JQ ARGS...: one client run of before_after; prints the figure JQ picks.
_ab_run() {
  local bin=$1 port=$2 pick=$3; shift 3
  taskset -c 0 "$bin" "$@" -p "$port" -t "$SECS" --format json --no-save >"$tmp/out"
  jq -r "$pick" "$tmp/out"
}
