"""The volatile-plans benchmark's readings of changing links and its time
of a fixed plan on them (benchmarks/volatile_plans.py), hand-checked on
two DCs whose a -> b changes rate."""

import pytest

from benchmarks.volatile_plans import Profile, blended, dispatched_time, equal, link_changes, time_as_run
from testbed import spec as specmod

MB = 1e6

TWO_DC = """
name: two
datacenters: [{name: a, servers: 1, workers: 1}, {name: b, servers: 1, workers: 1}]
wan: [{between: [a, b], bw: 8mbit, delay: 0ms}]
dynamics:
  - {generator: uniform, link: [a, b], direction: forward, low: 1mbit, high: 2mbit, every: 10s, seed: 1}
"""


def spec_doc():
    return {"wan": [{"a": "a", "b": "b", "ab": {"rate": 8e6, "delay": 0.0, "jitter": 0.0, "up": True},
                     "ba": {"rate": 8e6, "delay": 0.0, "jitter": 0.0, "up": True}}],
            "datacenters": [{"name": "a", "servers": 1, "workers": 1},
                            {"name": "b", "servers": 1, "workers": 1}]}


def profile():
    """a -> b: 1 MB/s of payload to 10 s, 0.25 MB/s to 20 s, 0.5 MB/s after
    (wire rates x 1514 / 1448, so the payload is round); b -> a 8 Mbit/s."""
    wire = 8 * 1514 / 1448
    changes = [{"wall": t, "src": "a", "dst": "b", "rate": r * wire}
               for t, r in ((0.0, 1e6), (10.0, 0.25e6), (20.0, 0.5e6))]
    return Profile(spec_doc(), changes)


def test_the_readings_of_a_link_whose_rate_changed():
    p = profile()
    ab = ("a", "b")
    assert p.now(12.0)[ab] == pytest.approx(0.25 * MB)
    assert p.highest(25.0, 10.0)[ab] == pytest.approx(0.5 * MB)      # 15-25 s: 0.25 then 0.5
    assert p.highest(25.0, 20.0)[ab] == pytest.approx(1.0 * MB)
    # 5-25 s: 5 s at 1, 10 s at 0.25, 5 s at 0.5 -> (5 + 2.5 + 2.5) / 20.
    assert p.mean(5.0, 25.0)[ab] == pytest.approx(0.5 * MB)
    # From 8 s: 2 MB by 10 s, 2.5 MB more by 20 s, the last 0.5 MB at 0.5 MB/s: 13 s.
    assert p.time_to_carry(ab, 8.0, 5 * MB) == pytest.approx(13.0)


def test_a_blend_holds_the_rate_now_for_its_share_of_the_horizon_then_the_past_mean():
    p = profile()
    # At 25 s the rate now is 0.5 MB/s and the mean of the last 10 s 0.375;
    # held 5 s of a 20 s horizon: 0.25 x 0.5 + 0.75 x 0.375.
    rates = blended(p, 25.0, 10.0, 20.0, 5.0)
    assert rates[("a", "b")] == pytest.approx((0.25 * 0.5 + 0.75 * 0.375) * MB)
    # b -> a never changed: every blend of it is its rate, 8 Mbit/s x 1448 / 1514.
    assert rates[("b", "a")] == pytest.approx(8e6 * 1448 / 1514 / 8)
    assert equal({("a", "b"): 1.0, ("b", "a"): 3.0}) == {("a", "b"): 2.0, ("b", "a"): 2.0}


def test_a_fixed_plan_takes_its_busiest_link_s_time_to_carry_its_share_plus_its_fills():
    p = profile()

    class Layout:
        routes = {"a>b": ["a", "b"], "b>a": ["b", "a"]}

    # Two connections, each carrying the whole model at 1 MB/s: a->b and b->a
    # each hold all of it; the plan adds 0.5 s to M / R (a finish of 2.5 s for 2 MB).
    policy = {"rate": 1 * MB, "loads": {"a>b": 1 * MB, "b>a": 1 * MB}, "finish": 2.5}
    # From 9 s, a -> b carries 1 MB by 10 s and the second at 0.25 MB/s by 14 s.
    assert time_as_run(policy, Layout(), p, 9.0, 2 * MB) == pytest.approx(5.0 + 0.5)


def test_the_topology_s_generators_expand_at_the_period_asked_for():
    spec = specmod.loads(TWO_DC)
    changes = link_changes(spec, 30.0, 5.0)
    assert [c["wall"] for c in changes] == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    assert all((c["src"], c["dst"]) == ("a", "b") and 1e6 <= c["rate"] <= 2e6 for c in changes)


def test_a_dispatched_family_carries_what_all_its_slices_links_allow_at_every_moment():
    p = profile()

    class Layout:
        routes = {"a>b": ["a", "b"], "b>a": ["b", "a"]}

    one = {"root": "a", "reduce": [], "broadcast": [["a", "b"]], "rate": 1 * MB}
    other = {"root": "b", "reduce": [], "broadcast": [["b", "a"]], "rate": 1 * MB}
    # One slice on a -> b alone is the fixed plan's time: 1 MB by 10 s, then 0.25 MB/s.
    alone = {"rate": 1 * MB, "finish": 2.5, "slices": [one]}
    assert dispatched_time(alone, Layout(), p, 9.0, 2 * MB) == pytest.approx(5.0 + 0.5)
    # With a slice on b -> a too, both links carry: from 9 s, 1 + 0.9564 MB by
    # 10 s, then 0.25 + 0.9564 MB/s for the rest of 3 MB (8 Mbit/s x 1448 / 1514 / 8).
    back = 8e6 * 1448 / 1514 / 8
    both = {"rate": 1 * MB, "finish": 3.5, "slices": [one, other]}
    took = 1.0 + (3 * MB - 1 * MB - back) / (0.25 * MB + back)
    assert dispatched_time(both, Layout(), p, 9.0, 3 * MB) == pytest.approx(took + 0.5)
