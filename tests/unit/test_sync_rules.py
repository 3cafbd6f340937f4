"""The sync schemes' rules on hand-checked numbers: FedAsync's mixing with
each staleness function, FedAvg's weighting, ESync's ready decisions on a
scripted sequence of reports, and NBSync's delta bookkeeping (every local
step counted exactly once)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from agents.sync import esync, fedasync, nbsync
from agents.sync.fedavg import FedAvg
from agents.workload import FlatModel
from agents.sync.rules import AverageDelta, WeightedSum


def fa(**kw):
    return fedasync.FedAsync(kw).options


# ------------------------------------------------------------ FedAsync

@pytest.mark.parametrize("kind,s,expected", [
    ("constant", 0, 1.0), ("constant", 7, 1.0),
    # (s + 1)^-0.5: s = 3 -> 4^-0.5 = 0.5; s = 0 -> 1
    ("polynomial", 0, 1.0), ("polynomial", 3, 0.5),
    # hinge a = 10, b = 4: s <= 4 -> 1; s = 5 -> 1 / (10 * 1 + 1); s = 6 -> 1 / 21
    ("hinge", 4, 1.0), ("hinge", 5, 1 / 11), ("hinge", 6, 1 / 21),
])
def test_fedasync_staleness_functions(kind, s, expected):
    assert fedasync.staleness_weight(s, fa(staleness=kind)) == pytest.approx(expected)


def test_fedasync_mixes_each_arrival_by_its_staleness():
    m = fedasync.Mixer(np.array([0.0, 10.0], np.float32), fa(staleness="polynomial", alpha=0.6))
    # Fresh (tau = t = 0): alpha_t = 0.6; x = 0.4 x + 0.6 x_new = [0.6, 4 + 6] = [0.6, 10]
    assert m.mix(np.array([1.0, 10.0], np.float32), 0) == (0, pytest.approx(0.6))
    np.testing.assert_allclose(m.x, [0.6, 10.0], rtol=1e-6)
    assert m.version == 1
    m.mix(np.array([0.6, 10.0], np.float32), 1)               # t = 2
    m.mix(np.array([0.6, 10.0], np.float32), 2)               # t = 3
    # Trained from version 0 at t = 3: s = 3, alpha_t = 0.6 * 4^-0.5 = 0.3;
    # x = 0.7 * 0.6 + 0.3 * 2.6 = 0.42 + 0.78 = 1.2
    s, alpha_t = m.mix(np.array([2.6, 10.0], np.float32), 0)
    assert (s, alpha_t) == (3, pytest.approx(0.3))
    np.testing.assert_allclose(m.x, [1.2, 10.0], rtol=1e-6)
    assert m.version == 4


def test_fedasync_hinge_mixing():
    m = fedasync.Mixer(np.zeros(1, np.float32), fa(staleness="hinge", alpha=0.5))
    m.version = 9
    # s = 9 - 3 = 6 > b = 4: alpha_t = 0.5 / (10 * 2 + 1) = 0.5 / 21
    s, alpha_t = m.mix(np.array([21.0], np.float32), 3)
    assert (s, alpha_t) == (6, pytest.approx(0.5 / 21))
    np.testing.assert_allclose(m.x, [0.5], rtol=1e-6)      # 21 * 0.5 / 21


# ------------------------------------------------------------ FedAvg

def test_fedavg_weights_models_by_data_size():
    # Shares 1/4 and 3/4 of the data; models [4, 0] and [8, 4]:
    # 0.25 * [4, 0] + 0.75 * [8, 4] = [1 + 6, 3] = [7, 3]
    rule = FedAvg().rule(FlatModel(np.zeros(2, np.float32), 2, None))
    assert isinstance(rule, WeightedSum)
    total = np.float32(0.25) * np.array([4, 0], np.float32) + np.float32(0.75) * np.array([8, 4], np.float32)
    np.testing.assert_allclose(rule.fold(0, 2, total, 2), [7.0, 3.0])


def test_delta_rules_add_the_mean_delta_to_the_global_model():
    rule = AverageDelta(np.array([1.0, 1.0, 1.0], np.float32), global_lr=1.0)
    # Deltas summing to [3, -3] from 3 workers on elements 1..3: mean [1, -1]
    np.testing.assert_allclose(rule.fold(1, 3, np.array([3.0, -3.0], np.float32), 3), [2.0, 0.0])
    np.testing.assert_allclose(rule.params, [1.0, 2.0, 0.0])
    half = AverageDelta(np.zeros(1, np.float32), global_lr=0.5)
    np.testing.assert_allclose(half.fold(0, 1, np.array([4.0], np.float32), 2), [1.0])


# ------------------------------------------------------------ ESync

def test_esync_ready_decisions_on_a_scripted_round():
    st_ = esync.StateServer(["a", "b", "c"], epsilon=0.5)
    for w in "abc":
        st_.reset(w, 0, te=0.0)
    # k = 0 is never ready.
    assert st_.query("a", 0, None, 0.0, now=0.1) is False
    # a reports a 1 s step; b and c have not reported a step: the slowest is unknown.
    assert st_.query("a", 1, 1.0, 1.0, now=1.0) is False
    assert st_.query("b", 1, 0.2, 0.2, now=1.0) is False
    # c is the slowest (4 s steps), at t = 4; rest = 4 - (4 - 4) = 4.
    # c is s itself: ready.
    assert st_.query("c", 1, 4.0, 4.0, now=4.0) is True
    # s is ready, so anyone asking now is ready.
    assert st_.query("a", 4, 1.0, 4.0, now=4.1) is True


def test_esync_waits_for_the_slowest_to_start_the_round_and_for_its_rest():
    st_ = esync.StateServer(["fast", "slow"], epsilon=0.5)
    for w in ("fast", "slow"):
        st_.reset(w, 0, te=0.0)
    st_.query("slow", 1, 3.0, 3.0, now=3.0)           # slow: 3 s steps (ready: it is s)
    st_.query("fast", 1, 1.0, 1.0, now=3.0)
    # Round 1 begins with fast's reset; slow has not reset yet: not ready.
    st_.reset("fast", 1, te=10.0)
    assert st_.records["slow"].k == 0 and not st_.records["slow"].ready
    assert st_.query("fast", 1, 1.0, 11.0, now=11.0) is False
    # slow starts round 1 at t = 10.5: at t = 11, rest = 3 - (11 - 10.5) = 2.5;
    # fast: 1 + 0.5 = 1.5 < 2.5, another step fits: not ready.
    st_.reset("slow", 1, te=10.5)
    assert st_.query("fast", 2, 1.0, 11.0, now=11.0) is False
    # At t = 12.2: rest = 3 - 1.7 = 1.3 < 1.5: one more step would end after slow's: ready.
    assert st_.query("fast", 3, 1.0, 12.2, now=12.2) is True


def test_esync_state_service_answers_each_query_and_logs_one_decision_per_round():
    clock = iter([1.0, 1.1, 1.2])
    svc = esync.StateService(["a"], esync.ESync().options, clock=lambda: next(clock))
    assert svc.on_message("a", {"type": "esync_reset", "round": 0, "te": 0.5}) == ([], [])
    replies, decisions = svc.on_message("a", {"type": "esync_query", "round": 0, "seq": 1,
                                              "k": 1, "c": 0.5, "te": 1.0})
    assert replies == [("a", {"type": "esync_answer", "round": 0, "seq": 1, "ready": True})]
    assert decisions == [{"decision": "ready", "worker": "a", "round": 0, "k": 1}]
    replies, decisions = svc.on_message("a", {"type": "esync_query", "round": 0, "seq": 2,
                                              "k": 2, "c": 0.5, "te": 1.1})
    assert replies[0][1]["ready"] is True and decisions == []


def test_esync_a_query_from_the_last_round_does_not_touch_the_new_one():
    svc = esync.StateService(["a", "b"], esync.ESync().options, clock=lambda: 5.0)
    for w in "ab":
        svc.on_message(w, {"type": "esync_reset", "round": 0, "te": 0.0})
        svc.on_message(w, {"type": "esync_query", "round": 0, "seq": 1, "k": 1, "c": 1.0, "te": 1.0})
    svc.on_message("a", {"type": "esync_reset", "round": 1, "te": 4.0})
    # b's round-0 query arrives after a started round 1: answered not ready,
    # and b's record for round 1 (k = 0, not ready) is left as the reset made it.
    replies, decisions = svc.on_message("b", {"type": "esync_query", "round": 0, "seq": 2, "k": 2,
                                              "c": 1.0, "te": 4.5})
    assert replies[0][1]["ready"] is False and decisions == []
    assert svc.state.records["b"].k == 0 and not svc.state.records["b"].ready


# ------------------------------------------------------------ NBSync

class CountingModel:
    """A local model whose every step adds `unit` (a deterministic update)."""

    def __init__(self, unit):
        self.w = np.zeros(1, np.float64)
        self.unit = unit
        self.steps = 0

    def step(self):
        self.w += self.unit
        self.steps += 1

    def load(self, values):
        self.w[:] = values


def play(schedule, units):
    """NBSync over a scripted schedule: schedule[r][i] = worker i's local
    steps while round r synchronizes.  Returns (G, steps in sent deltas)."""
    n = len(units)
    workers = [CountingModel(u) for u in units]
    books = [nbsync.Bookkeeping(w) for w in workers]
    root = AverageDelta(np.zeros(1, np.float64))
    # One bootstrap step each, then round 0's delta leaves.
    for w in workers:
        w.step()
    deltas = [b.first() for b in books]
    counted = [1] * n
    model = None
    for r, steps in enumerate(schedule):
        model = root.fold(0, 1, sum(deltas), n).astype(np.float64)
        for i, w in enumerate(workers):
            for _ in range(steps[i]):
                w.step()
        deltas = [b.adopt(model) for b in books]
        if r + 1 < len(schedule):
            counted = [c + s for c, s in zip(counted, steps)]
    return model, counted, workers


def test_nbsync_counts_every_local_step_exactly_once():
    # Two workers, updates +1 and +10 per step.  Bootstrap: deltas 1 and 10
    # (b moves to w = 1 and 10); G1 = (1 + 10) / 2 = 5.5.
    # While round 0 synchronizes worker 0 does 3 steps (w = 4, delta 3) and
    # worker 1 one (w = 20, delta 10); both adopt G1: G2 = 5.5 + 13 / 2 = 12.
    # Round 1: 2 steps each from b = 12: deltas 2 and 20; G3 = 12 + 11 = 23.
    g, counted, workers = play([[3, 1], [2, 2], [0, 0]], [1.0, 10.0])
    assert g[0] == pytest.approx(23.0)
    # 23 = (1 * (1 + 3 + 2) + 10 * (1 + 1 + 2)) / 2: every step once, none twice.
    assert g[0] == pytest.approx((1 * 6 + 10 * 4) / 2)
    assert counted == [6, 4]


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3), min_size=1, max_size=8),
       st.lists(st.integers(1, 9), min_size=3, max_size=3))
def test_nbsync_global_model_holds_each_step_once(schedule, units):
    """After R rounds, G is the average of all steps taken before each
    worker's last adoption (integers, so exact)."""
    g, counted, _ = play(schedule, [float(u) for u in units])
    assert g[0] == pytest.approx(sum(u * c for u, c in zip(units, counted)) / len(units))
