"""The lower bound against the times of concrete synchronization schedules.

A tiny store-and-forward simulator plays chunked schedules over links with a
rate and a delay and checks that the schedule really aggregates: a chunk
may only carry contributions its sender holds, and at the end every DC with
workers holds every worker DC's contribution to every chunk.  No schedule
may beat the bound; where the bound is tight, the best schedule reaches it
as chunks get small.
"""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.bounds.cut import network_of, sync_lower_bound

M = 10_000_000          # bytes
R = 80e6                # bit/s on the wire


def spec(workers, links):
    """The JSON form of a spec: workers {dc: count}; links [(a, b, bit/s, delay s)],
    the same both ways, or (a, b, ab bit/s, ab delay, ba bit/s, ba delay)."""
    wan = []
    for link in links:
        a, b, ab_rate, ab_delay, *rest = link
        ba_rate, ba_delay = rest or (ab_rate, ab_delay)
        wan.append({"a": a, "b": b, "ab": {"rate": ab_rate, "delay": ab_delay},
                    "ba": {"rate": ba_rate, "delay": ba_delay}})
    return {"datacenters": [{"name": n, "workers": w} for n, w in workers.items()], "wan": wan}


def simulate(topology, chunks, transfers):
    """Play `transfers` [(src, dst, chunk, contributors)], each link serving its
    transfers one after another in list order, each as soon as its sender holds
    the contributions it carries; the time when every DC with workers holds
    every contribution to every chunk.  An impossible schedule raises KeyError."""
    dcs, links = network_of(topology)          # payload bytes/s, as the bound counts
    holders = [d for d, w in dcs.items() if w > 0]
    size = M / chunks
    held = {(dc, c, dc): 0.0 for dc in holders for c in range(chunks)}
    free = dict.fromkeys(links, 0.0)
    for src, dst, c, carries in transfers:
        ready = max(held[(src, c, w)] for w in carries)
        rate, delay = links[(src, dst)]
        free[(src, dst)] = max(free[(src, dst)], ready) + size / rate
        for w in carries:
            key = (dst, c, w)
            held[key] = min(held.get(key, math.inf), free[(src, dst)] + delay)
    return max(held[(dc, c, w)] for dc in holders for w in holders for c in range(chunks))


def bound(topology):
    return sync_lower_bound(topology, M)[0]


def exchange(a, b, chunks):
    """Each side sends its contribution, chunk by chunk, and adds what arrives."""
    return [t for c in range(chunks) for t in ((a, b, c, {a}), (b, a, c, {b}))]


def exchange_through(a, mid, b, chunks, mid_works):
    """a and b send to mid; mid adds its own (if it has workers) and passes each
    side's sum on to the other side as soon as a chunk is in."""
    up = [t for c in range(chunks) for t in ((a, mid, c, {a}), (b, mid, c, {b}))]
    own = {mid} if mid_works else set()
    down = [t for c in range(chunks) for t in ((mid, b, c, {a} | own), (mid, a, c, {b} | own))]
    return up + down


@pytest.mark.parametrize("chunks", [1, 2, 5, 20])
def test_two_dcs_exchanging_partial_sums_meet_the_bound_exactly(chunks):
    topology = spec({"a": 1, "b": 1}, [("a", "b", R, 0.3, R / 4, 0.05)])
    assert simulate(topology, chunks, exchange("a", "b", chunks)) == pytest.approx(bound(topology))


def test_two_dcs_300ms_apart_need_one_delay_not_two():
    topology = spec({"a": 1, "b": 1}, [("a", "b", R, 0.3)])
    done = simulate(topology, 1, exchange("a", "b", 1))
    assert bound(topology) == pytest.approx(done)
    assert done == pytest.approx(M * 8 / (R * 1448 / 1514) + 0.3)


@pytest.mark.parametrize("mid_works", [True, False])
def test_a_pipelined_exchange_through_the_middle_of_a_line_approaches_the_bound(mid_works):
    topology = spec({"a": 1, "m": int(mid_works), "b": 1},
                    [("a", "m", R, 0.03), ("m", "b", R, 0.05)])
    lower = bound(topology)
    ratios = [lower / simulate(topology, k, exchange_through("a", "m", "b", k, mid_works))
              for k in (1, 2, 4, 16, 64)]
    assert all(r <= 1 + 1e-12 for r in ratios)
    assert ratios == sorted(ratios) and ratios[0] < 0.6 and ratios[-1] > 0.98


def test_splitting_chunks_over_two_paths_approaches_the_bound():
    # a-b direct (200 ms) and a-x-b (50 + 50 ms): brute force over how many of the
    # chunks take the direct link, for a growing number of chunks.
    topology = spec({"a": 1, "b": 1, "x": 0},
                    [("a", "b", R, 0.2), ("a", "x", R, 0.05), ("x", "b", R, 0.05)])
    lower = bound(topology)

    def split(chunks, direct):
        out = []
        for c in range(chunks):
            for src, dst in (("a", "b"), ("b", "a")):
                if c < direct:
                    out.append((src, dst, c, {src}))
                else:
                    out += [(src, "x", c, {src}), ("x", dst, c, {src})]
        return out

    best = [min(simulate(topology, k, split(k, d)) for d in range(k + 1)) for k in (1, 4, 16, 64)]
    assert all(lower <= b + 1e-9 for b in best)
    assert lower / best[0] < 0.7 and lower / best[-1] > 0.97


def test_the_parameter_server_in_cast_stays_above_the_bound():
    # The ps-scaling setting at 4 DCs: spokes into a backbone, server with the hub's worker.
    delays = {"virginia": 0.01, "oregon": 0.025, "frankfurt": 0.035, "tokyo": 0.06}
    topology = spec(dict({n: 1 for n in delays}, backbone=0),
                    [(n, "backbone", 50e6, d) for n, d in delays.items()])
    push, pull = [], []
    for w in delays:
        if w != "virginia":
            push += [(w, "backbone", 0, {w}), ("backbone", "virginia", 0, {w})]
            pull += [("virginia", "backbone", 0, set(delays)), ("backbone", w, 0, set(delays))]
    done = simulate(topology, 1, push + pull)
    assert bound(topology) < done / 2      # the in-cast: 3 models each way over one uplink


def test_a_schedule_that_skips_a_contribution_is_refused():
    topology = spec({"a": 1, "b": 1, "c": 1}, [("a", "b", R, 0.0), ("b", "c", R, 0.0)])
    with pytest.raises(KeyError):
        simulate(topology, 1, exchange_through("a", "b", "c", 1, mid_works=False))


links = st.tuples(st.sampled_from([1e6, 10e6, 80e6, 1e9]), st.sampled_from([0.0, 0.005, 0.04, 0.3]))


@settings(max_examples=60, deadline=None)
@given(ab=links, ba=links, ac=links, ca=links, bc=links, cb=links,
       chunks=st.integers(1, 8), ring=st.booleans())
def test_no_schedule_on_a_triangle_beats_the_bound(ab, ba, ac, ca, bc, cb, chunks, ring):
    topology = spec({"a": 1, "b": 1, "c": 1},
                    [("a", "b", *ab, *ba), ("a", "c", *ac, *ca), ("b", "c", *bc, *cb)])
    if ring:
        # Reduce-scatter then all-gather round a -> b -> c -> a, each DC owning one
        # third of the chunks.
        order = ["a", "b", "c"]
        reduce, gather = [], []
        for c in range(chunks):
            p0, p1, p2 = (order[(c + i) % 3] for i in range(3))
            reduce += [(p0, p1, c, {p0}), (p1, p2, c, {p0, p1})]
            gather += [(p2, p0, c, set(order)), (p0, p1, c, set(order))]
        transfers = reduce + gather
    else:
        transfers = [(s, d, c, {s}) for c in range(chunks)
                     for s, d in itertools.permutations("abc", 2)]
    assert bound(topology) <= simulate(topology, chunks, transfers) * (1 + 1e-9)
