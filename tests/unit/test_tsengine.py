"""TSEngine's coordinator rules by hand, and its executor aggregating every
contribution exactly once in any delivery order."""


def ts_policy(lay, seed=0):
    """TSEngine's coordinator side, built through the overlay's contract."""
    return tsengine.TSEngine(lay.options).policy(lay, seed)


import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.config import AgentConfig, Peer, Transport, WorkloadSettings
from agents.overlay import tsengine
from agents.overlay.layout import Layout
from agents.plugins import OptionError
from agents.roles.compose import build_node, overlay_of, sync_scheme
from agents.sync.base import SyncScheme
from agents.workload import FlatModel, Parameters, Synthetic
from testbed import spec as S
from tests.dataplane_sim import CoordinatorSim, Recorder, run_iteration


def layout(workers, size=12, roots=("ps",), tensors=(), **options):
    return Layout(size=size, workers=[[w, "x"] for w in workers], servers=[[r, "x"] for r in roots],
                  server_dc="x", dcs=["x", "y"], links=[["x", "y", 1e7, 1e7, 0.01, 0.01]],
                  options=options, tensors=list(tensors))


def pieces_of(lay):
    return tsengine.pieces_of(lay, tsengine.TSEngine(lay.options).options)


class FixedDraws:
    """random.Random stand-in: random() returns the given draws in turn."""

    def __init__(self, draws):
        self.draws = list(draws)

    def random(self):
        return self.draws.pop(0)

    def choice(self, seq):
        return seq[0]


def test_the_greedy_share_is_known_over_candidates_capped_by_max_greed():
    a = tsengine.Throughputs(5)
    a.record("s", "w1", 100.0, 0)
    a.record("s", "w2", 300.0, 0)
    cands = ["w1", "w2", "w3", "w4"]
    # K = 2, U = 2: p = 0.5.  A draw of 0.49 exploits (the fastest, w2), 0.5 explores.
    assert tsengine.choose_receiver("s", cands, a, 0.9, FixedDraws([0.49])) == ("w2", "greedy")
    assert tsengine.choose_receiver("s", cands, a, 0.9, FixedDraws([0.5])) == ("w3", "explore")
    # All known: p = min(1, 0.9) = 0.9; a draw of 0.95 explores among all candidates.
    assert tsengine.choose_receiver("s", ["w1", "w2"], a, 0.9, FixedDraws([0.95])) == \
        ("w1", "explore")
    assert tsengine.choose_receiver("s", ["w1", "w2"], a, 0.9, FixedDraws([0.89])) == \
        ("w2", "greedy")
    # Nothing known: always explore, whatever the draw.
    assert tsengine.choose_receiver("s", ["w3", "w4"], a, 0.9, FixedDraws([0.0]))[1] == "explore"


def test_the_seeded_choice_sequence_is_fixed_by_the_seed():
    def sequence(seed):
        policy = ts_policy(layout(["w0", "w1", "w2", "w3"]), seed=seed)
        out = []
        for sender in ("ps", "ps", "ps", "ps", "ps"):
            (dst, h), = policy.on_message(sender, {"type": "ts_ask", "it": 0, "piece": 0})[0]
            out.append(h["to"])
        return out
    assert sequence(1) == sequence(1)
    assert sorted(sequence(1)[:4]) == ["w0", "w1", "w2", "w3"] and sequence(1)[4] is None
    assert any(sequence(s) != sequence(1) for s in range(2, 6))


def test_measurements_older_than_forget_rounds_are_dropped():
    a = tsengine.Throughputs(5)
    a.record("s", "w1", 100.0, 3)
    a.forget(8)
    assert a.get("s", "w1") == 100.0
    a.forget(9)
    assert a.get("s", "w1") is None


def test_a_reported_throughput_steers_the_next_round_and_is_forgotten():
    policy = ts_policy(layout(["w0", "w1"], forget_rounds=2, max_greed=1.0), seed=0)
    policy.on_message("ps", {"type": "ts_ask", "it": 0, "piece": 0})
    policy.on_message("ps", {"type": "ts_ask", "it": 0, "piece": 0, "last": "w1", "bps": 5e6})
    assert policy.a.get("ps", "w1") == 5e6
    policy.on_message("ps", {"type": "ts_ask", "it": 3, "piece": 0})
    assert policy.a.get("ps", "w1") is None


def test_a_round_closes_once_every_worker_is_assigned():
    policy = ts_policy(layout(["w0", "w1"]), seed=0)
    got = [policy.on_message("ps", {"type": "ts_ask", "it": 0, "piece": 0})[0][0][1]["to"]
           for _ in range(2)]
    assert sorted(got) == ["w0", "w1"]
    for asker in ("w0", "w1", "ps"):
        (dst, h), = policy.on_message(asker, {"type": "ts_ask", "it": 0, "piece": 0})[0]
        assert (dst, h["to"]) == (asker, None)
    # The next iteration is a new round.
    assert policy.on_message("ps", {"type": "ts_ask", "it": 1, "piece": 0})[0][0][1]["to"]


def test_pairing_follows_arrival_order_the_root_and_the_faster_direction():
    policy = ts_policy(layout(["w0", "w1", "w2", "w3"]), seed=0)
    policy.a.record("w2", "w3", 10.0, 0)
    policy.a.record("w3", "w2", 20.0, 0)

    def ready(node):
        replies, decisions = policy.on_message(node, {"type": "ts_ready", "it": 0, "piece": 0})
        return [(d["sender"], d["receiver"]) for d in decisions]

    # The root is queued first; w1 arrives: w1 sends to the root.
    assert ready("ps") == []
    assert ready("w1") == [("w1", "ps")]
    # w0, then w2: no root; nothing measured between them: the later-queued sends.
    assert ready("w0") == []
    assert ready("w2") == [("w2", "w0")]
    # The root re-enters after receiving; w3 comes: w3 -> root.
    assert ready("ps") == []
    assert ready("w3") == [("w3", "ps")]
    # w0 re-enters after receiving w2's sum; the root too: w0 -> root.
    assert ready("w0") == []
    assert ready("ps") == [("w0", "ps")]


def test_between_two_workers_the_faster_measured_direction_sends():
    policy = ts_policy(layout(["w0", "w1", "w2", "w3"]), seed=0)
    policy.a.record("w2", "w3", 10.0, 0)
    policy.a.record("w3", "w2", 20.0, 0)
    policy.on_message("w2", {"type": "ts_ready", "it": 0, "piece": 0})
    _, decisions = policy.on_message("w3", {"type": "ts_ready", "it": 0, "piece": 0})
    assert (decisions[0]["sender"], decisions[0]["receiver"]) == ("w3", "w2")


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 7), st.integers(1, 30), st.integers(1, 3),
       st.integers(1, 8), st.integers(1, 3))
def test_tsengine_aggregates_every_contribution_exactly_once(seed, n, size, pieces, segment,
                                                             iterations):
    workers = [f"w{i}" for i in range(n)]
    assert_every_contribution_once(layout(workers, size=size, pieces=pieces), seed, segment,
                                   iterations)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 5), st.lists(st.integers(0, 9), min_size=1,
       max_size=5).filter(sum), st.integers(1, 6), st.integers(1, 8), st.integers(1, 3))
def test_tsengine_by_tensor_aggregates_every_contribution_exactly_once(seed, n, tensors, bound,
                                                                       segment, iterations):
    workers = [f"w{i}" for i in range(n)]
    lay = layout(workers, size=sum(tensors), roots=("ps0", "ps1"), tensors=tensors,
                 piece_by="tensor", bigarray_bound=bound)
    assert_every_contribution_once(lay, seed, segment, iterations)


def assert_every_contribution_once(lay, seed, segment, iterations):
    """Runs `iterations` iterations of TSEngine over `lay` in memory: every
    element folded once with every contribution, every worker left with
    the exact sum, and every worker sending and receiving each piece once."""
    workers, size, n = lay.worker_names, lay.size, len(lay.worker_names)
    rule = Recorder()
    policy = ts_policy(lay, seed=seed)
    coordinator = CoordinatorSim(policy)
    for it in range(iterations):
        nodes = {name: tsengine.TSEngine(lay.options).node(name, lay, segment, rule.fold, "coord")
                 for name in workers + lay.roots()}
        nodes["coord"] = coordinator
        rng = np.random.default_rng(seed + it)
        given_ = {w: rng.integers(-1000, 1000, size).astype(np.float32) for w in workers}
        rule.folds.clear()
        results = run_iteration(nodes, given_, it=it, seed=seed + it)
        exact = sum(given_.values())
        folded = np.full(size, np.nan, np.float32)
        for start, stop, count, total in rule.folds:
            assert count == n and np.isnan(folded[start:stop]).all()
            folded[start:stop] = total
        np.testing.assert_array_equal(folded, exact)
        for w, values in results.items():
            np.testing.assert_array_equal(values, exact, err_msg=w)
    rounds = len(pieces_of(lay)) * iterations
    pairs = [d for d in coordinator.decisions if d["decision"] == "pair"]
    assert len(pairs) == n * rounds        # every worker sent exactly once per round
    dist = [d for d in coordinator.decisions if d["decision"] == "distribute"]
    assert len(dist) == n * rounds         # every worker got the model once per round


def test_a_piece_per_tensor_with_big_tensors_cut_evenly_and_the_roots_in_turn():
    lay = layout(["w0"], size=2_500_017, roots=("ps0", "ps1"), tensors=[10, 3, 2_500_000, 4],
                 piece_by="tensor")
    # 2,500,000 > 1,000,000: three even cuts of 833,333, 833,333 and 833,334.
    assert pieces_of(lay) == [(0, 10, "ps0"), (10, 13, "ps1"), (13, 833_346, "ps0"),
                              (833_346, 1_666_679, "ps1"), (1_666_679, 2_500_013, "ps0"),
                              (2_500_013, 2_500_017, "ps1")]
    # A tensor of exactly the bound stays whole; empty tensors give no piece.
    assert pieces_of(layout(["w0"], size=7, tensors=[0, 4, 0, 3], piece_by="tensor",
                            bigarray_bound=4)) == [(0, 4, "ps"), (4, 7, "ps")]
    # Tensors unknown: the model is one tensor.
    assert pieces_of(layout(["w0"], size=7, piece_by="tensor", bigarray_bound=3)) == \
        [(0, 2, "ps"), (2, 4, "ps"), (4, 7, "ps")]
    # The default is unchanged: `pieces` even cuts, whatever the tensors.
    assert pieces_of(layout(["w0"], size=2_500_017, roots=("ps0", "ps1"),
                            tensors=[10, 3, 2_500_000, 4])) == [(0, 2_500_017, "ps0")]
    with pytest.raises(ValueError, match="tensors of 17 elements in a model of 18"):
        pieces_of(layout(["w0"], size=18, tensors=[10, 3, 4], piece_by="tensor"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=12), st.integers(1, 3000))
def test_tensor_cuts_tile_the_model_in_order_within_tensors_and_the_bound(tensors, bound):
    cuts = tsengine.tensor_cuts(tensors, bound)
    ends = [0] + [b for _, b in cuts]
    assert [a for a, _ in cuts] == ends[:-1] and ends[-1] == sum(tensors)   # in order, no gap
    assert all(0 < b - a <= bound for a, b in cuts)
    edges = np.cumsum([0] + tensors)
    for start, stop, n in zip(edges[:-1], edges[1:], tensors):
        inside = [b - a for a, b in cuts if start <= a < stop]
        assert sum(inside) == n                                       # no cut crosses a tensor
        assert len(inside) == -(-n // bound)                          # the fewest cuts
        assert not inside or max(inside) - min(inside) <= 1           # even ones


def test_pieces_cut_evenly_are_refused_with_piece_by_tensor_in_one_sentence():
    with pytest.raises(OptionError) as e:
        tsengine.TSEngine({"piece_by": "tensor", "pieces": 4})
    assert e.value.key == "pieces"
    tsengine.TSEngine({"piece_by": "tensor", "pieces": 1})
    base = textwrap.dedent("""\
        datacenters: [{name: a, workers: 1, servers: 1}, {name: b, workers: 1}]
        wan: [{between: [a, b], bw: 10mbit, delay: 5ms}]
        experiment: {overlay: tsengine, overlay_options: OPTIONS}
        """)
    with pytest.raises(S.SpecError) as e:
        S.loads(base.replace("OPTIONS", "{piece_by: tensor, pieces: 4}"))
    assert str(e.value) == ("experiment.overlay_options.pieces: cuts the model evenly, which "
                            "piece_by: tensor does not: leave pieces out or set piece_by: even")
    assert S.loads(base.replace("OPTIONS", "{piece_by: tensor, bigarray_bound: 5}")) \
        .experiment.overlay_options == {"piece_by": "tensor", "bigarray_bound": 5}


class Sum(SyncScheme):
    """New values: the exact sum of the contributions."""
    NAME = "sum"

    def rule(self, model):
        class Rule:
            def fold(self, start, stop, total, count):
                return total.copy()
        return Rule()

    def work(self, ctx):
        raise AssertionError("not run here: the data plane is driven by the test")


@pytest.mark.parametrize("seed", range(4))
def test_piece_by_tensor_through_the_composition_root_leaves_every_worker_the_exact_sum(seed):
    """Agents build their nodes from a model's tensors as a run does (the
    flat model, its layout, the overlay's options), the coordinator its
    policy; every worker ends with the exact sum."""
    shapes = {"conv.weight": (2, 3, 2), "conv.bias": (2,), "fc.weight": (3, 5), "fc.bias": (1,)}
    params = Parameters(shapes, {k: np.zeros(int(np.prod(s)), np.float32) for k, s in shapes.items()})
    model = FlatModel.of(params, WorkloadSettings())
    workers = ["a-w0", "b-w0", "b-w1", "c-w0"]
    lay = Layout(size=0, workers=[[w, w[0]] for w in workers], servers=[["a-s0", "a"], ["a-s1", "a"]],
                 server_dc="a", dcs=["a", "b", "c"],
                 links=[["a", "b", 1e7, 1e7, 0.01, 0.01], ["b", "c", 1e7, 1e7, 0.01, 0.01]],
                 options={"piece_by": "tensor", "bigarray_bound": 8})

    def config(name):
        return AgentConfig(name=name, role="worker" if "-w" in name else "server", dc=name[0],
                           host="127.0.0.1", port=0, events="", sync=f"{__name__}:Sum",
                           overlay="tsengine", workers=[Peer(w, "127.0.0.1", 0, w[0]) for w in workers],
                           servers=[Peer(s, "127.0.0.1", 0, "a") for s in ("a-s0", "a-s1")],
                           layout=lay.to_dict(), transport=Transport(chunk_bytes=12),
                           coordinator=Peer("coord", "127.0.0.1", 0, "a"))

    nodes = {}
    for name in workers + ["a-s0", "a-s1"]:
        cfg = config(name)
        nodes[name] = build_node(cfg, sync_scheme(cfg), model, log=lambda *a, **k: None)
    # 12, 2, 15 and 1 elements, bound 8: 12 in two cuts, 15 in two.
    assert nodes["a-w0"].pieces == [(0, 6, "a-s0"), (6, 12, "a-s1"), (12, 14, "a-s0"),
                                    (14, 21, "a-s1"), (21, 29, "a-s0"), (29, 30, "a-s1")]
    assert nodes["a-s1"].roots() == [1, 3, 5]
    # The coordinator plans from the layout as the runner wrote it, without the model's sizes.
    policy = overlay_of(config("coord")).policy(Layout.from_dict(config("coord").layout), seed=seed)
    coordinator = nodes["coord"] = CoordinatorSim(policy)
    rng = np.random.default_rng(seed)
    for it in range(3):
        given_ = {w: rng.integers(-1000, 1000, model.values.size).astype(np.float32) for w in workers}
        results = run_iteration(nodes, given_, it=it, seed=seed + it)
        for w in workers:
            np.testing.assert_array_equal(results[w], sum(given_.values()), err_msg=w)
    pairs = [d for d in coordinator.decisions if d["decision"] == "pair"]
    assert sorted({d["piece"] for d in pairs}) == list(range(6))
    assert len(pairs) == len(workers) * 6 * 3     # every worker sent each piece once an iteration


def test_a_synthetic_models_tensors_are_its_shapes_and_flat_n_is_one():
    def tensors(name):
        settings = WorkloadSettings(kind="synthetic", model=name)
        return FlatModel.of(Synthetic(settings).parameters(), settings).tensors
    assert tensors("flat-10") == (10,)
    resnet = tensors("resnet18")
    assert resnet[:3] == (64 * 3 * 7 * 7, 64, 64) and len(resnet) == 62 and resnet[-1] == 1000
