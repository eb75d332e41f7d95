#!/usr/bin/env python3
"""Derive a study's resources.csv (each role's peak memory and CPU time) from the summary.md
that `wirespeed bench` wrote, for runs made before bench wrote resources.csv itself. The values
are as summary.md printed them (MiB to one decimal, seconds to two); every workload and system
must be a row of the summary.csv beside it.

    scripts/studies/resources-from-summary.py docs/studies/gost-transports
"""
import csv
import io
import re
import sys
from pathlib import Path


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def roles(text, unit):
    """'landing 52.5 MiB, relay 30.5 MiB' -> {'landing': '52.5', 'relay': '30.5'}"""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"(\S+) ([0-9.]+) " + re.escape(unit), part)
        if not m:
            sys.exit(f"cannot read '{part}' as ROLE VALUE {unit}")
        out[m.group(1)] = m.group(2)
    return out


def derive(folder):
    summary = (folder / "summary.md").read_text()
    known = {(r["workload"], r["system"]) for r in csv.DictReader((folder / "summary.csv").open())}
    rows, heading, header = [], None, None
    for line in summary.splitlines():
        if line.startswith("## "):
            heading, header = line[3:].strip(), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        c = cells(line)
        if header is None:
            header = c
            continue
        if set(line) <= set("|-: ") or "Peak RSS" not in header:
            continue
        row = dict(zip(header, c))
        base = heading.split(":")[0].strip()
        swept = header[: header.index("System")]
        if swept:
            names = [n.strip() for n in swept[0].split(",")]
            values = [v.strip() for v in c[0].split(",")]
            workload = f"{base}[{','.join(f'{n}={v}' for n, v in zip(names, values))}]"
        else:
            workload = base
        key = (workload, row["System"])
        if key not in known:
            sys.exit(f"{folder}: {key} is not a row of summary.csv")
        memory, cpu = roles(row["Peak RSS"], "MiB"), roles(row["CPU"], "s")
        for role in list(memory) + [r for r in cpu if r not in memory]:
            rows.append([workload, row["System"], role, memory.get(role, ""), cpu.get(role, "")])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["workload", "system", "role", "peak_rss_mib", "cpu_s"])
    writer.writerows(rows)
    (folder / "resources.csv").write_text(out.getvalue())
    print(f"{folder}/resources.csv: {len(rows)} rows")


for arg in sys.argv[1:]:
    derive(Path(arg))
