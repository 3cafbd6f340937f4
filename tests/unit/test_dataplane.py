"""The tree executor: every contribution aggregated exactly once at the
root, the new values reach every contributor, in any delivery order, for
the star, MLNET and random trees."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.dataplane.plan import Piece, Plan, PlanError, even_cuts
from agents.dataplane.tree import AggregationError, TreeNode
from agents.overlay.mlnet import MLNET
from agents.overlay.ps import PS
from agents.overlay.layout import Layout
from tests.dataplane_sim import Recorder, assert_folded_once, run_iteration


def nodes_of(plan, segment, rule):
    return {n: TreeNode(n, plan, segment, rule.fold) for n in plan.nodes}


def contributions(plan, rng):
    return {c: rng.integers(-1000, 1000, plan.size).astype(np.float32) for c in plan.contributors}


def check_exact(plan, segment, seed):
    rule = Recorder()
    rng = np.random.default_rng(seed)
    given_ = contributions(plan, rng)
    results = run_iteration(nodes_of(plan, segment, rule), given_, seed=seed)
    exact = sum(given_.values())
    assert_folded_once(rule, plan, exact)
    for name, values in results.items():
        np.testing.assert_array_equal(values, exact, err_msg=name)


def layout(**kw):
    base = dict(size=10, workers=[["a-w0", "a"], ["b-w0", "b"], ["b-w1", "b"], ["c-w0", "c"]],
                servers=[["a-s0", "a"]], server_dc="a", dcs=["a", "b", "c"],
                links=[["a", "b", 1e7, 1e7, 0.01, 0.01], ["b", "c", 1e7, 1e7, 0.01, 0.01]])
    base.update(kw)
    return Layout(**base)


def random_plan(rng, contributors, relays, size, pieces):
    nodes = list(contributors) + list(relays)
    out = []
    for a, b in even_cuts(size, pieces):
        order = nodes[:]
        rng.shuffle(order)
        root, rest = order[0], order[1:]
        parent = {n: rng.choice(order[:i + 1]) for i, n in enumerate(rest)}
        order = nodes[:]
        rng.shuffle(order)
        order.remove(root)
        order.insert(0, root)
        children = {}
        for i, n in enumerate(order[1:]):
            children.setdefault(rng.choice(order[:i + 1]), []).append(n)
        out.append(Piece(a, b, root, parent, children))
    return Plan(size, tuple(contributors), tuple(out)).validate()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 7), st.integers(0, 3), st.integers(1, 40),
       st.integers(1, 4), st.integers(1, 9))
def test_random_trees_aggregate_every_contribution_exactly_once(seed, n, relays, size, pieces,
                                                                segment):
    rng = random.Random(seed)
    plan = random_plan(rng, [f"w{i}" for i in range(n)], [f"r{i}" for i in range(relays)],
                       size, pieces)
    check_exact(plan, segment, seed)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("overlay", [PS, MLNET])
def test_static_overlays_aggregate_every_contribution_exactly_once(overlay, seed):
    lay = layout(size=37, servers=[["a-s0", "a"], ["a-s1", "a"], ["c-s0", "c"]],
                 options={"k": 1 + seed % 3} if overlay is MLNET else {})
    check_exact(overlay(lay.options).plan(lay), segment=1 + seed % 7, seed=seed)


def test_a_relay_forwards_a_segment_before_the_next_one_arrives():
    # w -> r -> s, three segments: r sends segment 0 up as soon as it has it.
    plan = Plan(6, ("w",), (Piece(0, 6, "s", {"w": "r", "r": "s"}, {"s": ["r"], "r": ["w"]}),))
    r = TreeNode("r", plan, 2, None)
    out = r.on_message("w", {"type": "agg", "it": 0, "piece": 0, "seg": 0, "count": 1,
                             "stop": False, "started": 0.0}, np.ones(2, np.float32))
    assert [(dst, h["seg"], h["count"]) for dst, h, _ in out] == [("s", 0, 1)]
    assert not r.done(0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(0, 3), st.integers(1, 30),
       st.integers(1, 4), st.integers(1, 7))
def test_a_node_is_done_exactly_when_the_last_message_for_it_has_arrived(
        seed, n, relays, size, pieces, segment):
    # Every message a node gets is part of its iteration (a child's sum it
    # must send up, new values it must hold or pass on), so it is done on
    # the last one it will get, and not a message before.
    rng = random.Random(seed)
    plan = random_plan(rng, [f"w{i}" for i in range(n)], [f"r{i}" for i in range(relays)],
                       size, pieces)
    given_ = contributions(plan, np.random.default_rng(seed))

    def play(check):
        nodes = nodes_of(plan, segment, Recorder())
        got = dict.fromkeys(nodes, 0)
        flight = []
        for name in sorted(nodes):
            flight += [(name, m) for m in nodes[name].start(0, given_.get(name))]
        check(nodes, got)
        while flight:
            src, (dst, header, payload) = flight.pop(rng.randrange(len(flight)))
            got[dst] += 1
            flight += [(dst, m) for m in nodes[dst].on_message(src, header, payload)]
            check(nodes, got)
        return got

    total = play(lambda nodes, got: None)

    def same_as_total(nodes, got):
        for name, node in nodes.items():
            assert node.done(0) == (got[name] == total[name]), name

    play(same_as_total)


def test_a_contribution_counted_twice_is_refused():
    plan = Plan(2, ("w0", "w1"), (Piece(0, 2, "s", {"w0": "s", "w1": "s"},
                                        {"s": ["w0", "w1"]}),))
    s = TreeNode("s", plan, 2, Recorder().fold)
    header = {"type": "agg", "it": 0, "piece": 0, "seg": 0, "count": 1, "stop": False,
              "started": 0.0}
    s.on_message("w0", header, np.ones(2, np.float32))
    with pytest.raises(AggregationError, match="w0 sent piece 0 segment 0 of iteration 0 to s twice"):
        s.on_message("w0", dict(header, count=1), np.ones(2, np.float32))


def test_a_sum_with_too_many_contributions_is_refused():
    plan = Plan(2, ("w0", "w1"), (Piece(0, 2, "s", {"w0": "s", "w1": "s"},
                                        {"s": ["w0", "w1"]}),))
    s = TreeNode("s", plan, 2, Recorder().fold)
    with pytest.raises(AggregationError, match="holds 2 contributions, not the 1 of its subtree"):
        s.on_message("w0", {"type": "agg", "it": 0, "piece": 0, "seg": 0, "count": 2,
                            "stop": False, "started": 0.0}, np.ones(2, np.float32))


def test_stop_and_the_latest_start_travel_up_and_back_down():
    plan = PS().plan(layout(size=4))
    nodes = nodes_of(plan, 2, Recorder())
    msgs = []
    for name in plan.contributors:
        msgs += [(name, m) for m in nodes[name].start(0, np.zeros(4, np.float32),
                                                      stop=name == "c-w0",
                                                      started=5.0 if name == "b-w1" else 1.0)]
    from tests.dataplane_sim import deliver
    deliver(nodes, msgs, random.Random(0))
    assert nodes["a-w0"].result(0)[1:] == (True, 5.0)


def test_plans_that_lose_or_repeat_a_contribution_are_refused():
    with pytest.raises(PlanError, match="does not reach the root"):
        Plan(2, ("w0", "w1"), (Piece(0, 2, "s", {"w0": "s"}, {"s": ["w0", "w1"]}),)).validate()
    with pytest.raises(PlanError, match="misses w1"):
        Plan(2, ("w0", "w1"), (Piece(0, 2, "s", {"w0": "s", "w1": "s"}, {"s": ["w0"]}),)).validate()
    with pytest.raises(PlanError, match="twice"):
        Plan(2, ("w0",), (Piece(0, 2, "s", {"w0": "s"}, {"s": ["w0"], "w0": ["w0"]}),)).validate()
    with pytest.raises(PlanError, match="cover"):
        Plan(3, ("w0",), (Piece(0, 2, "s", {"w0": "s"}, {"s": ["w0"]}),)).validate()
    with pytest.raises(PlanError, match="does not reach"):
        Plan(2, ("w0", "w1"), (Piece(0, 2, "s", {"w0": "w1", "w1": "w0"},
                                     {"s": ["w0", "w1"]}),)).validate()


def test_plans_round_trip_through_json():
    lay = layout()
    plan = MLNET(lay.options).plan(lay)
    assert Plan.from_dict(plan.to_dict()) == plan


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 8), st.integers(0, 4), st.integers(1, 40),
       st.integers(1, 5))
def test_sums_are_bit_identical_whatever_order_the_network_delivers_in(seed, n, relays, size,
                                                                       segment):
    # Fractional values: float32 addition is not associative, so only a
    # fixed summing order makes two deliveries agree bit for bit.
    rng = random.Random(seed)
    plan = random_plan(rng, [f"w{i}" for i in range(n)], [f"r{i}" for i in range(relays)], size, 2)
    values = np.random.default_rng(seed)
    given_ = {w: values.normal(size=size).astype(np.float32) * 1e3 for w in plan.contributors}
    results = []
    for delivery in range(3):
        rule = Recorder()
        out = run_iteration(nodes_of(plan, segment, rule), given_, seed=seed * 7 + delivery)
        results.append(out["w0"])
    for other in results[1:]:
        assert np.array_equal(other, results[0])
