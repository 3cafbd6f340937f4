"""TSEngine's coordinator rules by hand, and its executor aggregating every
contribution exactly once in any delivery order."""


def ts_policy(lay, seed=0):
    """TSEngine's coordinator side, built through the overlay's contract."""
    return tsengine.TSEngine(lay.options).policy(lay, seed)


import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.overlay import tsengine
from agents.overlay.layout import Layout
from tests.dataplane_sim import CoordinatorSim, Recorder, run_iteration


def layout(workers, size=12, **options):
    return Layout(size=size, workers=[[w, "x"] for w in workers], servers=[["ps", "x"]],
                  server_dc="x", dcs=["x", "y"], links=[["x", "y", 1e7, 1e7, 0.01, 0.01]],
                  options=options)


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
    lay = layout(workers, size=size, pieces=pieces)
    rule = Recorder()
    policy = ts_policy(lay, seed=seed)
    coordinator = CoordinatorSim(policy)
    for it in range(iterations):
        nodes = {w: tsengine.TSEngine(lay.options).node(w, lay, segment, rule.fold, "coord") for w in workers}
        nodes["ps"] = tsengine.TSEngine(lay.options).node("ps", lay, segment, rule.fold, "coord")
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
    rounds = len(tsengine.pieces_of(lay, tsengine.TSEngine(lay.options).options["pieces"])) * iterations
    pairs = [d for d in coordinator.decisions if d["decision"] == "pair"]
    assert len(pairs) == n * rounds        # every worker sent exactly once per round
    dist = [d for d in coordinator.decisions if d["decision"] == "distribute"]
    assert len(dist) == n * rounds         # every worker got the model once per round
