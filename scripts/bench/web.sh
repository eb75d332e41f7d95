#!/usr/bin/env bash
# The web speed test's data endpoints against Debian's nginx (one worker, sendfile on) on
# loopback, both pinned to CPU 1 and curl to CPU 0 (taskset), alternating runs:
#   download: one curl GET of SIZE MiB — wirespeed's /garbage?ckSize=SIZE against nginx serving
#             a file of SIZE MiB of random bytes (from the page cache);
#   upload:   one curl POST of SIZE MiB — wirespeed's /empty against an nginx location that
#             reads the body and discards it (`return 200` with client_max_body_size 0).
# Prints each run and the median ratio wirespeed/nginx of bytes/s (higher is better; the goal
# is ≥ 0.9). Then wirespeed's RSS while 50 browser-style streams (25 downloading 100 MiB
# requests, 25 posting 20 MiB blobs, each looping) run for LOAD_SECS seconds (goal ≤ 64 MiB).
#   RUNS=5 SIZE=1024 LOAD_SECS=5 scripts/bench/web.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}
SIZE=${SIZE:-1024}
LOAD_SECS=${LOAD_SECS:-5}
source scripts/bench/common.sh
need nginx curl taskset
NG=15281
WEB=15282

mkdir -p "$tmp/html"
head -c "$((SIZE << 20))" /dev/urandom >"$tmp/html/garbage"
head -c "$((SIZE << 20))" /dev/zero >"$tmp/upload"
head -c "$((20 << 20))" /dev/urandom >"$tmp/blob"
# nginx serves the garbage file with sendfile, and discards uploads at /empty.
NGINX_HTTP_EXTRA="sendfile on;" \
  NGINX_SERVER_EXTRA="location = /empty { client_max_body_size 0; return 200; }" \
  start_nginx $NG taskset -c 1
taskset -c 1 $WS web -B 127.0.0.1 -p $WEB --no-save --max-upload "$((SIZE + 1))M" \
  --bytes-per-ip 0 --streams-per-ip 0 --requests-per-ip 0 2>"$tmp/web.log" & PIDS+=($!)
web_pid=$!
sleep 0.5

down() { taskset -c 0 curl -sf -o /dev/null -w '%{speed_download}\n' "$1"; }
up() { taskset -c 0 curl -sf -o /dev/null -H 'Expect:' -X POST -T "$tmp/upload" -w '%{speed_upload}\n' "$1"; }
cat "$tmp/html/garbage" >/dev/null   # into the page cache before nginx's first run
down "http://127.0.0.1:$NG/garbage" >/dev/null
down "http://127.0.0.1:$WEB/garbage?ckSize=$SIZE" >/dev/null

for what in download upload; do
  : >"$tmp/ratios"
  echo "$what of $SIZE MiB, one curl stream:"
  echo "run   wirespeed MB/s   nginx MB/s   ratio"
  for i in $(seq 1 "$RUNS"); do
    if [ "$what" = download ]; then
      w=$(down "http://127.0.0.1:$WEB/garbage?ckSize=$SIZE"); n=$(down "http://127.0.0.1:$NG/garbage")
    else
      w=$(up "http://127.0.0.1:$WEB/empty"); n=$(up "http://127.0.0.1:$NG/empty")
    fi
    r=$(awk -v a="$w" -v b="$n" 'BEGIN {printf "%.3f", a/b}')
    printf "%3d  %15.0f  %11.0f   %s\n" "$i" "$((${w%.*} / 1000000))" "$((${n%.*} / 1000000))" "$r"
    echo "$r" >>"$tmp/ratios"
  done
  echo "median ratio wirespeed/nginx ($what): $(median <"$tmp/ratios")"
done

# 50 browser-style streams at once; every loop ends after LOAD_SECS.
echo "RSS under 50 concurrent streams for ${LOAD_SECS} s:"
awk '/^VmRSS/ {print "  before: " $2 " KiB"}' "/proc/$web_pid/status"
end=$(($(date +%s) + LOAD_SECS))
loaders=()
for i in $(seq 1 25); do
  (while [ "$(date +%s)" -lt "$end" ]; do curl -s -o /dev/null "http://127.0.0.1:$WEB/garbage?ckSize=100&r=$i"; done) & loaders+=($!)
  (while [ "$(date +%s)" -lt "$end" ]; do curl -s -o /dev/null -H 'Expect:' --data-binary @"$tmp/blob" "http://127.0.0.1:$WEB/empty?r=$i"; done) & loaders+=($!)
done
peak=0
while [ "$(date +%s)" -lt "$end" ]; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$web_pid/status")
  [ "$rss" -gt "$peak" ] && peak=$rss
  sleep 0.2
done
wait "${loaders[@]}"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$web_pid/status")
echo "  peak sampled RSS: $peak KiB; VmHWM (peak since start): $hwm KiB ($((hwm / 1024)) MiB; goal ≤ 64 MiB)"
