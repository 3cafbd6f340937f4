"""The dispatched executor (`agents/dataplane/dispatch`) and the planner's
dispatcher (`optimal_policy`): every block summed once under the slice
the dispatcher announced, whatever the order things arrive in; the
messages of a hand-built case; the refusals; and the dispatcher's
windows, checked by hand."""

import collections
import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.overlay.planner import plan as planner
from agents.dataplane.dispatch import ARRIVED, ASSIGN, DispatchNode
from agents.dataplane.plan import Piece
from agents.dataplane.tree import AggregationError
from agents.overlay.planner.dispatcher import Dispatch
from agents.overlay.planner.node import Node
from agents.overlay.planner.policy import Policy
from tests.dataplane_sim import (
    Recorder,
    assert_every_node_done,
    assert_every_worker_exact,
    assert_folded_once,
    start_all,
    take_one,
)
from tests.unit.test_dataplane import contributions, random_plan
from tests.planner_layouts import C, kite

DISPATCHER = "disp"


def arrived(it, s, b):
    return DISPATCHER, {"type": ARRIVED, "it": it, "piece": s, "seg": b}, None


def play(nodes, n_blocks, n_slices, given_, rng, window):
    """Run one iteration with a dispatcher that gives every slice `window`
    blocks in a random order of slices, then, each time a block's values
    have reached every contributor, the next block on a slice drawn at
    random (the executor must be right whatever the dispatcher decides);
    every message and announcement is delivered in a random order, FIFO
    per ordered pair.  Returns {block: slice}."""
    queues, pool, chosen, reached = {}, list(range(n_blocks)), {}, collections.Counter()

    def post(src, messages):
        for dst, header, payload in messages:
            queues.setdefault((src, dst), []).append((header, payload))

    def announce(pairs):
        # Contributors hear of each block as it is given out, the rest of the
        # map's nodes of every block at once after the last (as the planner's).
        chosen.update(pairs)
        for name in nodes:
            if name in given_ or not pool:
                told = pairs if name in given_ else sorted(chosen.items())
                queues.setdefault((DISPATCHER, name), []).append(
                    ({"type": ASSIGN, "it": 0, "blocks": [list(p) for p in told]}, None))

    slices = list(range(n_slices)) * window
    rng.shuffle(slices)
    announce([(pool.pop(0), s) for s in slices if pool])
    start_all(nodes, 0, given_, rng, post)
    while queues:
        src, dst, header, payload = take_one(queues, rng)
        if dst == DISPATCHER:
            reached[header["seg"]] += 1
            if reached[header["seg"]] == len(given_) and pool:
                announce([(pool.pop(0), rng.randrange(n_slices))])
            continue
        post(dst, nodes[dst].on_message(src, header, None if payload is None else payload.copy()))
    return chosen


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(0, 3), st.integers(1, 30),
       st.integers(1, 5), st.integers(1, 7), st.integers(1, 3))
def test_every_block_is_summed_once_under_its_announced_slice_in_any_order(
        seed, n, relays, size, n_slices, segment, window):
    rng = random.Random(seed)
    family = random_plan(rng, [f"w{i}" for i in range(n)], [f"r{i}" for i in range(relays)], size, n_slices)
    rule = Recorder()
    given_ = contributions(family, np.random.default_rng(seed))
    nodes = {name: DispatchNode(name, family.pieces, family.contributors, size, segment, rule.fold, arrived)
             for name in family.nodes}
    blocks = len(nodes[family.contributors[0]].blocks)
    chosen = play(nodes, blocks, len(family.pieces), given_, rng, window)
    assert sorted(chosen) == list(range(blocks))
    exact = sum(given_.values())
    assert_folded_once(rule, family, exact)
    assert_every_node_done(nodes, given_, exact)


def two_slices():
    """Workers a and b under servers p and q; slice 0 rooted at p (q sums
    into p, p feeds q), slice 1 rooted at q (the other way)."""
    parent = {"a": "p", "b": "q"}
    zero = Piece(0, 8, "p", {**parent, "q": "p"}, {"p": ["a", "q"], "q": ["b"]})
    one = Piece(0, 8, "q", {**parent, "p": "q"}, {"q": ["b", "p"], "p": ["a"]})
    return (zero, one)


def nodes_of(rule):
    return {n: DispatchNode(n, two_slices(), ("a", "b"), 8, 2, rule.fold, arrived) for n in "abpq"}


def assign(it, *pairs):
    return {"type": ASSIGN, "it": it, "blocks": [list(p) for p in pairs]}


def test_a_hand_built_iteration_sends_each_block_up_and_down_its_announced_slice():
    rule = Recorder()
    nodes = nodes_of(rule)
    a = np.arange(8, dtype=np.float32)
    # A worker sends nothing before a block is announced, then sends it up that slice.
    assert nodes["a"].start(0, a) == []
    out = nodes["a"].on_message(DISPATCHER, assign(0, (0, 0), (3, 1)), None)
    assert [(dst, h["piece"], h["seg"], h["count"]) for dst, h, _ in out] == [("p", 0, 0, 1), ("p", 1, 3, 1)]
    np.testing.assert_array_equal(out[1][2], a[6:8])
    # On slice 1, p is a relay: it sends a's block 3 on to q as soon as it holds its subtree.
    nodes["p"].on_message(DISPATCHER, assign(0, (0, 0), (3, 1)), None)
    up = nodes["p"].on_message("a", out[1][1], out[1][2])
    assert [(dst, h["type"], h["piece"], h["seg"], h["count"]) for dst, h, _ in up] == [("q", "agg", 1, 3, 1)]
    # q, the root of slice 1, folds block 3 with b's part and sends it down.
    b = np.full(8, 10, np.float32)
    nodes["b"].on_message(DISPATCHER, assign(0, (0, 0), (3, 1)), None)
    from_b = nodes["b"].start(0, b)
    assert [(dst, h["piece"], h["seg"]) for dst, h, _ in from_b] == [("q", 0, 0), ("q", 1, 3)]
    nodes["q"].on_message(DISPATCHER, assign(0, (0, 0), (3, 1)), None)
    assert nodes["q"].on_message("b", from_b[1][1], from_b[1][2]) == []     # p's part still missing
    down = nodes["q"].on_message("p", up[0][1], up[0][2])
    assert [(dst, h["type"], h["seg"]) for dst, h, _ in down] == [("b", "dist", 3), ("p", "dist", 3)]
    np.testing.assert_array_equal(down[0][2], a[6:8] + 10)
    assert rule.folds[0][:3] == (6, 8, 2)
    # A contributor tells the dispatcher when the new values reach it; a relay does not.
    assert nodes["b"].on_message("q", down[0][1], down[0][2]) == [arrived(0, 1, 3)]
    assert [dst for dst, _, _ in nodes["p"].on_message("q", down[1][1], down[1][2])] == ["a"]
    # Not done before every block is announced, whatever else has arrived.
    assert not nodes["q"].done(0)


def test_conflicting_announcements_and_blocks_on_another_slice_are_refused():
    nodes = nodes_of(Recorder())
    nodes["p"].on_message(DISPATCHER, assign(0, (1, 0)), None)
    with pytest.raises(AggregationError, match="announced on slices 0 and 1"):
        nodes["p"].on_message(DISPATCHER, assign(0, (1, 1)), None)
    agg = {"type": "agg", "it": 0, "piece": 1, "seg": 1, "count": 1, "stop": False, "started": 0.0}
    with pytest.raises(AggregationError, match="not the slice it is carried by"):
        nodes["p"].on_message("a", agg, np.zeros(2, np.float32))
    # A partial sum may come before its announcement, but then binds the block to its slice.
    nodes["q"].on_message("b", {**agg, "seg": 2}, np.zeros(2, np.float32))
    with pytest.raises(AggregationError, match="came on slice 1 before it was announced on 0"):
        nodes["q"].on_message(DISPATCHER, assign(0, (2, 0)), None)
    with pytest.raises(AggregationError, match="outside the plan"):
        nodes["q"].on_message(DISPATCHER, assign(0, (4, 0)), None)
    with pytest.raises(AggregationError, match="not a child of p in slice 0"):
        nodes["p"].on_message("b", {**agg, "piece": 0, "seg": 3}, np.zeros(2, np.float32))


def dispatched_layout(**options):
    """The kite dispatched; its windows Vegas' unless another `dispatch` is given."""
    options = {"dispatch": "vegas", **options}
    return dataclasses.replace(kite(dispatch_block=3, **options), size=40)


def family_policy(lay):
    """A dispatched policy over the kite: the plan on equal links and the
    plan with d2 -> d3 at a tenth (other trees), as one family."""
    order = planner.overlay_dcs(lay)
    links = {link: C for a, b, *_ in lay.links for link in ((a, b), (b, a))}
    slow = {**links, ("d2", "d3"): C / 10, ("d3", "d2"): C / 10}
    return planner.family_policy([planner.compute_policy(r, {}, order, lay) for r in (links, slow)])


def test_the_family_keeps_each_distinct_pair_of_trees_once_at_its_highest_rate():
    lay = dispatched_layout()
    first = planner.compute_policy({link: C for a, b, *_ in lay.links for link in ((a, b), (b, a))}, {},
                                   planner.overlay_dcs(lay), lay)
    again = {**first, "slices": [{**s, "rate": s["rate"] / 2} for s in first["slices"]]}
    family = planner.family_policy([again, first])
    assert len(family["slices"]) == len(first["slices"])
    assert sorted(s["rate"] for s in family["slices"]) == sorted(s["rate"] for s in first["slices"])
    assert family["dispatch"] and family["readings"] == 2
    assert len(family_policy(lay)["slices"]) > len(first["slices"])


def test_the_coordinator_gives_every_slice_its_window_then_a_block_per_block_ended_until_none_is_left():
    lay = dispatched_layout(dispatch_window=2, dispatch="fixed")
    policy = Policy(lay)
    policy.policy = family_policy(lay)
    slices = len(policy.policy["slices"])
    blocks = planner.blocks_of(policy.policy, lay)
    assert blocks == 14                     # 40 elements in blocks of 3
    first, decisions = policy._first_blocks(0)
    assert decisions == []
    # The workers hear of each block as it is given out.
    assert [dst for dst, _ in first] == lay.worker_names
    pairs = first[0][1]["blocks"]
    # Two rounds over the slices, fastest first: blocks 0.. in order.
    assert pairs == [[k, k % slices] for k in range(2 * slices)]
    for k in range(blocks - 2 * slices):
        block, s = pairs[k]
        # The next block once the values reached the last of the four workers.
        for w in lay.worker_names:
            replies, decisions = policy.on_message(w, {"type": ARRIVED, "it": 0, "piece": s, "seg": block})
            assert bool(replies) == (w == lay.worker_names[-1])
        assert [dst for dst, _ in replies[:4]] == lay.worker_names
        assert replies[0][1]["blocks"] == [[2 * slices + k, s]]
        pairs.append(replies[0][1]["blocks"][0])
    assert sorted(b for b, _ in pairs) == list(range(blocks))
    # With the last block given out, the servers hear the whole map, once.
    assert [dst for dst, _ in replies[4:]] == sorted(s for s, _ in lay.servers)
    assert replies[4][1]["blocks"] == pairs
    assert policy.dispatching == {}
    # And the coordinator logs what each slice carried, its window and its last round trip.
    [done] = decisions
    assert done["decision"] == "dispatched" and done["it"] == 0 and done["seconds"] >= 0
    ended = {s for _, s in pairs[:blocks - 2 * slices]}
    assert [[given, window, least, last is not None] for given, window, least, last in done["slices"]] == \
        [[sum(1 for _, t in pairs if t == s), 2, None, s in ended] for s in range(slices)]
    block, s = pairs[blocks - 1]
    assert policy.on_message("d0-w0", {"type": ARRIVED, "it": 0, "piece": s, "seg": block}) == ([], [])


def test_the_coordinator_s_windows_follow_vegas_or_stay_fixed_as_the_dispatch_option_says():
    for options, control in (({}, (1.0, 3.0)), ({"dispatch": "fixed"}, None),
                             ({"dispatch_alpha": 0.5, "dispatch_beta": 2}, (0.5, 2))):
        lay = dispatched_layout(**options)
        policy = Policy(lay)
        policy.policy = family_policy(lay)
        policy._first_blocks(0)
        dispatch = policy.dispatching[0]
        assert dispatch.control == control and not dispatch.steered
        assert set(dispatch.window.values()) == {2}


def test_every_end_gets_the_next_block_whatever_the_slice_s_round_trip():
    # Slice 1's block took 10 s while slice 0 ended two in 1 s: it still gets the next.
    d = Dispatch(5, 2, 1)
    assert d.arrived_at_one(0, 0, 0.5) == [[2, 0]]
    assert d.arrived_at_one(0, 2, 1.0) == [[3, 0]]
    assert d.arrived_at_one(1, 1, 10.0) == [[4, 1]]


def test_under_control_a_slice_widens_while_none_of_its_blocks_queue_and_narrows_once_they_do():
    d = Dispatch(20, 2, 2, control=(1, 3))
    assert d.first == [[0, 0], [1, 1], [2, 0], [3, 1]]
    # Slice 0's first block took its least, 0.2 s: none queued, window 3, two blocks.
    assert d.arrived_at_one(0, 0, 0.2) == [[4, 0], [5, 0]]
    assert d.window[0] == 3
    # Block 2 was given before that change: no second change this round trip.
    assert d.arrived_at_one(0, 2, 0.6) == [[6, 0]]
    assert d.window[0] == 3
    # Block 4 was given at 0.2 s and took 1 s: 3 (1 - 0.2 / 1) = 2.4 queued, within [1, 3].
    assert d.arrived_at_one(0, 4, 1.2) == [[7, 0]]
    assert d.window[0] == 3
    d = Dispatch(30, 1, 5, control=(1, 3))
    assert d.arrived_at_one(0, 0, 0.2) == [[5, 0], [6, 0]]          # widened to 6
    assert d.arrived_at_one(0, 1, 1.0) == [[7, 0]]                  # no change: block 1 < 5
    # Block 5 took 1 s against 0.2 s: 6 (1 - 0.2) = 4.8 queued, narrowed to 5, with 5 out.
    assert d.arrived_at_one(0, 5, 1.2) == []
    assert d.window[0] == 5


@given(st.integers(1, 60), st.integers(1, 6), st.integers(1, 4), st.integers(0, 10**6))
@settings(max_examples=150, deadline=None)
def test_under_control_every_block_is_given_once_and_every_window_stays_within_its_bounds(
        blocks, slices, window, seed):
    rng = random.Random(seed)
    d = Dispatch(blocks, slices, window, control=(1, 3), widest=5)
    out, given, now = list(d.first), list(d.first), 0.0
    while out:
        block, s = out.pop(rng.randrange(len(out)))
        now += rng.uniform(0.01, 1.0)
        new = d.arrived_at_one(s, block, now)
        out += new
        given += new
        assert all(1 <= w <= 5 for w in d.window.values())
    assert sorted(b for b, _ in given) == list(range(blocks)) and d.done()


def test_a_block_ends_once_its_values_reached_every_contributor():
    d = Dispatch(3, 1, 1, contributors=3)
    assert d.arrived_at_one(0, 0, 1.0) == [] and d.arrived_at_one(0, 0, 1.5) == []
    assert d.arrived_at_one(0, 0, 2.0) == [[1, 0]]
    assert d.rounds[0] == 2.0


def test_a_volatile_wan_s_dispatched_plans_sum_every_contribution_once_over_overlapping_iterations():
    # The coordinator and every node in memory, as they run: the planner's
    # own dispatcher, releases, announcements and messages in a random order.
    lay = dispatched_layout()
    for seed in range(15):
        policy = Policy(lay)
        policy.volatile = True
        policy.estimates = {link: C for link in policy.links}
        assert_every_worker_exact(lay, 3, seed, Node, policy)
        assert policy.policy["dispatch"]
        assert policy.dispatching == {}     # every iteration's blocks all given out


def test_dispatch_is_off_by_default_and_once_asked_for_plans_a_family_from_the_first_estimates():
    assert planner.option(kite(), "dispatch") == "off"
    lay = dispatched_layout()
    policy = Policy(lay)
    assert "dispatch" not in policy._solve(policy.speeds())          # no estimates yet: a guess
    policy.estimates = {link: C for link in policy.links}
    for volatile in (False, True):
        policy.volatile = volatile
        family = policy._solve(policy.speeds())
        assert family["dispatch"] and not family["pace"]
    assert "dispatch" not in Policy(kite())._solve(policy.speeds())


def test_over_real_sockets_the_coordinator_dispatches_and_every_worker_gets_the_exact_sum():
    # The kite's eight agents and the coordinator, each on its own Endpoint
    # over loopback in its own thread: releases, announcements, reports and
    # the data plane's messages as they run, for three iterations.
    import threading
    import time

    from agents.dataplane.driver import DataPlane
    from agents.transport import Endpoint, RecvTimeout
    from tests.ports import free_port

    lay = dataclasses.replace(kite(dispatch="steer", dispatch_block=1250), size=40_000)
    policy = Policy(lay)
    policy.volatile = True
    policy.estimates = {link: C for link in policy.links}
    names = lay.worker_names + [s for s, _ in lay.servers]
    ports = {n: free_port() for n in names + ["coord"]}
    address = {n: ("127.0.0.1", p) for n, p in ports.items()}
    rule = Recorder()
    rng = np.random.default_rng(7)
    given_ = [{w: rng.integers(-99, 99, lay.size).astype(np.float32) for w in lay.worker_names}
              for _ in range(3)]
    got, errors, planes, stop, reports = {}, [], {}, threading.Event(), []
    for n in names:
        ep = Endpoint(n, "127.0.0.1", ports[n], {m: a for m, a in address.items() if m != n},
                      chunk_bytes=16 * 1024, queued=True)
        planes[n] = DataPlane(ep, Node(n, lay, 1000, rule.fold, "coord"), log=lambda kind, **f: None)
    coord = Endpoint("coord", "127.0.0.1", ports["coord"], {m: address[m] for m in names},
                     chunk_bytes=16 * 1024)

    def dispatch():
        while not stop.is_set():
            try:
                m = coord.recv(timeout=0.05)
            except RecvTimeout:
                continue
            if m.header["type"] == ARRIVED:
                reports.append((m.header["it"], m.header["seg"]))
            for dst, header in policy.on_message(m.sender, m.header)[0]:
                coord.send(dst, header)

    def play(n):
        try:
            for it in range(3):
                values, _, _, _ = planes[n].iteration(it, given_[it].get(n))
                got[(n, it)] = values
            planes[n].ep.flush(timeout=20)
        except Exception as e:          # noqa: BLE001 - reported below
            errors.append((n, e))

    threads = [threading.Thread(target=play, args=(n,)) for n in names]
    coordinator = threading.Thread(target=dispatch)
    for t in threads + [coordinator]:
        t.start()
    for t in threads:
        t.join(timeout=60)
    # The last reports may still be on their way when the workers are done.
    deadline = time.monotonic() + 10
    while len(reports) < 3 * 32 * 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    coordinator.join(timeout=10)
    for p in planes.values():
        p.close(drain=False)
    coord.close(drain=False)
    assert not errors and not any(t.is_alive() for t in threads), errors
    assert policy.policy["dispatch"]
    for it in range(3):
        exact = sum(given_[it].values())
        for w in lay.worker_names:
            np.testing.assert_array_equal(got[(w, it)], exact, err_msg=f"{w} iteration {it}")
    # Each worker told the dispatcher of each block once: 32 blocks of 1,250 values.
    assert planner.blocks_of(policy.policy, lay) == 32
    assert sorted(reports) == sorted((it, b) for it in range(3) for b in range(32) for _ in range(4))


def test_under_a_dispatched_plan_a_node_watches_the_coordinator_all_iteration():
    # A node waits on the dispatcher's announcements, so a silent coordinator
    # must count as a dead peer it waits for, not only before the release.
    lay = dispatched_layout()
    policy = family_policy(lay)
    node = Node("d1-s0", lay, 3, Recorder().fold, "coord")
    node.on_message("coord", {"type": "ns_policy", "it": 0, "version": 0, "policy": policy}, None)
    assert "coord" in node.upstream()
    fixed = Node("d1-s0", kite(), 3, Recorder().fold, "coord")
    plain = {k: v for k, v in policy.items() if k != "dispatch"}
    fixed.on_message("coord", {"type": "ns_policy", "it": 0, "version": 0, "policy": plain}, None)
    assert "coord" not in fixed.upstream()
