"""Sharding, the PS overlay plan and SSGD arithmetic, checked by hand."""

import numpy as np
import pytest

from agents import sharding
from agents.overlay import ps
from agents.sync.ssgd import Rule


def test_keys_go_largest_first_to_the_least_loaded_server():
    sizes = {"a": 10, "b": 40, "c": 30, "d": 20, "e": 5}
    # b->0 (40), c->1 (30), d->1 (50), a->0 (50), e->0 (55)
    assert sharding.assign(sizes, 2) == {"a": 0, "b": 0, "c": 1, "d": 1, "e": 0}
    assert sharding.keys_of(sharding.assign(sizes, 2), 1) == ["c", "d"]


def test_one_server_holds_every_key():
    assert set(sharding.assign({"x": 1, "y": 2}, 1).values()) == {0}


def test_zero_servers_is_refused():
    with pytest.raises(ValueError):
        sharding.assign({"x": 1}, 0)


def test_the_ps_plan_is_a_star():
    owner = {"a": 0, "b": 1, "c": 0}
    push = ps.push_plan(["w0", "w1"], ["s0", "s1"], owner)
    assert [(t.src, t.dst, t.keys) for t in push] == [
        ("w0", "s0", ("a", "c")), ("w0", "s1", ("b",)), ("w1", "s0", ("a", "c")), ("w1", "s1", ("b",))]
    pull = ps.pull_plan(["w0", "w1"], ["s0", "s1"], owner)
    assert [(t.src, t.dst) for t in pull] == [("s0", "w0"), ("s0", "w1"), ("s1", "w0"), ("s1", "w1")]


def test_ssgd_averages_then_steps_with_momentum():
    rule = Rule({"k": np.array([1.0, 2.0])}, ["w0", "w1"], lr=0.5, momentum=0.9)
    assert rule.push("w0", 0, {"k": np.array([1.0, 0.0])}) is False
    assert rule.push("w1", 0, {"k": np.array([3.0, 2.0])}) is True
    # mean gradient [2, 1]; v = [2, 1]; p = [1, 2] - 0.5 * [2, 1] = [0, 1.5]
    np.testing.assert_allclose(rule.step()["k"], [0.0, 1.5])
    rule.push("w0", 1, {"k": np.array([0.0, 0.0])})
    rule.push("w1", 1, {"k": np.array([0.0, 0.0])})
    # v = 0.9 * [2, 1] + 0 = [1.8, 0.9]; p = [0, 1.5] - 0.5 * v = [-0.9, 1.05]
    np.testing.assert_allclose(rule.step()["k"], [-0.9, 1.05])
    assert rule.iteration == 2


def test_ssgd_refuses_a_push_from_the_wrong_iteration_or_twice():
    rule = Rule({"k": np.zeros(1)}, ["w0", "w1"], lr=0.1)
    with pytest.raises(ValueError, match="iteration 1 during 0"):
        rule.push("w0", 1, {"k": np.zeros(1)})
    rule.push("w0", 0, {"k": np.zeros(1)})
    with pytest.raises(ValueError, match="twice"):
        rule.push("w0", 0, {"k": np.zeros(1)})
