"""Runs executor nodes of one plan in memory, delivering their messages in
an order a seeded random generator picks: any interleaving the network
could produce (per-sender FIFO, as TCP gives, across senders anything)."""

import random

import numpy as np


class Recorder:
    """A sync rule for tests: the new value of an element is the exact sum
    (integer-valued float32 stays exact), and every fold is recorded."""

    def __init__(self):
        self.folds = []

    def fold(self, start, stop, total, count):
        self.folds.append((start, stop, count, total.copy()))
        return total.copy()


def deliver(nodes, messages, rng):
    """Deliver until no message is left; per ordered pair in FIFO order."""
    queues = {}
    for src, (dst, header, payload) in messages:
        queues.setdefault((src, dst), []).append((header, payload))
    while queues:
        src, dst = rng.choice(sorted(queues))
        header, payload = queues[(src, dst)].pop(0)
        if not queues[(src, dst)]:
            del queues[(src, dst)]
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
