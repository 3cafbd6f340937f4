"""A sync scheme and two overlays written here, against the contracts
alone, named by `module:Class` as a user names a plug-in, assembled by
the agents' own composition root and run in the in-memory data plane.
The validator takes them as it takes the built-ins and refuses the ones
that do not fit, in one sentence."""

import random
import textwrap

import numpy as np
import pytest

from agents.config import AgentConfig, Peer, WorkloadSettings
from agents.coordination import CoordinatorService
from agents.dataplane.node import ExecutorNode
from agents.dataplane.plan import Piece, Plan
from agents.dataplane.tree import TreeNode
from agents.overlay import OVERLAY
from agents.overlay.base import DynamicOverlay, StaticOverlay
from agents.overlay.layout import Layout
from agents.plugins import Option, PluginError, mismatch
from agents.roles.compose import build_node, sync_scheme
from agents.sync import SYNC
from agents.sync.base import SyncScheme
from agents.workload import FlatModel
from testbed import spec as S
from tests.dataplane_sim import CoordinatorSim, deliver

HERE = "tests.unit.test_contracts"
WORKERS = ["a-w0", "b-w0", "b-w1", "c-w0"]


class ScaledMean(SyncScheme):
    """New values: `scale` times the mean of what arrived."""
    NAME = "scaled-mean"
    OPTIONS = (Option("scale", 2.0, "what the mean is multiplied by", low=0.0, high=10.0),)

    def rule(self, model):
        scale = np.float32(self.options["scale"])

        class Rule:
            def fold(self, start, stop, total, count):
                return total / np.float32(count) * scale
        return Rule()

    def work(self, ctx):
        raise AssertionError("not run here: the data plane is driven by the test")


class Chain(StaticOverlay):
    """Every worker sends its sum to the next by name; the last one to
    the root, which sends the new values straight back to every worker."""
    NAME = "chain"

    def plan(self, layout):
        workers = sorted(layout.worker_names)
        root = layout.roots()[0]
        parent = {w: nxt for w, nxt in zip(workers, workers[1:] + [root])}
        return Plan(layout.size, tuple(workers),
                    (Piece(0, layout.size, root, parent, {root: workers}),)).validate()


class RootTurns(DynamicOverlay):
    """A coordinator names each iteration's root, the workers in turn, and
    each node runs a star to that root (the contract of a dynamic overlay:
    a node and a coordinator policy)."""
    NAME = "root-turns"

    def takes_part(self, name, layout):
        return name in layout.worker_names

    def node(self, name, layout, segment, fold, coordinator):
        return TurnNode(name, layout, segment, fold, coordinator)

    def policy(self, layout, seed=0):
        return TurnPolicy(layout)


class TurnPolicy(CoordinatorService):
    def __init__(self, layout):
        self.workers = sorted(layout.worker_names)
        self.asked = {}

    def on_message(self, sender, header):
        asked = self.asked.setdefault(header["it"], set())
        asked.add(sender)
        if len(asked) < len(self.workers):
            return [], []
        root = self.workers[header["it"] % len(self.workers)]
        reply = {"type": "turn", "it": header["it"], "root": root}
        return [(w, reply) for w in self.workers], [{"decision": "root", "root": root}]


class TurnNode(ExecutorNode):
    def __init__(self, name, layout, segment, fold, coordinator):
        self.name, self.layout, self.segment, self.fold = name, layout, segment, fold
        self.coordinator = coordinator
        self.trees, self.waiting, self.held = {}, {}, {}

    def start(self, it, contribution=None, stop=False, started=0.0):
        self.waiting[it] = (contribution, stop, started)
        return [(self.coordinator, {"type": "ask", "it": it}, None)]

    def on_message(self, sender, header, payload):
        it = header["it"]
        if header["type"] == "turn":
            root, workers = header["root"], sorted(self.layout.worker_names)
            plan = Plan(self.layout.size, tuple(workers), (Piece(
                0, self.layout.size, root, {w: root for w in workers if w != root},
                {root: [w for w in workers if w != root]}),))
            tree = self.trees[it] = TreeNode(self.name, plan, self.segment, self.fold)
            out = tree.start(it, *self.waiting.pop(it))
            for m in self.held.pop(it, []):
                out += tree.on_message(*m)
            return out
        if it not in self.trees:
            self.held.setdefault(it, []).append((sender, header, payload))
            return []
        return self.trees[it].on_message(sender, header, payload)

    def done(self, it):
        return it in self.trees and self.trees[it].done(it)

    def result(self, it):
        return self.trees.pop(it).result(it)

    def upstream(self):
        return [self.coordinator]

    def roots(self):
        return []


class Lacking(SyncScheme):
    """A scheme without its worker side."""
    NAME = "lacking"


class NeedsStar(ScaledMean):
    NAME = "needs-star"
    NEEDS = frozenset({"star"})


def layout(options=None):
    return Layout(size=7, workers=[[w, w[0]] for w in WORKERS], servers=[["a-s0", "a"]],
                  server_dc="a", dcs=["a", "b", "c"],
                  links=[["a", "b", 1e7, 1e7, 0.01, 0.01], ["b", "c", 1e7, 1e7, 0.01, 0.01]],
                  options=dict(options or {}))


def config(name, sync, overlay, sync_options=None):
    peers = [Peer(w, "127.0.0.1", 0, w[0]) for w in WORKERS]
    return AgentConfig(name=name, role="worker", dc=name[0], host="127.0.0.1", port=0, events="",
                       sync=sync, sync_options=dict(sync_options or {}), overlay=overlay,
                       workers=peers, servers=[Peer("a-s0", "127.0.0.1", 0, "a")],
                       layout=layout().to_dict(), workload=WorkloadSettings(),
                       coordinator=Peer("coord", "127.0.0.1", 0, "a"))


def run_in_memory(sync, overlay, agents, iterations=3, seed=0, sync_options=None, coordinator=None):
    """Build each agent's node through the composition root and play
    `iterations` iterations with messages in a random order; the workers'
    results per iteration, and the exact sums they came from."""
    rng = random.Random(seed)
    model = FlatModel(np.zeros(7, np.float32), 7, WorkloadSettings())
    nodes = {}
    for name in agents:
        cfg = config(name, sync, overlay, sync_options)
        node = build_node(cfg, sync_scheme(cfg), model, log=lambda *a, **k: None)
        if node is not None:
            nodes[name] = node
    if coordinator is not None:
        nodes["coord"] = CoordinatorSim(coordinator)
    out = []
    for it in range(iterations):
        given = {w: np.array([rng.randint(-9, 9) for _ in range(7)], np.float32) for w in WORKERS}
        pending = []
        for name in sorted(nodes):
            pending += [(name, m) for m in nodes[name].start(it, given.get(name))]
        deliver(nodes, pending, rng)
        results = {w: nodes[w].result(it)[0] for w in WORKERS}
        out.append((results, sum(given.values())))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_a_scheme_and_a_static_overlay_from_a_test_module_run_through_the_composition_root(seed):
    sync, overlay = f"{HERE}:ScaledMean", f"{HERE}:Chain"
    for results, total in run_in_memory(sync, overlay, WORKERS + ["a-s0"], seed=seed,
                                        sync_options={"scale": 3.0}):
        for values in results.values():
            np.testing.assert_allclose(values, total / 4 * 3.0, rtol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_a_dynamic_overlay_runs_its_node_and_coordinator_policy_through_the_contracts(seed):
    sync, overlay = f"{HERE}:ScaledMean", f"{HERE}:RootTurns"
    policy = OVERLAY.load(overlay)[0]().policy(layout())
    for results, total in run_in_memory(sync, overlay, WORKERS, seed=seed, coordinator=policy):
        for values in results.values():
            np.testing.assert_allclose(values, total / 4 * 2.0, rtol=1e-6)
    assert sorted(policy.asked) == [0, 1, 2]


def test_the_validator_takes_plug_ins_by_module_and_class_and_checks_their_options():
    base = textwrap.dedent(f"""\
        datacenters: [{{name: a, workers: 1, servers: 1}}, {{name: b, workers: 1}}]
        wan: [{{between: [a, b], bw: 10mbit, delay: 5ms}}]
        experiment: {{sync: '{HERE}:ScaledMean', overlay: '{HERE}:Chain', OPTIONS}}
        """)
    exp = S.loads(base.replace("OPTIONS", "sync_options: {scale: 0.5}")).experiment
    assert (exp.sync, exp.overlay, exp.sync_options) == (f"{HERE}:ScaledMean", f"{HERE}:Chain",
                                                         {"scale": 0.5})
    with pytest.raises(S.SpecError) as e:
        S.loads(base.replace("OPTIONS", "sync_options: {scale: 11}"))
    assert str(e.value) == "experiment.sync_options.scale: 11 must be a number in 0.0..10.0"
    with pytest.raises(S.SpecError) as e:
        S.loads(base.replace(":ScaledMean", ":NeedsStar").replace("OPTIONS", "seed: 1"))
    assert str(e.value) == ("experiment.overlay: needs-star needs every worker connected straight "
                            "to the roots, which chain does not provide")


def test_a_plug_in_without_a_required_hook_is_refused_in_one_sentence():
    with pytest.raises(PluginError) as e:
        SYNC.load(f"{HERE}:Lacking")
    assert str(e.value) == f"sync '{HERE}:Lacking' lacks the required hook work"
    with pytest.raises(PluginError, match="is not a subclass of agents.sync.base.SyncScheme"):
        SYNC.load(f"{HERE}:Chain")


def test_capabilities_match_what_a_scheme_needs_to_what_an_overlay_provides():
    ps = OVERLAY.load("ps")[0]
    assert mismatch(NeedsStar, ps) is None
    assert mismatch(NeedsStar, Chain) is not None
    assert mismatch(SYNC.load("esync")[0], Chain) is None          # the run provides the coordinator
    assert mismatch(SYNC.load("esync")[0], Chain, provided_by_run=()) == \
        "esync needs a coordinator service, which chain does not provide"
