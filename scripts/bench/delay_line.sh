#!/usr/bin/env bash
# What the user-space delay line (crates/netlab, used where the kernel has no netem) adds, and
# how fast it can go, against a plain veth pair between the same two namespaces, in one study
# interleaved A B C A B C (scripts/bench/delay_line.toml, REPEAT rounds):
#  - added latency: UDP round-trip p50 and p99 through the line holding packets 1 µs, less the
#    veth pair's; and through 1 ms each way, less 2 ms (the line's error at work);
#  - ceiling: TCP throughput and UDP packets/s through the line, as a share of the veth pair's.
# Nothing is pinned: the line's two threads, the server and the client share the machine's
# cores, as they do in a study. Needs root (network namespaces).
#   REPEAT=3 scripts/bench/delay_line.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${REPEAT:-3}
source scripts/bench/common.sh
need python3
sed "s/^repeat = .*/repeat = $REPEAT/; s|cmd = \"wirespeed |cmd = \"$PWD/$WS |" \
  scripts/bench/delay_line.toml >"$tmp/delay_line.toml"
PATH="$PWD/target/release:$PATH" "$WS" bench "$tmp/delay_line.toml" --out "$tmp/out" --no-save >/dev/null
python3 - "$tmp/out/runs" <<'PY'
import glob, json, os, statistics, sys
runs = sys.argv[1]
def median(workload, delay, path):
    values = []
    for f in glob.glob(os.path.join(runs, f"wirespeed_{workload}_delay={delay}__r*", "report.json")):
        r = json.load(open(f))["summary"]
        for key in path:
            r = r[key]
        values.append(r)
    return statistics.median(values)
p50 = {d: median("udp-rtt", d, ["rtt", "p50_ns"]) / 1e3 for d in ["0ms", "1us", "1ms"]}
p99 = {d: median("udp-rtt", d, ["rtt", "p99_ns"]) / 1e3 for d in ["0ms", "1us", "1ms"]}
bw = {d: median("tcp-bw", d, ["received_bps"]) for d in ["0ms", "1us"]}
pps = {d: median("udp-pps", d, ["received_pps"]) for d in ["0ms", "1us"]}
print(f"UDP round trip p50: veth {p50['0ms']:.1f} us, delay line {p50['1us']:.1f} us: adds {p50['1us'] - p50['0ms']:.1f} us")
print(f"UDP round trip p99: veth {p99['0ms']:.1f} us, delay line {p99['1us']:.1f} us: adds {p99['1us'] - p99['0ms']:.1f} us")
print(f"1 ms each way: p50 {p50['1ms']:.1f} us, {p50['1ms'] - 2000 - p50['0ms']:+.1f} us beyond 2 ms and the veth's own")
print(f"TCP: veth {bw['0ms'] / 1e9:.2f} Gbit/s, delay line {bw['1us'] / 1e9:.2f} Gbit/s: ratio {bw['1us'] / bw['0ms']:.3f}")
print(f"UDP pps: veth {pps['0ms'] / 1e3:.0f}k, delay line {pps['1us'] / 1e3:.0f}k: ratio {pps['1us'] / pps['0ms']:.3f}")
PY
