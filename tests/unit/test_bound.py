"""The WAN's lower bound on hand-computed topologies."""

import itertools
import random
import textwrap

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed import spec as S
from testbed.bounds.cut import network_of, quickest_flow_time, sync_lower_bound
from agents.planning.wan import GOODPUT_SHARE

M = 10_000_000          # bytes
R = 80e6                # bit/s: M takes 1 s at R (before the payload share)


def bound(text):
    return sync_lower_bound(S.loads(textwrap.dedent(text)), M)


def seconds(rate):
    return M * 8 / (rate * GOODPUT_SHARE)


def test_a_line_is_bound_by_its_end_links():
    t, cut = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit}, {between: [b, c], bw: 80mbit}]
    """)
    # From a to c (or back) everything crosses both links one after the other: M/R.
    assert t == pytest.approx(seconds(R))
    assert cut in (("a", "c"), ("c", "a"), ("a", "b"), ("b", "a"), ("b", "c"), ("c", "b"))


def test_a_star_is_bound_by_one_spoke():
    t, _ = bound("""
    datacenters: [{name: hub, workers: 1}, {name: s1, workers: 1}, {name: s2, workers: 1},
                  {name: s3, workers: 1}]
    wan:
      - {between: [hub, s1], bw: 80mbit}
      - {between: [hub, s2], bw: 160mbit}
      - {between: [hub, s3], bw: 160mbit}
    """)
    assert t == pytest.approx(seconds(R))            # s1's single 80 Mbit/s link


def test_a_full_mesh_spreads_over_every_link_of_a_dc():
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: c, workers: 1},
                  {name: d, workers: 1}]
    wan:
      - {between: [a, b], bw: 80mbit}
      - {between: [a, c], bw: 80mbit}
      - {between: [a, d], bw: 80mbit}
      - {between: [b, c], bw: 80mbit}
      - {between: [b, d], bw: 80mbit}
      - {between: [c, d], bw: 80mbit}
    """)
    # a to b: the direct link and the two two-hop paths, 3R in all -> M/(3R)
    assert t == pytest.approx(seconds(3 * R))


def test_an_asymmetric_link_binds_in_its_slow_direction():
    t, cut = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, reverse: {bw: 20mbit}}]
    """)
    assert t == pytest.approx(seconds(20e6)) and cut == ("b", "a")


def test_a_transit_dc_without_workers_is_not_a_side_of_its_own():
    # Workers in w1..w3 behind one core; the PS DC hangs off the core.
    t, _ = bound("""
    datacenters: [{name: ps, servers: 1}, {name: core}, {name: w1, workers: 1},
                  {name: w2, workers: 1}, {name: w3, workers: 1}]
    wan:
      - {between: [ps, core], bw: 80mbit}
      - {between: [core, w1], bw: 80mbit}
      - {between: [core, w2], bw: 80mbit}
      - {between: [core, w3], bw: 80mbit}
    """)
    assert t == pytest.approx(seconds(R))


def test_only_one_dc_with_workers_needs_no_wan():
    t, cut = bound("""
    datacenters: [{name: a, workers: 2, servers: 1}, {name: b}]
    wan: [{between: [a, b], bw: 1mbit}]
    """)
    assert (t, cut) == (0.0, ())


def test_each_direction_pays_its_own_delay_once():
    # a->b 80 Mbit/s, b->a 40 Mbit/s, 30 ms one way each: the exchange of partial
    # sums finishes when the slower direction's M has arrived, 30 ms after it is sent.
    t, what = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 30ms, reverse: {bw: 40mbit}}]
    """)
    assert t == pytest.approx(seconds(40e6) + 0.03) and what == ("b", "a")
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 300ms}]
    """)
    assert t == pytest.approx(seconds(80e6) + 0.3)


def test_a_line_pays_the_delay_of_every_hop_once():
    t, what = bound("""
    datacenters: [{name: a, workers: 1}, {name: b}, {name: c, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 30ms}, {between: [b, c], bw: 80mbit, delay: 50ms}]
    """)
    assert t == pytest.approx(seconds(R) + 0.08) and what in (("a", "c"), ("c", "a"))


def test_two_paths_of_different_delay_share_the_model():
    # a-b direct: R, 200 ms; a-x-b: R, 50 + 50 ms.  Both paths carry from the moment
    # their first byte lands: R (t - 0.1) + R (t - 0.2) = M -> t = (M/R + 0.3) / 2.
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: x}]
    wan:
      - {between: [a, b], bw: 80mbit, delay: 200ms}
      - {between: [a, x], bw: 80mbit, delay: 50ms}
      - {between: [x, b], bw: 80mbit, delay: 50ms}
    """)
    assert t == pytest.approx((seconds(R) + 0.3) / 2)


def test_a_path_too_slow_to_help_is_left_idle():
    # The same, with the direct link 2 s long: M/R + 0.1 s < 2 s, so only a-x-b carries.
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}, {name: x}]
    wan:
      - {between: [a, b], bw: 80mbit, delay: 2s}
      - {between: [a, x], bw: 80mbit, delay: 50ms}
      - {between: [x, b], bw: 80mbit, delay: 50ms}
    """)
    assert t == pytest.approx(seconds(R) + 0.1)


def test_jittered_links_count_their_earliest_arrival():
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 300ms, jitter: 100ms}]
    """)
    assert t == pytest.approx(seconds(R) + 0.2)


def test_a_tiny_model_is_bound_by_the_farthest_pair_of_dcs():
    t, what = sync_lower_bound(S.loads(textwrap.dedent("""
    datacenters: [{name: a, workers: 1}, {name: b}, {name: c, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 30ms}, {between: [b, c], bw: 80mbit, delay: 50ms}]
    """)), 1)
    # One byte from a to c: 30 + 50 ms one way.
    assert t == pytest.approx(0.08, abs=1e-5) and what in (("a", "c"), ("c", "a"))


def cut_direction_time(links, side, model_bytes):
    """Bisection for the least t with sum over the side's outgoing links of
    rate * max(0, t - delay) >= model_bytes: no byte crosses sooner."""
    out = [(r, d) for (s, t), (r, d) in links.items() if s in side and t not in side]
    if not out:
        return float("inf")
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(r * max(0.0, mid - d) for r, d in out) >= model_bytes:
            hi = mid
        else:
            lo = mid
    return hi


rates = st.sampled_from([0, 1e6, 10e6, 80e6, 1e9])      # 0: no link
delays = st.sampled_from([0.0, 0.005, 0.04, 0.3])


@settings(max_examples=80, deadline=None)
@given(pairs=st.lists(st.tuples(rates, delays, rates, delays), min_size=6, max_size=6),
       workers=st.lists(st.integers(0, 2), min_size=4, max_size=4),
       model_bytes=st.sampled_from([1, 100_000, 10_000_000]))
def test_the_bound_is_at_least_every_cut_and_every_least_delay_path(pairs, workers, model_bytes):
    names = "abcd"
    wan = []
    for (a, b), (ab, dab, ba, dba) in zip(itertools.combinations(names, 2), pairs):
        if ab and ba:
            wan.append({"a": a, "b": b, "ab": {"rate": ab, "delay": dab},
                        "ba": {"rate": ba, "delay": dba}})
    topology = {"datacenters": [{"name": n, "workers": w} for n, w in zip(names, workers)],
                "wan": wan}
    t, _ = sync_lower_bound(topology, model_bytes)
    dcs, links = network_of(topology)
    holders = {n for n, w in dcs.items() if w}
    if len(holders) < 2:
        assert t == 0.0
        return
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_weighted_edges_from((s, d, delay) for (s, d), (_, delay) in links.items())
    for a, b in itertools.permutations(holders, 2):
        path = nx.shortest_path_length(graph, a, b, weight="weight") if nx.has_path(graph, a, b) \
            else float("inf")
        assert t >= path
    for k in range(1, 4):
        for side in map(set, itertools.combinations(names, k)):
            if side & holders and holders - side:
                assert t >= cut_direction_time(links, side, model_bytes) * (1 - 1e-9)


def max_flow_over_time(links, src, dst, horizon):
    """max horizon * value(x) - sum_l delay_l x_l over static flows x from src to
    dst with x_l <= rate_l, as a linear program."""
    from scipy.optimize import linprog
    arcs = list(links)
    nodes = sorted({n for arc in arcs for n in arc})
    cost = [links[a][1] for a in arcs] + [-horizon]
    balance = [[(a[0] == n) - (a[1] == n) for a in arcs] + [-(n == src) + (n == dst)]
               for n in nodes]
    bounds = [(0, links[a][0]) for a in arcs] + [(0, None)]
    return -linprog(cost, A_eq=balance, b_eq=[0] * len(nodes), bounds=bounds,
                    method="highs").fun


@pytest.mark.parametrize("seed", range(12))
def test_the_pair_bound_is_the_quickest_flow_a_linear_program_finds(seed):
    rnd = random.Random(seed)
    links = {}
    for a, b in itertools.combinations("abcde", 2):
        if rnd.random() < 0.6:
            for pair in ((a, b), (b, a)):
                links[pair] = (rnd.choice([1e5, 1e6, 1e7]), rnd.choice([0, 0.005, 0.04, 0.13, 0.3]))
    model_bytes = rnd.choice([1, 1e5, 1e6, 1e7])
    t = quickest_flow_time(links, "a", "e", model_bytes)
    if t == float("inf"):
        assert max_flow_over_time(links, "a", "e", 1e6) == pytest.approx(0, abs=1e-6)
        return
    lo, hi = 0.0, 1e4          # bisection: the least horizon that carries the model
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if max_flow_over_time(links, "a", "e", mid) >= model_bytes else (mid, hi)
    assert t == pytest.approx(hi, rel=1e-6)
