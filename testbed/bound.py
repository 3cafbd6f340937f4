"""A lower bound on one synchronization's time from the WAN: the testbed's
"physical limit" line.

The cut bound.  Split the data centers into two sides S and T so that each
side holds workers (transit DCs may go on either side).  However clever the
aggregation, at least one model's worth of bytes (a partial aggregate) must
cross the cut one way and the aggregate must cross back: each direction
carries M bytes, so the sync takes at least M / (the slower direction's
capacity).  And the last chunk to cross one way has to come back as part
of the aggregate: at least M / (the faster direction's capacity), plus the
smallest one-way delay of a link across the cut in each direction.  Both
hold whichever way the algorithm starts.  The bound is the largest over all
cuts, and at least the longest shortest-path delay between two DCs with
workers (one's gradient must reach the other).  Singleton cuts are the
familiar "every DC's data must leave it over its WAN links, and the
aggregate must reach every DC".

Capacities are wire rates; the bytes are TCP payload, so each rate counts
at GOODPUT_SHARE (1448 payload bytes per 1514-byte frame).
"""

import heapq
import itertools

GOODPUT_SHARE = 1448 / 1514
EXHAUSTIVE_UP_TO = 14     # DCs; beyond, singleton cuts and their complements only


def network_of(spec):
    """({dc: workers}, {(src, dst): (bit/s, one-way delay s)}) of a Spec or
    of its JSON form (a run folder's spec.json)."""
    if isinstance(spec, dict):
        dcs = {d["name"]: d["workers"] for d in spec["datacenters"]}
        links = [(w["a"], w["b"], w["ab"], w["ba"]) for w in spec["wan"]]
        get = lambda d: (d["rate"], d["delay"])  # noqa: E731
    else:
        dcs = {d.name: d.workers for d in spec.datacenters}
        links = [(w.a, w.b, w.ab, w.ba) for w in spec.wan]
        get = lambda d: (d.rate, d.delay)  # noqa: E731
    wan = {}
    for a, b, ab, ba in links:
        wan[(a, b)] = get(ab)
        wan[(b, a)] = get(ba)
    return dcs, wan


def cuts(names, holders):
    """Every side S (a set of DC names) that separates DCs holding workers."""
    names = list(names)
    if len(names) <= EXHAUSTIVE_UP_TO:
        for k in range(1, len(names)):
            for side in itertools.combinations(names, k):
                side = set(side)
                if side & holders and holders - side:
                    yield side
    else:
        for h in holders:
            yield {h}
            yield set(names) - {h}


def cut_time(wan, side, model_bytes):
    """The bound one cut gives, in seconds."""
    out = [(r, d) for (s, t), (r, d) in wan.items() if s in side and t not in side]
    into = [(r, d) for (s, t), (r, d) in wan.items() if t in side and s not in side]
    cap_out = sum(r for r, _ in out) * GOODPUT_SHARE
    cap_in = sum(r for r, _ in into) * GOODPUT_SHARE
    if not out or not into or min(cap_out, cap_in) == 0:
        return float("inf")
    bits = model_bytes * 8
    return max(bits / min(cap_out, cap_in),
               bits / max(cap_out, cap_in) + min(d for _, d in out) + min(d for _, d in into))


def farthest_delay(dcs, wan, holders):
    """The longest shortest-path one-way delay between two DCs with workers."""
    worst = 0.0
    for src in holders:
        dist, heap = {src: 0.0}, [(0.0, src)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > dist.get(node, float("inf")):
                continue
            for (s, t), (_, delay) in wan.items():
                if s == node and d + delay < dist.get(t, float("inf")):
                    dist[t] = d + delay
                    heapq.heappush(heap, (d + delay, t))
        worst = max([worst] + [dist.get(h, float("inf")) for h in holders])
    return worst


def sync_lower_bound(spec, model_bytes):
    """(seconds, what binds: a sorted tuple of DC names for a cut, or
    ('latency',)) for one aggregation + distribution of `model_bytes` among
    the DCs with workers.  (0.0, ()) when fewer than two DCs hold workers:
    nothing has to cross the WAN."""
    dcs, wan = network_of(spec)
    holders = {name for name, workers in dcs.items() if workers > 0}
    if len(holders) < 2:
        return 0.0, ()
    best, where = farthest_delay(dcs, wan, holders), ("latency",)
    for side in cuts(dcs, holders):
        t = cut_time(wan, side, model_bytes)
        if t > best:
            best, where = t, tuple(sorted(side))
    return best, where
