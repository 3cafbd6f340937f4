"""Each synchronization is held against the bound of the WAN as it was while
it ran, not the WAN as first configured."""

import pytest

from testbed.bounds.timeline import bounds_per_iteration, time_to_carry, wan_states

M = 1_000_000


def two_dcs(rate=8e6 * 1514 / 1448):
    """Two DCs with a worker each; 1 MB/s of payload each way, no delay."""
    direction = {"rate": rate, "delay": 0.0, "jitter": 0.0, "up": True}
    return {"datacenters": [{"name": "a", "workers": 1, "servers": 1}, {"name": "b", "workers": 1}],
            "wan": [{"a": "a", "b": "b", "ab": dict(direction), "ba": dict(direction)}]}


def test_each_iteration_meets_the_bound_of_the_links_while_it_ran():
    spec = two_dcs()
    # At wall 100 a->b drops to a quarter.
    changes = [{"wall": 100.0, "src": "a", "dst": "b", "rate": 2e6 * 1514 / 1448}]
    iters = [{"it": 0, "wall": 50.0, "sync": 2.0}, {"it": 0, "wall": 51.0, "sync": 3.0},
             {"it": 1, "wall": 104.0, "sync": 4.5},       # began at 99.5: the drop 0.5 s in
             {"it": 2, "wall": 110.0, "sync": 6.0}]       # began at 104: the new rate
    out = bounds_per_iteration(spec, changes, iters, M)
    # Two DCs: each sends its model to the other, 1 s at 1 MB/s, 4 s at 0.25 MB/s;
    # from 99.5, 0.5 MB by the drop and the other 0.5 MB at 0.25 MB/s: 2.5 s.
    assert [(it, s) for it, s, _ in out] == [(0, 3.0), (1, 4.5), (2, 6.0)]
    assert [b for _, _, b in out] == [pytest.approx(1.0), pytest.approx(2.5), pytest.approx(4.0)]


def test_a_change_after_a_synchronization_ended_does_not_touch_its_bound():
    spec = two_dcs()
    changes = [{"wall": 100.0, "src": "a", "dst": "b", "rate": 2e6 * 1514 / 1448}]
    assert bounds_per_iteration(spec, changes, [{"it": 3, "wall": 99.9, "sync": 0.5}], M) == \
        [(3, 0.5, pytest.approx(1.0))]


def test_the_states_start_as_configured_and_leave_the_spec_untouched():
    spec = two_dcs()
    states = wan_states(spec, [{"wall": 5.0, "src": "b", "dst": "a", "up": False}])
    assert [t for t, _ in states] == [float("-inf"), 5.0]
    assert states[1][1]["wan"][0]["ba"]["up"] is False and spec["wan"][0]["ba"]["up"] is True


def test_counted_from_the_last_start_the_wait_is_left_out_of_time_and_start():
    spec = two_dcs()
    changes = [{"wall": 100.0, "src": "a", "dst": "b", "rate": 2e6 * 1514 / 1448}]
    # Iteration 1: the first worker handed over at 97 and waited 4 s for the
    # second, which handed over at 101, after the drop; the second took 5 s.
    iters = [{"it": 1, "wall": 106.0, "sync": 9.0, "wait": 4.0},
             {"it": 1, "wall": 106.0, "sync": 5.0, "wait": 0.0}]
    assert bounds_per_iteration(spec, changes, iters, M) == [(1, 9.0, pytest.approx(1.0))]
    out = bounds_per_iteration(spec, changes, iters, M, from_last_start=True)
    assert out == [(1, 5.0, pytest.approx(4.0))]


def test_both_counts_can_share_one_cache_of_bounds():
    spec = two_dcs()
    changes = [{"wall": 100.0, "src": "a", "dst": "b", "rate": 2e6 * 1514 / 1448}]
    iters = [{"it": 1, "wall": 106.0, "sync": 9.0, "wait": 4.0}, {"it": 2, "wall": 120.0, "sync": 5.0}]
    cache = {}
    shared = [bounds_per_iteration(spec, changes, iters, M, from_last_start=last, cache=cache)
              for last in (True, False)]
    assert shared == [bounds_per_iteration(spec, changes, iters, M, from_last_start=last)
                      for last in (True, False)]
    # Iteration 1 pushed to pulled spans the change (from 97); counted from its last
    # start (101) it met the WAN after the change alone, as iteration 2 did: two bounds.
    assert len(cache) == 2


def test_a_link_carries_its_bytes_at_the_rates_it_had():
    # 1 MB/s for 0.5 s, then a quarter: 1 MB is done at 0.5 + 0.5 / 0.25 = 2.5 s.
    assert time_to_carry([(0.0, 1e6), (0.5, 0.25e6)], 1e6) == pytest.approx(2.5)
    assert time_to_carry([(0.0, 1e6), (0.5, 0.25e6)], 0.4e6) == pytest.approx(0.4)
    # Down for a second, then 1 MB/s.
    assert time_to_carry([(0.0, 0.0), (1.0, 1e6)], 1e6) == pytest.approx(2.0)
    assert time_to_carry([(0.0, 1e6), (0.5, 0.0)], 1e6) == float("inf")
