#!/usr/bin/env bash
# What `wirespeed bench` costs, in two parts, each measured side by side in one run.
#
# 1. Sampling: one system of 21 idle processes (a shell and 20 sleeps in one group) is sampled
#    while a near-idle workload runs (a UDP ping a second to the sink fixture) for SECS seconds,
#    with sampling off (`metrics = []`), every 1 s and every 10 ms, in alternating rounds. The
#    CPU time wirespeed used (user + system, from the shell's `times`) minus that with sampling
#    off is what sampling costs: at 10 ms it is large enough to measure, and divided by the
#    samples taken it gives the cost of one sample; at 1 s that cost, once a second, is the
#    share of a core sampling takes.
# 2. Runner overhead: the same bandwidth and latency tests run directly (`wirespeed bandwidth`
#    against `wirespeed server`) and through a scenario (`wirespeed bench` starting the same
#    server as its system, probing it, sampling it every second), alternating A B A B. The
#    server is pinned to CPU 1 and the client (or the runner and its in-process client) to
#    CPU 0 in both, so only the runner differs. Reports the median of bench/direct for the
#    throughput and for the round-trip p50; loopback throughput on a shared machine varies by
#    tens of percent from run to run, so a third pair does a fixed amount of work (2 Gbit/s for
#    TEST_SECS) and compares the CPU time client and server used: what the runner adds is
#    there, without the noise of a saturated link.
#
#   ROUNDS=5 SECS=20 TEST_SECS=5 scripts/bench/runner.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-20}
TEST_SECS=${TEST_SECS:-5}
source scripts/bench/common.sh
need taskset jq
BIN=$(realpath "$WS")

# cpu_from TIMES-FILE: the children's user + system seconds from `times`, into $tmp/cpu.
cpu_from() {
  tail -1 "$1" | python3 -c 'import re,sys; u,s=re.findall(r"(\d+)m([\d.]+)s", sys.stdin.read()); print(f"{int(u[0])*60+float(u[1])+int(s[0])*60+float(s[1]):.3f}")' >"$tmp/cpu"
}

# --- 1. sampling -------------------------------------------------------------------------
sampling_scenario() { # INTERVAL METRICS
  cat <<TOML
[scenario]
name = "sampling-cost"
[run]
repeat = 1
[sample]
interval = "$1"
metrics = $2
[[fixture]]
name = "sink"
kind = "bandwidth-sink"
[[system]]
name = "idle"
entry = "{fixture.sink.addr}"
process = [ { role = "idle", cmd = "sh -c 'for i in \$(seq 20); do sleep $((SECS + 30)) & done; echo up; wait'", ready = { log = "up" } } ]
[[workload]]
name = "ping"
kind = "ping"
udp = true
interval = "1s"
deadline = "${SECS}s"
TOML
}
sampling_scenario 1s '[]' >"$tmp/off.toml"
sampling_scenario 1s '["rss", "hwm", "cpu"]' >"$tmp/every1s.toml"
sampling_scenario 10ms '["rss", "hwm", "cpu"]' >"$tmp/every10ms.toml"

# run_cpu FILE: runs the scenario in a child shell and prints the CPU seconds (user + system)
# of what that shell waited for: wirespeed, and the system processes it reaped.
run_cpu() {
  # `times` must run in that shell itself: in a pipe or $(...) it would be a fresh fork's.
  bash -c '"$1" bench "$2" --no-save --out "$3" >/dev/null 2>&1; times >"$4"' _ \
    "$BIN" "$1" "$tmp/out-$(basename "$1" .toml)" "$tmp/times"
  cpu_from "$tmp/times"
  cat "$tmp/cpu"
}
samples_in() { # DIR: samples taken in its one run
  jq length "$1"/runs/*/samples.json
}

echo "== sampling: 21 idle processes, ${SECS} s runs, CPU seconds of wirespeed (user + system)"
printf '%-6s %10s %10s %10s %14s\n' round off 1s 10ms samples@10ms
: >"$tmp/per_sample" && : >"$tmp/share1s"
for r in $(seq "$ROUNDS"); do
  off=$(run_cpu "$tmp/off.toml")
  one=$(run_cpu "$tmp/every1s.toml")
  ten=$(run_cpu "$tmp/every10ms.toml")
  n=$(samples_in "$tmp/out-every10ms")
  printf '%-6s %10s %10s %10s %14s\n' "$r" "$off" "$one" "$ten" "$n"
  # One sample's cost, from the 10 ms runs; and the 1 s runs' extra CPU per second of run.
  awk -v t="$ten" -v o="$off" -v n="$n" 'BEGIN { printf "%.9f\n", (t - o) / n }' >>"$tmp/per_sample"
  awk -v a="$one" -v o="$off" -v s="$SECS" 'BEGIN { printf "%.6f\n", (a - o) / s * 100 }' >>"$tmp/share1s"
done
per=$(median <"$tmp/per_sample")
echo "median cost of one sample (21 processes): $(awk -v p="$per" 'BEGIN { printf "%.1f µs", p * 1e6 }')"
echo "so sampling every 1 s takes $(awk -v p="$per" 'BEGIN { printf "%.4f %%", p * 100 }') of a core"
echo "measured directly at 1 s (extra CPU / run time, median; noise-bound): $(median <"$tmp/share1s") %"

# --- 2. runner overhead ------------------------------------------------------------------
PORT=15291
overhead_scenario() { # KIND OPTION-LINES
  cat <<TOML
[scenario]
name = "overhead"
[run]
repeat = 1
[[system]]
name = "server"
entry = "127.0.0.1:{port.srv}"
process = [ { role = "server", cmd = "taskset -c 1 $BIN server -B 127.0.0.1 -p {port.srv}", ready = { tcp = "{port.srv}" } } ]
[[workload]]
name = "w"
kind = "$1"
time = "${TEST_SECS}s"
$2
TOML
}
overhead_scenario bandwidth "" >"$tmp/bw.toml"
overhead_scenario latency "" >"$tmp/lat.toml"
overhead_scenario bandwidth 'bitrate = "2G"' >"$tmp/fixed.toml"

# direct KIND JQ [FLAGS...]: the server on CPU 1, the test on CPU 0, as the scenario has them;
# prints the figure JQ picks from the report, and leaves the CPU seconds (user + system) of
# both processes in $tmp/cpu.
direct() {
  local kind=$1 pick=$2; shift 2
  bash -c '
    BIN=$1 PORT=$2 KIND=$3 SECS=$4 OUT=$5; shift 5
    taskset -c 1 "$BIN" server -B 127.0.0.1 -p "$PORT" >/dev/null 2>&1 & pid=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
    taskset -c 0 "$BIN" "$KIND" 127.0.0.1:"$PORT" -t "$SECS" --no-save -f json "$@" >"$OUT"
    kill $pid; wait $pid 2>/dev/null
    times >"$OUT.times"' _ "$BIN" $PORT "$kind" "$TEST_SECS" "$tmp/direct.json" "$@"
  cpu_from "$tmp/direct.json.times"
  jq "$pick" "$tmp/direct.json"
}
# through_bench FILE JQ: the same test as a scenario's run; the same outputs.
through_bench() {
  rm -rf "$tmp/ob"
  bash -c 'taskset -c 0 "$1" bench "$2" --no-save --out "$3" >/dev/null; times >"$3.times"' _ \
    "$BIN" "$1" "$tmp/ob"
  cpu_from "$tmp/ob.times"
  jq "$2" "$tmp"/ob/runs/*/report.json
}

echo
echo "== runner overhead: ${TEST_SECS} s tests, server on CPU 1, client or runner on CPU 0"
echo "   (cpu: seconds used by client or runner and server together, for a fixed 2 Gbit/s)"
printf '%-6s %12s %12s %10s %10s %10s %10s\n' round bw-direct bw-bench p50-direct p50-bench cpu-direct cpu-bench
: >"$tmp/bw_ratio" && : >"$tmp/lat_ratio" && : >"$tmp/cpu_ratio"
for r in $(seq "$ROUNDS"); do
  bd=$(direct bandwidth .summary.received_bps)
  bb=$(through_bench "$tmp/bw.toml" .summary.received_bps)
  ld=$(direct latency .summary.rtt.p50_ns)
  lb=$(through_bench "$tmp/lat.toml" .summary.rtt.p50_ns)
  direct bandwidth .summary.received_bps -b 2G >/dev/null
  cd_=$(cat "$tmp/cpu")
  through_bench "$tmp/fixed.toml" .summary.received_bps >/dev/null
  cb=$(cat "$tmp/cpu")
  printf '%-6s %12.3e %12.3e %10s %10s %10s %10s\n' "$r" "$bd" "$bb" "$ld" "$lb" "$cd_" "$cb"
  awk -v a="$bb" -v b="$bd" 'BEGIN { printf "%.4f\n", a / b }' >>"$tmp/bw_ratio"
  awk -v a="$lb" -v b="$ld" 'BEGIN { printf "%.4f\n", a / b }' >>"$tmp/lat_ratio"
  awk -v a="$cb" -v b="$cd_" 'BEGIN { printf "%.4f\n", a / b }' >>"$tmp/cpu_ratio"
done
echo "median throughput bench/direct: $(median <"$tmp/bw_ratio") (1 = no overhead; higher is better)"
echo "median round-trip p50 bench/direct: $(median <"$tmp/lat_ratio") (1 = no overhead; lower is better)"
echo "median CPU for the same 2 Gbit/s, bench/direct: $(median <"$tmp/cpu_ratio") (1 = no overhead)"
