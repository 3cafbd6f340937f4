"""The backfill executor: two aggregation trees per piece that end at the
same root, the first complete sum taken once, the new values down both
distribution trees; exact in any delivery order, whatever of the backup
lane is lost, and with queued messages dropped once overtaken."""

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.dataplane.backfill import BACKUP, BOTH, PRIMARY, BackfillNode
from agents.dataplane.plan import Piece, Plan
from agents.dataplane.tree import AggregationError, TreeNode
from agents.overlay import optimal
from agents.overlay.optimal_node import Node
from agents.overlay.optimal_policy import Policy
from tests.dataplane_sim import (
    Recorder,
    assert_every_node_done,
    assert_every_worker_exact,
    assert_folded_once,
    start_all,
    take_one,
)
from tests.unit.test_dataplane import contributions, random_plan
from tests.unit.test_planner_detours import C, kite


def backup_of(plan, rng, relays):
    """Other random trees over the same pieces and roots."""
    pieces = []
    for p in plan.pieces:
        q = random_plan(rng, list(plan.contributors), relays, plan.size, 1).pieces[0]
        pieces.append(rerooted(q, p.root, p.start, p.stop))
    return Plan(plan.size, plan.contributors, tuple(pieces)).validate()


def rerooted(piece, root, start, stop):
    """A piece's trees turned to have `root` as their root: the path from
    the old root to the new one reversed in both trees."""
    parent = dict(piece.parent)
    path, here = [root], root
    while here != piece.root:
        here = parent[here]
        path.append(here)
    for child, up in zip(path, path[1:]):     # child -> up becomes up -> child
        parent[up] = child
    parent.pop(root, None)
    down = {k: list(v) for k, v in piece.children.items()}
    holder = {kid: h for h, kids in down.items() for kid in kids}
    path, here = [root], root
    while here != piece.root:
        here = holder[here]
        path.append(here)
    for kid, h in zip(path, path[1:]):        # h -> kid becomes kid -> h
        down[h].remove(kid)
        down.setdefault(kid, []).append(h)
    return Piece(start, stop, root, parent, {k: v for k, v in down.items() if v})


def play(nodes, given_, rng, lose=0.0, obsolete=True):
    """Deliver in a random order (FIFO per ordered pair); each backup-lane
    message is lost with probability `lose`; with `obsolete`, a message a
    sender's node calls obsolete when its turn comes is dropped, as the
    transport drops it.  Returns how many messages went and were dropped."""
    queues, sent, dropped = {}, 0, 0

    def post(src, messages):
        for dst, header, payload in messages:
            if header.get("lane") == BACKUP and rng.random() < lose:
                continue
            queues.setdefault((src, dst), []).append((header, payload))

    start_all(nodes, 0, given_, rng, post)
    while queues:
        src, dst, header, payload = take_one(queues, rng)
        if obsolete and nodes[src].obsolete(header):
            dropped += 1
            continue
        sent += 1
        post(dst, nodes[dst].on_message(src, header, np.array(payload, copy=True)))
    return sent, dropped


def check(plan, backup, segment, seed, lose=0.0, obsolete=True, after=0.0):
    rule = Recorder()
    rng = random.Random(seed)
    given_ = contributions(plan, np.random.default_rng(seed))
    nodes = {n: BackfillNode(n, plan, backup, segment, rule.fold, after=after)
             for n in set(plan.nodes) | set(backup.nodes)}
    sent, dropped = play(nodes, given_, rng, lose, obsolete)
    exact = sum(given_.values())
    assert_folded_once(rule, plan, exact)
    assert_every_node_done(nodes, given_, exact)
    return sent, dropped


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(0, 3), st.integers(1, 30),
       st.integers(1, 4), st.integers(1, 7), st.sampled_from([0.0, 0.5, 1.0]), st.booleans(),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_every_contribution_is_folded_exactly_once_whatever_of_the_backup_lane_arrives(
        seed, n, relays, size, pieces, segment, lose, obsolete, after):
    rng = random.Random(seed)
    names = [f"r{i}" for i in range(relays)]
    plan = random_plan(rng, [f"w{i}" for i in range(n)], names, size, pieces)
    check(plan, backup_of(plan, rng, names), segment, seed, lose, obsolete, after)


def line(*names):
    """A piece over one chain, the first name its root."""
    parent = {b: a for a, b in zip(names, names[1:])}
    return parent, {a: [b] for a, b in zip(names, names[1:])}


def two_ways():
    """Root s with relays p and q: the primary sums w0 and w1 through p,
    the backup through q; each worker sits under its own relay x0, x1,
    which is shared by both lanes below it."""
    up0 = {"w0": "x0", "w1": "x1", "x0": "p", "x1": "p", "p": "s", "q": "s"}
    up1 = {"w0": "x0", "w1": "x1", "x0": "q", "x1": "q", "q": "s", "p": "s"}
    down0 = {"s": ["p", "q"], "p": ["x0", "x1"], "x0": ["w0"], "x1": ["w1"]}
    down1 = {"s": ["q", "p"], "q": ["x0", "x1"], "x0": ["w0"], "x1": ["w1"]}
    plan = Plan(4, ("w0", "w1"), (Piece(0, 4, "s", up0, down0),))
    backup = Plan(4, ("w0", "w1"), (Piece(0, 4, "s", up1, down1),))
    return plan.validate(), backup.validate()


def hand_to(nodes, name, sent):
    """Deliver to `name` what each sender ({sender: messages}) sent it; what it sends on."""
    out = []
    for src, messages in sent.items():
        out += [m for dst, h, v in messages if dst == name for m in nodes[name].on_message(src, h, v)]
    return out


def test_the_root_takes_the_lane_complete_first_and_drops_the_other():
    plan, backup = two_ways()
    rule = Recorder()
    nodes = {n: BackfillNode(n, plan, backup, 2, rule.fold) for n in plan.nodes}
    a, b = np.arange(4, dtype=np.float32), np.full(4, 10, np.float32)
    # A worker's partial sum serves both lanes (its place is the same in
    # each): one message per segment, marked for both.
    assert [(dst, h["seg"], h["lane"]) for dst, h, _ in nodes["w0"].start(0, a)] == \
        [("x0", 0, BOTH), ("x0", 1, BOTH)]
    # x0 is not shared: its parent is p in one lane and q in the other.
    nodes["w1"].start(0, b)
    x0 = nodes["x0"].on_message("w0", {"type": "agg", "it": 0, "piece": 0, "seg": 0, "lane": BOTH,
                                       "count": 1, "stop": False, "started": 0.0}, a[:2])
    assert [(dst, h["lane"]) for dst, h, _ in x0] == [("p", PRIMARY), ("q", BACKUP)]
    x1 = nodes["x1"].on_message("w1", {"type": "agg", "it": 0, "piece": 0, "seg": 0, "lane": BOTH,
                                       "count": 1, "stop": False, "started": 0.0}, b[:2])
    # The backup lane reaches the root first: q sums x0 and x1 and sends up.
    ((dst, h, v),) = hand_to(nodes, "q", {"x0": x0, "x1": x1})
    assert dst == "s" and h["lane"] == BACKUP and h["count"] == 2
    down = nodes["s"].on_message("q", h, v)
    assert [(start, stop, count) for start, stop, count, _ in rule.folds] == [(0, 2, 2)]
    np.testing.assert_array_equal(rule.folds[0][3], a[:2] + b[:2])
    # New values go down the primary tree, and the backup's where it reaches
    # nodes the primary does not from here: s feeds p and q in both, q feeds
    # x0 and x1 only in the backup.
    assert sorted((dst, h["lane"]) for dst, h, _ in down) == [("p", PRIMARY), ("q", PRIMARY)]
    q_down = nodes["q"].on_message("s", [h for dst, h, _ in down if dst == "q"][0], v)
    assert sorted((dst, h["lane"]) for dst, h, _ in q_down) == [("x0", BACKUP), ("x1", BACKUP)]
    # The primary lane's sum comes later: the root drops it, folding nothing twice.
    ((_, h, v),) = hand_to(nodes, "p", {"x0": x0, "x1": x1})
    assert nodes["s"].on_message("p", h, v) == [] and len(rule.folds) == 1
    # p gets the values before its own partial sum left: that one is obsolete now.
    assert not nodes["p"].obsolete(h)
    nodes["p"].on_message("s", {"type": "dist", "it": 0, "piece": 0, "seg": 0, "lane": PRIMARY,
                                "stop": False, "started": 0.0}, a[:2] + b[:2])
    assert nodes["p"].obsolete(h)
    # x0 keeps the first copy and passes it on; the other lane's copy is dropped.
    first = nodes["x0"].on_message("q", {"type": "dist", "it": 0, "piece": 0, "seg": 0, "lane": BACKUP,
                                         "stop": False, "started": 0.0}, a[:2] + b[:2])
    assert [(dst, h["lane"]) for dst, h, _ in first] == [("w0", PRIMARY)]
    assert nodes["x0"].on_message("p", {"type": "dist", "it": 0, "piece": 0, "seg": 0, "lane": PRIMARY,
                                        "stop": False, "started": 0.0}, a[:2] + b[:2]) == []


def test_backup_copies_go_after_the_primary_and_their_later_segments_first():
    plan, backup = two_ways()
    x0 = BackfillNode("x0", plan, backup, 1, None)
    header = {"type": "agg", "it": 0, "piece": 0, "lane": BACKUP}
    ranks = [x0.priority_of({**header, "seg": j}) for j in range(4)]
    assert ranks == [2.0, 1.75, 1.5, 1.25]
    assert x0.priority_of({**header, "seg": 3, "lane": PRIMARY}) == 0
    assert x0.priority_of({**header, "seg": 3, "lane": BOTH}) == 0


def test_a_plan_with_a_relay_that_gets_no_values_is_refused():
    # r sums the workers but is in no distribution tree: it could wait for a
    # partial sum its children dropped once they had the values.
    parent = {"w0": "r", "w1": "r", "r": "s"}
    plan = Plan(2, ("w0", "w1"), (Piece(0, 2, "s", parent, {"s": ["w0", "w1"]}),)).validate()
    with pytest.raises(ValueError, match="gets none of its new values"):
        BackfillNode("r", plan, plan, 1, None)
    other = Plan(2, ("w0", "w1"), (Piece(0, 2, "w0", {"w1": "w0"}, {"w0": ["w1"]}),)).validate()
    with pytest.raises(ValueError, match="pieces, roots"):
        BackfillNode("w0", plan, other, 1, None)


def test_a_partial_sum_from_a_node_that_is_no_child_is_refused():
    plan, backup = two_ways()
    p = BackfillNode("p", plan, backup, 2, None)
    with pytest.raises(AggregationError, match="not a child"):
        p.on_message("x0", {"type": "agg", "it": 0, "piece": 0, "seg": 0, "lane": BACKUP, "count": 1,
                            "stop": False, "started": 0.0}, np.zeros(2, np.float32))


@pytest.mark.parametrize("seed", range(5))
def test_losing_the_whole_backup_lane_finishes_on_exactly_the_primary_trees_messages(seed):
    # What arrives is then what the tree executor sends for the primary plan
    # alone: a worker's partial sum serves both lanes in one message, and
    # nothing of the backup lane is needed.
    plan, backup = two_ways()
    plan = dataclasses.replace(plan, size=12, pieces=(dataclasses.replace(plan.pieces[0], stop=12),))
    backup = dataclasses.replace(backup, size=12, pieces=(dataclasses.replace(backup.pieces[0], stop=12),))
    sent, dropped = check(plan, backup, 3, seed=seed, lose=1.0, obsolete=False)
    trees = {n: TreeNode(n, plan, 3, Recorder().fold) for n in plan.nodes}
    alone, _ = play(trees, contributions(plan, np.random.default_rng(seed)), random.Random(seed),
                    obsolete=False)
    # Four segments over 5 edges up (q sums nothing in the primary) and 6 down.
    assert dropped == 0 and sent == alone == 4 * (5 + 6)


def test_backfill_trees_go_around_the_arcs_the_primary_uses_where_they_can():
    layout = kite()
    order = optimal.overlay_dcs(layout)
    speeds = {link: C for a, b, *_ in layout.links for link in ((a, b), (b, a))}
    policy = {"slices": [{"root": "d0", "reduce": [["d1", "d0"], ["d2", "d0"], ["d3", "d2"]],
                          "broadcast": [["d0", "d1"], ["d1", "d2"], ["d2", "d3"]], "rate": C}]}
    (s,) = optimal.backfill_trees(policy, speeds, order, layout)["slices"]
    # Every link at C, a link the primary tree of that kind crosses counted 4
    # times.  Broadcast: d0 -> d2 (1) and d2 -> d1 (1) instead of d0 -> d1 and
    # d1 -> d2; d3 hangs off d2 only, so d2 -> d3 (4) stays: 6 against the
    # primary's 12.  Reduce: both links into d0 are the primary's, so one
    # stays (4); d2 goes through d1 (1) rather than over its own link into
    # d0, and d3 -> d2 (4) stays: 9, which d2 -> d0 with d1 -> d2 ties.
    assert s["backup_broadcast"] == [["d0", "d2"], ["d2", "d1"], ["d2", "d3"]]
    assert s["backup_reduce"] == [["d1", "d0"], ["d2", "d1"], ["d3", "d2"]]
    backup = optimal.plan_of({**policy, "finish": 1.0}, dataclasses.replace(layout, size=8), backup=True)
    assert backup.pieces[0].root == "d0-s0"
    # With d2 -> d3 unestimated (0), d3 cannot be reached: no slice gets a backup.
    again = {"slices": [{k: v for k, v in s.items() if not k.startswith("backup")} for _ in range(2)]}
    optimal.backfill_trees(again, {**speeds, ("d2", "d3"): 0.0}, order, layout)
    assert not any(k.startswith("backup") for t in again["slices"] for k in t)


def test_a_volatile_plan_on_estimates_runs_backfilled_and_sums_every_contribution_once():
    lay = dataclasses.replace(kite(backfill=1), size=40)
    for seed in range(15):
        policy = Policy(lay)
        policy.volatile = True
        policy.estimates = {link: C for link in policy.links}
        assert_every_worker_exact(lay, 3, seed, Node, policy)
        assert "backup_reduce" in policy.policy["slices"][0]


def test_a_server_drops_from_its_queue_only_what_no_node_needs():
    lay = dataclasses.replace(kite(backfill=1), size=40)
    policy = optimal.compute_policy({link: C for a, b, *_ in lay.links for link in ((a, b), (b, a))}, {},
                                    optimal.overlay_dcs(lay), lay)
    optimal.backfill_trees(policy, {link: C for a, b, *_ in lay.links for link in ((a, b), (b, a))},
                           optimal.overlay_dcs(lay), lay)
    assert Node("d0-s0", kite(), 1000, Recorder().fold, "coord").obsolete is None    # off by default
    node = Node("d0-s0", lay, 1000, Recorder().fold, "coord")
    node.on_message("coord", {"type": "ns_policy", "it": 0, "version": 0, "policy": policy}, None)
    assert isinstance(node.trees[0], BackfillNode)
    agg = {"type": "agg", "it": 0, "piece": 0, "seg": 0, "lane": PRIMARY}
    dist = {"type": "dist", "it": 0, "piece": 0, "seg": 0, "lane": PRIMARY}
    assert not node.obsolete(agg) and not node.obsolete(dist)
    node.finished.add(0)
    # Once this server is done with an iteration, every segment has been folded:
    # partial sums and backup copies are of no use, new values in the primary
    # lane still are (a child may wait for them), and so is what it relays.
    assert node.obsolete(agg) and node.obsolete({**dist, "lane": BACKUP})
    assert not node.obsolete(dist) and not node.obsolete({**agg, "to": "d1-s0"})
    assert node.priority_of({**agg, "it": 1}) == 0           # not released: no lanes yet


def test_over_real_sockets_every_node_gets_the_exact_sum_in_each_iteration():
    # Each node of `two_ways` on its own queued Endpoint over loopback, in its
    # own thread, through the data plane: priorities, the kernel gate and the
    # queue's drops as they run, for three iterations.
    import threading

    from agents.dataplane.driver import DataPlane
    from agents.transport import Endpoint
    from tests.ports import free_port

    plan, backup = two_ways()
    plan = dataclasses.replace(plan, size=40_000,
                               pieces=(dataclasses.replace(plan.pieces[0], stop=40_000),))
    backup = dataclasses.replace(backup, size=40_000,
                                 pieces=(dataclasses.replace(backup.pieces[0], stop=40_000),))
    names = plan.nodes
    ports = {n: free_port() for n in names}
    rule = Recorder()
    rng = np.random.default_rng(5)
    given_ = [{w: rng.integers(-99, 99, 40_000).astype(np.float32) for w in plan.contributors}
              for _ in range(3)]
    got, errors, planes = {}, [], {}
    for n in names:
        ep = Endpoint(n, "127.0.0.1", ports[n], {m: ("127.0.0.1", ports[m]) for m in names if m != n},
                      chunk_bytes=16 * 1024, queued=True)
        node = BackfillNode(n, plan, backup, 1000, rule.fold, after=0.5)
        node.low_gate = 16 * 1024
        planes[n] = DataPlane(ep, node, log=lambda kind, **f: None)

    def play(n):
        try:
            for it in range(3):
                values, _, _, _ = planes[n].iteration(it, given_[it].get(n))
                got[(n, it)] = values
            planes[n].ep.flush(timeout=20)     # what it still owes others, as a role's close does
        except Exception as e:          # noqa: BLE001 - reported below
            errors.append((n, e))

    threads = [threading.Thread(target=play, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for p in planes.values():
        p.close(drain=False)
    assert not errors and not any(t.is_alive() for t in threads), errors
    for it in range(3):
        exact = sum(given_[it].values())
        for w in plan.contributors:
            np.testing.assert_array_equal(got[(w, it)], exact, err_msg=f"{w} iteration {it}")
    assert len(rule.folds) == 3 * 40, "every segment folded once an iteration"
