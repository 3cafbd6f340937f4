"""The planner's test of a WAN whose rates change faster than its plans
run (`agents/planning/volatility`), and what the coordinator does on one:
hand-checked steps, hold times and memories."""

import dataclasses

import pytest

from agents.overlay.planner.policy import Policy
from agents.planning.volatility import Holding
from tests.unit.test_planner import star_layout


def test_a_link_stepping_every_10_s_holds_10_s_and_is_volatile_under_15_s_iterations():
    holding = Holding(step=0.25, window=60.0, iterations=2.0)
    rate = 1.0
    for t in range(0, 61):
        if t and t % 10 == 0:
            rate = 2.0 if rate == 1.0 else 1.0          # +100% then -50%: both are steps
        holding.observe(float(t), {"a": rate})
    # Six steps (10, 20, ..., 60) in the 60 s window: one every 10 s.
    assert holding.hold(60.0) == pytest.approx(10.0)
    assert holding.volatile(60.0, iteration=15.0)        # 10 < 2 x 15
    assert not holding.volatile(60.0, iteration=4.0)     # 10 > 2 x 4
    assert not holding.volatile(60.0, iteration=None)


def test_moves_under_the_step_do_not_count_and_old_steps_leave_the_window():
    holding = Holding(step=0.25, window=60.0, iterations=2.0)
    holding.observe(0.0, {"a": 100.0})
    holding.observe(5.0, {"a": 120.0})                   # 20%: not a step
    holding.observe(10.0, {"a": 140.0})                  # 40% from the level of 100: a step
    holding.observe(20.0, {"a": 160.0})                  # 14% from 140: not one
    # One step in the window: 60 s, though the link has been watched for 20.
    assert holding.hold(20.0) == pytest.approx(60.0)
    holding.observe(71.0, {"a": 160.0})                  # the step at 10 s is 61 s old
    assert holding.hold(71.0) == float("inf")
    assert not holding.volatile(71.0, iteration=100.0)


def test_the_wan_holds_for_the_median_link():
    holding = Holding(step=0.25, window=60.0, iterations=2.0)
    for t in range(0, 61, 5):
        fast = 1.0 if (t // 5) % 2 == 0 else 3.0          # steps every 5 s
        holding.observe(float(t), {"a": fast, "b": 1.0, "c": 1.0})
    # a holds 5 s, b and c never step: the median link holds.
    assert holding.hold(60.0) == float("inf")
    assert not holding.volatile(60.0, iteration=30.0)


def release(policy, layout, it, now, clock):
    clock[0] = now
    for w, _ in layout.workers:
        replies, decisions = policy.on_message(w, {"type": "ns_release", "it": it})
    return replies, decisions


def settle(policy):
    """Adopt the re-plan the last tick started, as the coordinator does on its next tick."""
    if policy.solving is not None:
        policy.solving.join()
        return policy.tick(now=policy.clock())
    return []


def test_on_a_volatile_wan_the_coordinator_plans_on_the_best_of_the_long_memory_unpaced():
    layout = dataclasses.replace(star_layout(3), options={"check_period": 1.0})
    clock = [0.0]
    policy = Policy(layout, clock=lambda: clock[0])
    links = [f"{a}->{b}" for a, b in policy.links]
    # Every link reads 8 Mbit/s; iterations of 15 s; then every link alternates
    # 2 and 8 Mbit/s every 10 s (a step of -75% or +300% each time the highest
    # reading of the last 8 s moves).
    policy.take_probes({k: {"active": 8e6, "rtt": 0.02} for k in links})
    release(policy, layout, 0, 0.0, clock)
    for it in (1, 2, 3):
        release(policy, layout, it, 15.0 * it, clock)
    assert policy.iteration() == pytest.approx(15.0)
    assert not policy.volatile and policy.policy["pace"]
    full = 8e6 * 1448 / 1514 / 8
    for t in range(46, 90):
        clock[0] = float(t)
        policy.take_probes({k: {"active": 2e6 if (t // 10) % 2 == 0 else 8e6} for k in links})
    # The highest reading of the last 8 s stepped at 46 (to 2), 50 (8), 68 (2), 70 (8)
    # and 88 (2): five steps in the 60 s window, one every 12 s, under 2 x 15 s.
    assert policy.holding.hold(89.0) == pytest.approx(12.0)
    assert policy.volatile
    # The plan's numbers are the best of the last 60 s, not the 2 Mbit/s of the moment.
    assert policy.estimates[("l0", "hub")] == pytest.approx(full)
    policy.tick(now=89.0)
    (replan,) = settle(policy)
    assert replan["decision"] == "replan" and replan["change"] == 1.0 and replan["volatile"]
    assert not policy.policy["pace"]
    # Quiet again: once the steps have left the 60 s window the plan is for a steady
    # WAN, made on the last 8 s and paced.
    for t in range(90, 160):
        clock[0] = float(t)
        policy.take_probes({k: {"active": 4e6} for k in links})
    assert not policy.volatile
    assert policy.estimates[("l0", "hub")] == pytest.approx(full / 2)
    policy.tick(now=160.0)
    (replan,) = settle(policy)
    assert not replan["volatile"] and policy.policy["pace"] and "routes" not in policy.policy


def test_hold_iterations_zero_keeps_the_plan_for_a_steady_wan():
    layout = dataclasses.replace(star_layout(3), options={"hold_iterations": 0})
    clock = [0.0]
    policy = Policy(layout, clock=lambda: clock[0])
    links = [f"{a}->{b}" for a, b in policy.links]
    for it in range(4):
        release(policy, layout, it, 15.0 * it, clock)
    for t in range(46, 90):
        clock[0] = float(t)
        policy.take_probes({k: {"active": 2e6 if (t // 10) % 2 == 0 else 8e6} for k in links})
    # Steps at 50, 68, 70 and 88 (the first reading, at 46, sets the level): 60 s / 4 = 15 s,
    # short enough, but the test is off.
    assert policy.holding.hold(89.0) == pytest.approx(15.0) and not policy.volatile
    # The first plan, made on guesses, is redone now that every link has an estimate,
    # and for a steady WAN: on the 8 s memory (2 Mbit/s, not the 60 s best) and paced.
    policy.tick(now=89.0)
    (replan,) = settle(policy)
    assert replan["change"] == 1.0 and not replan["volatile"] and policy.policy["pace"]
    assert policy.estimates[("l0", "hub")] == pytest.approx(2e6 * 1448 / 1514 / 8)
