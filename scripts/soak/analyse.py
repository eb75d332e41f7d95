"""Reads scripts/soak.sh's samples and client exits; prints the soak's figures as Markdown and
exits 1 when a promise is broken: a server gone, open file descriptors or tasks above their
level before the load once it has stopped, tests or connections still open, a client that
failed for a reason other than a stated refusal."""

import collections
import sys


def slope_per_minute(points):
    """Least-squares slope of (seconds, value) points, per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    sxy = sum((t - mx) * (v - my) for t, v in points)
    return 60.0 * sxy / sxx if sxx else 0.0


def main() -> None:
    samples_path, exits_path, warmup, load_end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    rows = collections.defaultdict(list)
    with open(samples_path) as f:
        for line in f:
            phase, server, t, rss, fds, tasks, active, conns = line.split()
            rows[server].append((phase, float(t), int(float(rss)), int(float(fds)), int(float(tasks)), int(float(active)), int(float(conns))))
    broken = []
    print("| server | RSS after warm-up (MiB) | RSS slope after warm-up (KiB/min) | peak RSS (MiB) | fds before / peak / after | tasks before / peak / after | tests, connections open after |")
    print("|---|---|---|---|---|---|---|")
    for server, rs in sorted(rows.items()):
        before = [r for r in rs if r[0] == "before"][-1]
        after = [r for r in rs if r[0] == "after"][-1]
        loaded = [r for r in rs if r[0] == "load" and r[1] >= warmup and r[1] <= load_end]
        slope = slope_per_minute([(r[1], r[2] / 1024) for r in loaded])
        rss_warm = loaded[0][2] / 2**20 if loaded else 0
        peak_rss = max(r[2] for r in rs) / 2**20
        peak_fds = max(r[3] for r in rs)
        peak_tasks = max(r[4] for r in rs)
        print(f"| {server} | {rss_warm:.1f} | {slope:+.1f} | {peak_rss:.1f} | {before[3]} / {peak_fds} / {after[3]} | {before[4]} / {peak_tasks} / {after[4]} | {after[5]}, {after[6]} |")
        if after[3] > before[3] + 8:
            broken.append(f"{server}: {after[3] - before[3]} more file descriptors after the load than before")
        if after[4] > before[4] + 8:
            broken.append(f"{server}: {after[4] - before[4]} more tasks after the load than before")
        if after[5] or after[6]:
            broken.append(f"{server}: {after[5]} tests and {after[6]} connections still open after the load")
    exits = collections.defaultdict(collections.Counter)
    with open(exits_path) as f:
        for line in f:
            kind, code = line.split()
            exits[kind][int(code)] += 1
    print()
    print("| client | runs | exit codes |")
    print("|---|---|---|")
    allowed = {0, 4, 13}  # success; refused with a stated reason; rpm without working conditions
    for kind, codes in sorted(exits.items()):
        spread = ", ".join(f"{c}: {n}" for c, n in sorted(codes.items()))
        print(f"| {kind} | {sum(codes.values())} | {spread} |")
        bad = {c: n for c, n in codes.items() if c not in allowed}
        if bad:
            broken.append(f"{kind}: runs ended with {bad}")
    print()
    if broken:
        print("BROKEN:")
        for b in broken:
            print(f"- {b}")
        sys.exit(1)
    print("every promise held")


if __name__ == "__main__":
    main()
