"""Runs executor nodes of one plan in memory, delivering their messages in
an order a seeded random generator picks: any interleaving the network
could produce (per-sender FIFO, as TCP gives, across senders anything)."""

import random

import numpy as np

from agents.overlay.netstorm import node as ns_node
from agents.overlay.netstorm.policy import Policy


class Recorder:
    """A sync rule for tests: the new value of an element is the exact sum
    (integer-valued float32 stays exact), and every fold is recorded."""

    def __init__(self):
        self.folds = []

    def fold(self, start, stop, total, count):
        self.folds.append((start, stop, count, total.copy()))
        return total.copy()


def assert_folded_once(rule, plan, exact):
    """Every element of `plan` folded exactly once, with every contribution,
    into `exact`."""
    folded = np.full(plan.size, np.nan, np.float32)
    for start, stop, count, total in rule.folds:
        assert count == len(plan.contributors)
        assert np.isnan(folded[start:stop]).all(), "an element was folded twice"
        folded[start:stop] = total
    np.testing.assert_array_equal(folded, exact)


def assert_every_node_done(nodes, given_, exact, it=0):
    """Every node done with iteration `it`, and every contributor (a key
    of `given_`) left with `exact`."""
    for name, node in nodes.items():
        assert node.done(it), f"{name} did not finish"
        values, _, _ = node.result(it)
        if name in given_:
            np.testing.assert_array_equal(values, exact, err_msg=name)


def take_one(queues, rng):
    """(src, dst, header, payload): the next message of a sender-receiver
    pair drawn at random from `queues` ({(src, dst): [(header, payload)]},
    FIFO per pair, as TCP keeps it), removed."""
    src, dst = rng.choice(sorted(queues))
    header, payload = queues[(src, dst)].pop(0)
    if not queues[(src, dst)]:
        del queues[(src, dst)]
    return src, dst, header, payload


def start_all(nodes, it, contributions, rng, post):
    """Start iteration `it` at every node in a random order, each
    contributor with its vector; `post(src, messages)` takes what they send."""
    order = sorted(nodes)
    rng.shuffle(order)
    for name in order:
        post(name, nodes[name].start(it, contributions.get(name)))


def deliver(nodes, messages, rng):
    """Deliver until no message is left; per ordered pair in FIFO order."""
    queues = {}
    for src, (dst, header, payload) in messages:
        queues.setdefault((src, dst), []).append((header, payload))
    while queues:
        src, dst, header, payload = take_one(queues, rng)
        payload = None if payload is None else np.array(payload, copy=True)
        for out in nodes[dst].on_message(src, header, payload):
            queues.setdefault((dst, out[0]), []).append(out[1:])


def run_iteration(nodes, contributions, it=0, seed=0):
    """Start every node (contributors in a random order), deliver in a
    random order; returns {contributor: new vector}."""
    rng = random.Random(seed)
    order = sorted(nodes)
    rng.shuffle(order)
    pending = []
    for name in order:
        out = nodes[name].start(it, contributions.get(name))
        pending += [(name, m) for m in out]
    deliver(nodes, pending, rng)
    results = {}
    for name, node in nodes.items():
        assert node.done(it), f"{name} did not finish iteration {it}"
        values, _, _ = node.result(it)
        if name in contributions:
            results[name] = values
    return results


class CoordinatorSim:
    """A coordinator policy behind the executor's interface."""

    def __init__(self, policy):
        self.policy = policy
        self.decisions = []

    def start(self, it, contribution=None, stop=False, started=0.0):
        return []

    def on_message(self, sender, header, payload):
        replies, decisions = self.policy.on_message(sender, header)
        self.decisions += decisions
        return [(dst, h, None) for dst, h in replies]

    def done(self, it):
        return True

    def result(self, it):
        return None, False, 0.0


def simulate(lay, iterations, seed, replan_chance, detour_chance, leave=False, node_class=ns_node.Node,
             policy=None):
    """Runs every node and the coordinator in memory as they run for real:
    each node starts iteration t + 1 as soon as it is done with t, so
    iterations overlap across nodes; messages go in a random order (FIFO
    per ordered pair), re-plans come at random moments, and messages
    detour at random.  With `leave`, a node done with its last iteration
    says farewell and leaves once it is not lingering, and what is sent to
    it after that is lost.  Returns ({it: {node: version}}, {it: {worker:
    values}}, [sums], coordinator decisions, messages detoured).  Another
    overlay's `node_class` and coordinator `policy` can stand in for
    NetStorm's (re-plans need NetStorm's speed reports)."""
    rng = random.Random(seed)
    rule = Recorder()
    policy = Policy(lay) if policy is None else policy
    everyone = lay.worker_names + [s for s, _ in lay.servers]
    nodes = {name: node_class(name, lay, 1, rule.fold, "coord") for name in everyone}
    nodes["coord"] = CoordinatorSim(policy)
    contributions = [{w: np.array([rng.randint(-50, 50) for _ in range(lay.size)], np.float32)
                      for w in lay.worker_names} for _ in range(iterations)]
    sums = [sum(c.values()) for c in contributions]
    released, results, clock, detours, queues = {}, {}, 0.0, [0], {}
    at = dict.fromkeys(everyone, 0)
    gone = set()

    def depart(name):
        if leave and at[name] == iterations and not nodes[name].lingering():
            gone.add(name)

    def post(src, messages):
        for dst, header, payload in messages:
            if hasattr(nodes[src], "route") and rng.random() < detour_chance:
                dst, header = nodes[src].route(dst, header, lambda peer: rng.randint(0, 4))
                detours[0] += "route" in header and header.get("from") == src
            queues.setdefault((src, dst), []).append((header, payload))

    def advance(name):
        """Finish every iteration `name` is done with and start the next."""
        while at[name] < iterations and nodes[name].done(at[name]):
            values, _, _ = nodes[name].result(at[name])
            if name in lay.worker_names:
                results.setdefault(at[name], {})[name] = values
            at[name] += 1
            if at[name] < iterations:
                post(name, nodes[name].start(at[name], contributions[at[name]].get(name)))
            elif leave:
                post(name, nodes[name].farewell())
        depart(name)

    order = list(everyone)
    rng.shuffle(order)
    for name in order:
        post(name, nodes[name].start(0, contributions[0].get(name)))
    while queues:
        if rng.random() < replan_chance:
            link = rng.choice(policy.links)
            policy.on_message("x", {"type": "ns_speed", "src": link[0], "dst": link[1],
                                    "rate": rng.choice([1e6, 5e6, 2e7, 8e7])})
            clock += 10.0
            nodes["coord"].decisions += policy.tick(now=clock)
        src, dst = rng.choice(sorted(queues))
        header, payload = queues[(src, dst)].pop(0)
        if not queues[(src, dst)]:
            del queues[(src, dst)]
        if dst in gone:
            continue
        if header["type"] == "ns_policy":
            released.setdefault(header["it"], {})[dst] = header["version"]
        post(dst, nodes[dst].on_message(src, header, None if payload is None else payload.copy()))
        if dst != "coord":
            advance(dst)
    assert all(n == iterations for n in at.values()), f"stuck at {at}"
    return released, results, sums, nodes["coord"].decisions, detours[0]


def assert_every_worker_exact(lay, iterations, seed, node_class, policy):
    """`simulate` with no re-plans or detours; every worker of `lay` gets
    the exact sum in every iteration."""
    _, results, sums, _, _ = simulate(lay, iterations, seed, replan_chance=0.0, detour_chance=0.0,
                                      node_class=node_class, policy=policy)
    for it in range(iterations):
        assert sorted(results[it]) == sorted(lay.worker_names)
        for w, values in results[it].items():
            np.testing.assert_array_equal(values, sums[it], err_msg=f"{w} iteration {it}")
