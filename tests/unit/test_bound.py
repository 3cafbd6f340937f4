"""The cut bound on hand-computed topologies."""

import textwrap

import pytest

from testbed import spec as S
from testbed.bound import GOODPUT_SHARE, sync_lower_bound

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
    # {a}: R out, R in -> M/R; {b}: 2R; {c}: R -> the bound is M/R.
    assert t == pytest.approx(seconds(R))
    assert cut in (("a",), ("c",), ("a", "b"), ("b", "c"))


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
    # singletons: 3R each way; pairs: 4R -> M/(3R)
    assert t == pytest.approx(seconds(3 * R))


def test_an_asymmetric_link_binds_in_its_slow_direction():
    t, cut = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, reverse: {bw: 20mbit}}]
    """)
    assert t == pytest.approx(seconds(20e6))


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


def test_delays_add_to_the_faster_direction_of_a_cut():
    # a->b 80 Mbit/s, b->a 40 Mbit/s, 30 ms one way each:
    # max(M / 40 Mbit/s, M / 80 Mbit/s + 30 ms + 30 ms)
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 30ms, reverse: {bw: 40mbit}}]
    """)
    assert t == pytest.approx(max(seconds(40e6), seconds(80e6) + 0.06))
    t, _ = bound("""
    datacenters: [{name: a, workers: 1}, {name: b, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 300ms}]
    """)
    assert t == pytest.approx(seconds(80e6) + 0.6)


def test_a_tiny_model_is_bound_by_the_farthest_pair_of_dcs():
    t, what = sync_lower_bound(S.loads(textwrap.dedent("""
    datacenters: [{name: a, workers: 1}, {name: b}, {name: c, workers: 1}]
    wan: [{between: [a, b], bw: 80mbit, delay: 30ms}, {between: [b, c], bw: 80mbit, delay: 50ms}]
    """)), 1)
    # The cuts give 8 bit / rate + 30 + 30 ms (link a-b) or + 50 + 50 ms (link b-c): 100 ms.
    # The path a -> c is 80 ms one way, less than the b-c cut.
    assert t == pytest.approx(0.1, abs=1e-5) and what in (("a", "b"), ("c",))
