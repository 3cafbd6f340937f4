"""The dispatcher steered by the probes' latest readings (`dispatch: steer`):
the family's slice rates that carry the most on those readings (an LP),
each slice's window from its rate, and the dispatcher taking new windows
while its iteration runs; checked by hand, and every block given once
whatever the windows do."""

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.overlay.planner import plan as planner
from agents.planning.wan import GOODPUT_SHARE
from agents.dataplane.dispatch import ARRIVED
from agents.overlay.planner.dispatcher import Dispatch
from agents.overlay.planner.policy import Policy
from tests.unit.test_dispatch import dispatched_layout, family_policy
from tests.planner_layouts import kite, layout_over


def triangle(**options):
    lay = layout_over([("d0", "d1"), ("d1", "d2"), ("d0", "d2")], dispatch="steer", dispatch_block=3, **options)
    return dataclasses.replace(lay, size=40)


def star_slice(root, others, delay=0.05):
    """Both trees a star on `root`: every other DC sends to it and hears from it."""
    return {"root": root, "reduce": [[o, root] for o in others], "broadcast": [[root, o] for o in others],
            "rate": 1.0, "delay": delay}


TWO_STARS = {"dispatch": True, "slices": [star_slice("d0", ["d1", "d2"]), star_slice("d1", ["d0", "d2"])]}
# d0 <-> d1 carries 1,000 bytes/s each way, d0 <-> d2 300, d1 <-> d2 500.
SPEEDS = {("d0", "d1"): 1000.0, ("d1", "d0"): 1000.0, ("d0", "d2"): 300.0, ("d2", "d0"): 300.0,
          ("d1", "d2"): 500.0, ("d2", "d1"): 500.0}


def test_each_slice_loads_the_links_its_connections_cross():
    # d0's star crosses d1 -> d0, d2 -> d0 up and d0 -> d1, d0 -> d2 down, once each.
    loads = planner.slice_loads(TWO_STARS, triangle())
    assert loads[0] == {("d1", "d0"): 1, ("d2", "d0"): 1, ("d0", "d1"): 1, ("d0", "d2"): 1}
    # Routed over the line d0 - d1 - d2, d0's star crosses d1 -> d2 on its way to d2.
    line = layout_over([("d0", "d1"), ("d1", "d2")], dispatch="steer")
    assert planner.slice_loads(TWO_STARS, line)[0] == {("d1", "d0"): 2, ("d2", "d1"): 1, ("d0", "d1"): 2,
                                                      ("d1", "d2"): 1}


def test_the_family_s_rates_carry_the_most_the_links_allow():
    # Both stars share d0 <-> d1: x0 + x1 <= 1000; d0's alone crosses d0 <-> d2: x0 <= 300;
    # d1's alone d1 <-> d2: x1 <= 500.  The most is 800, x0 = 300 and x1 = 500.
    assert planner.family_rates(TWO_STARS, SPEEDS, triangle()) == pytest.approx([300.0, 500.0])
    # With d0 <-> d1 at 600, the shared links bind: x0 + x1 = 600, d1's up to 500.
    tight = {**SPEEDS, ("d0", "d1"): 600.0, ("d1", "d0"): 600.0}
    rates = planner.family_rates(TWO_STARS, tight, triangle())
    assert sum(rates) == pytest.approx(600.0) and rates[0] <= 300.0 + 1e-6 and rates[1] <= 500.0 + 1e-6


def test_a_slice_s_window_is_its_rate_over_a_round_trip_with_headroom_in_blocks():
    lay = triangle(dispatch_headroom=2.0, dispatch_turnaround=0.2)
    # Blocks of 3 elements are 12 bytes; a round trip is 0.05 + 0.2 = 0.25 s.
    # 2 x 300 x 0.25 / 12 = 12.5 -> 13 blocks; 2 x 500 x 0.25 / 12 = 20.8 -> 21.
    assert planner.steered_windows(TWO_STARS, [300.0, 500.0], lay) == [13, 21]
    # A slice with no rate keeps none out, but the fastest keeps one, so blocks flow.
    assert planner.steered_windows(TWO_STARS, [0.0, 500.0], lay) == [0, 21]
    assert planner.steered_windows(TWO_STARS, [0.0, 0.0], lay) == [1, 0]
    assert planner.steered_windows(TWO_STARS, [0.0, 1.0], lay) == [0, 1]


def test_a_steered_dispatcher_fills_each_window_round_robin_and_takes_new_windows_as_it_runs():
    d = Dispatch(10, 3, 2, windows=[2, 0, 1])
    # Round robin over the slices below their windows: 0 and 2, then 0 again.
    assert d.first == [[0, 0], [1, 2], [2, 0]]
    # An end refills its slice to its window.
    assert d.arrived_at_one(0, 0, 1.0) == [[3, 0]]
    # New windows: slice 1, at none out, gets three at once; 0 and 2 are at theirs.
    assert d.steer([1, 3, 1], 1.5) == [[4, 1], [5, 1], [6, 1]]
    # Slice 0 has two out against a window of one: its next end gives nothing.
    assert d.arrived_at_one(0, 2, 2.0) == []
    assert d.arrived_at_one(1, 4, 2.1) == [[7, 1]]


@given(st.integers(1, 60), st.integers(1, 6), st.integers(0, 10**6))
@settings(max_examples=150, deadline=None)
def test_steered_every_block_is_given_once_and_no_slice_gets_one_beyond_its_window(blocks, slices, seed):
    rng = random.Random(seed)

    def windows():
        out = [rng.randint(0, 4) for _ in range(slices)]
        out[rng.randrange(slices)] = rng.randint(1, 4)      # as `steered_windows`: one keeps a block out
        return out

    d = Dispatch(blocks, slices, 2, windows=windows())
    out, given, now = list(d.first), list(d.first), 0.0

    def check(new):
        for _, s in new:
            assert d.busy[s] <= d.window[s]

    check(d.first)
    while out:
        now += rng.uniform(0.01, 1.0)
        if rng.random() < 0.2:
            new = d.steer(windows(), now)
        else:
            block, s = out.pop(rng.randrange(len(out)))
            new = d.arrived_at_one(s, block, now)
        check(new)
        out += new
        given += new
    assert sorted(b for b, _ in given) == list(range(blocks)) and d.done()


def test_the_coordinator_steers_each_iteration_by_the_latest_readings_and_re_steers_as_they_move():
    lay = dispatched_layout(dispatch="steer")
    policy = Policy(lay)
    family = policy.policy = family_policy(lay)
    # Readings of 1 kbit/s keep the windows a few blocks of 12 bytes, below the 14 blocks.
    bits = {f"{a}->{b}": 1e3 for a, b in policy.links}
    policy.take_probes({k: {"active": v, "rtt": 0.02} for k, v in bits.items()})
    first, _ = policy._first_blocks(0)
    dispatch = policy.dispatching[0]
    assert dispatch.steered and dispatch.control is None and dispatch.policy is family

    def expected(readings):
        speeds = {tuple(k.split("->")): v * GOODPUT_SHARE / 8 for k, v in readings.items()}
        return planner.steered_windows(family, planner.family_rates(family, speeds, lay), lay)

    assert list(dispatch.window.values()) == expected(bits)
    assert 0 < sum(expected(bits)) < planner.blocks_of(family, lay) == 14
    assert len(first[0][1]["blocks"]) == sum(expected(bits))
    # d2 -> d3's last train reads a tenth while its median holds: the windows follow the
    # last train at the next block's end.
    slow = {**bits, "d2->d3": 1e2}
    policy.take_probes({"d2->d3": {"active": 1e3, "last": 1e2, "rtt": 0.02}})
    assert policy.windows[0] == expected(slow) != expected(bits)
    block, s = first[0][1]["blocks"][0]
    for w in lay.worker_names:
        policy.on_message(w, {"type": ARRIVED, "it": 0, "piece": s, "seg": block})
    assert list(dispatch.window.values()) == expected(slow)


def test_steer_steers_the_windows_and_vegas_sets_them_by_its_rule():
    steered = dataclasses.replace(kite(dispatch="steer", dispatch_block=3), size=40)
    vegas = dispatched_layout(dispatch="vegas")
    modes = []
    for lay in (steered, vegas):
        policy = Policy(lay)
        policy.policy = family_policy(lay)
        policy._first_blocks(0)
        modes.append((policy.dispatching[0].steered, policy.dispatching[0].control))
    assert modes == [(True, None), (False, (1.0, 3.0))]
