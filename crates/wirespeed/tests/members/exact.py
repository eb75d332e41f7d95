#!/usr/bin/env python3
"""Checks a merged report against every raw sample, with an HdrHistogram library that is not
wirespeed's (the `hdrhistogram` package from PyPI): the merged histogram, decoded here, must
equal bucket for bucket a reference histogram built from every request's latency, as the
members' vegeta result lines give them.

usage: exact.py MERGED.json RESULT-LINES...   Prints one JSON object of what it found."""

import json
import sys

from hdrh.histogram import HdrHistogram

PERCENTILES = (50, 90, 99, 99.9, 99.99)


def recorded(h):
    """Every non-empty bucket, as (highest equivalent value, count)."""
    return [(v.value_iterated_to, v.count_at_value_iterated_to) for v in h.get_recorded_iterator()]


def main():
    merged = json.load(open(sys.argv[1]))
    kept = merged["meta"]["histograms"]
    ours = HdrHistogram.decode(kept["named"]["total"])
    reference = HdrHistogram(kept["lowest_ns"], kept["highest_ns"], kept["significant_digits"])
    samples = 0
    for path in sys.argv[2:]:
        for line in open(path):
            r = json.loads(line)
            if r.get("error") or not r.get("code"):
                continue
            reference.record_value(min(max(r["latency"], kept["lowest_ns"]), kept["highest_ns"]))
            samples += 1
    print(json.dumps({
        "samples": samples,
        "merged_count": ours.get_total_count(),
        "reference_count": reference.get_total_count(),
        "buckets_equal": recorded(ours) == recorded(reference),
        "buckets": len(recorded(reference)),
        "merged_percentiles": [ours.get_value_at_percentile(p) for p in PERCENTILES],
        "reference_percentiles": [reference.get_value_at_percentile(p) for p in PERCENTILES],
        "merged_max": ours.get_max_value(),
        "reference_max": reference.get_max_value(),
        "merged_min": ours.get_min_value(),
        "reference_min": reference.get_min_value(),
    }))


if __name__ == "__main__":
    main()
