"""Measured WAN links that topo.yaml can name as `preset: SOURCE/A-B`.

Each source is a CSV file in this folder whose header comment says where
the numbers come from.  A preset gives a link's round-trip latency and its
bandwidth; the spec turns them into a one-way delay and a scaled-down rate.
"""

import csv
import functools
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = {"aws": "aws-regions.csv"}


class PresetError(ValueError):
    pass


@functools.lru_cache(maxsize=None)
def load(source):
    """{(region_a, region_b): (rtt_s, rate_bps)} for both orders of each pair."""
    if source not in SOURCES:
        raise PresetError(f"unknown preset source {source!r} (known: {', '.join(sorted(SOURCES))})")
    table = {}
    with open(os.path.join(HERE, SOURCES[source]), newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            value = (float(row["latency_ms"]) / 1e3, float(row["bandwidth_gbps"]) * 1e9)
            table[(row["region_a"], row["region_b"])] = value
            table[(row["region_b"], row["region_a"])] = value
    return table


def regions(source):
    return sorted({a for a, _ in load(source)})


def lookup(name):
    """'aws/Virginia-Frankfurt' -> (region_a, region_b, rtt_s, rate_bps)."""
    source, sep, pair = name.partition("/")
    a, dash, b = pair.partition("-")
    if not sep or not dash or not a or not b:
        raise PresetError(f"{name!r} is not a preset like aws/Virginia-Frankfurt")
    table = load(source)
    if (a, b) not in table:
        known = ", ".join(regions(source))
        raise PresetError(f"{source} has no link {a}-{b} (regions: {known})")
    rtt, rate = table[(a, b)]
    return a, b, rtt, rate
