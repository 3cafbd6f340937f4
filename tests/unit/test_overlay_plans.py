"""The star's and MLNET's plans, and SSGD's arithmetic, checked by hand."""

import numpy as np
import pytest

from agents.config import WorkloadSettings
from agents.overlay import mlnet
from agents.overlay.mlnet import MLNET
from agents.overlay.ps import PS
from agents.overlay.layout import Layout
from agents.sync.ssgd import SSGD
from agents.workload import FlatModel


def test_the_star_cuts_the_model_evenly_across_the_server_dcs_servers():
    lay = Layout(size=10, workers=[["a-w0", "a"], ["b-w0", "b"]],
                 servers=[["a-s0", "a"], ["a-s1", "a"], ["b-s0", "b"]], server_dc="a",
                 dcs=["a", "b"], links=[["a", "b", 1e6, 1e6, 0.01, 0.01]])
    plan = PS().plan(lay)
    assert [(p.start, p.stop, p.root) for p in plan.pieces] == [(0, 5, "a-s0"), (5, 10, "a-s1")]
    for p in plan.pieces:
        assert p.parent == {"a-w0": p.root, "b-w0": p.root}
        assert p.children == {p.root: ["a-w0", "b-w0"]}
    assert "b-s0" not in plan.nodes          # the star leaves other DCs' servers out


# A WAN of six DCs around the root r (one-way delays in ms):
#   r-a 10, r-b 20, r-c 30, a-d 5, b-e 5, a-b 50
# Shortest delays from r: a 10, d 15, b 20, e 25, c 30.
SIX = Layout(size=8,
             workers=[["r-w0", "r"], ["a-w0", "a"], ["a-w1", "a"], ["b-w0", "b"], ["c-w0", "c"],
                      ["d-w0", "d"], ["e-w0", "e"]],
             servers=[["r-s0", "r"], ["b-s0", "b"]], server_dc="r",
             dcs=["r", "a", "b", "c", "d", "e"],
             links=[["r", "a", 1e7, 1e7, 0.010, 0.010], ["r", "b", 1e7, 1e7, 0.020, 0.020],
                    ["r", "c", 1e7, 1e7, 0.030, 0.030], ["a", "d", 1e7, 1e7, 0.005, 0.005],
                    ["b", "e", 1e7, 1e7, 0.005, 0.005], ["a", "b", 1e7, 1e7, 0.050, 0.050]])


def test_mlnet_builds_a_balanced_binary_tree_nearest_first():
    # Order by delay from r: a, d, b, e, c.  Level 1 (k=2): a, d, both under r.
    # Level 2: b picks the nearest of a (30 ms via r) and d (35): a; e: a (35) vs d (40): a;
    # c: a has its two children, so d.
    assert mlnet.dc_tree(SIX, 2) == {"a": "r", "d": "r", "b": "a", "e": "a", "c": "d"}


def test_mlnet_with_k3_is_two_levels():
    # Level 1: a, d, b; level 2: e -> b (5 ms), c -> a (40) vs d (45) vs b (50): a.
    assert mlnet.dc_tree(SIX, 3) == {"a": "r", "d": "r", "b": "r", "e": "b", "c": "a"}


def test_mlnet_aggregates_at_each_dcs_server_or_first_worker():
    plan = MLNET(SIX.options).plan(SIX)
    (piece,) = plan.pieces
    assert piece.root == "r-s0"
    assert piece.parent == {
        "r-w0": "r-s0",                    # the root DC's worker under its server
        "a-w0": "r-s0", "a-w1": "a-w0",    # a has no server: its first worker aggregates
        "d-w0": "r-s0",
        "b-s0": "a-w0", "b-w0": "b-s0",    # b's server aggregates for b
        "e-w0": "a-w0", "c-w0": "d-w0"}
    assert piece.children["r-s0"] == ["a-w0", "d-w0", "r-w0"]
    assert piece.children["a-w0"] == ["a-w1", "b-s0", "e-w0"]


def test_ssgd_averages_then_steps_with_momentum():
    rule = SSGD().rule(FlatModel(np.array([1.0, 2.0, 5.0], np.float32), 3,
                                 WorkloadSettings(lr=0.5, momentum=0.9)))
    # Two gradients summing to [4, 2] on elements 0..2: mean [2, 1]; v = [2, 1];
    # p = [1, 2] - 0.5 * [2, 1] = [0, 1.5]
    np.testing.assert_allclose(rule.fold(0, 2, np.array([4.0, 2.0], np.float32), 2), [0.0, 1.5])
    # v = 0.9 * [2, 1] = [1.8, 0.9]; p = [0, 1.5] - 0.5 * v = [-0.9, 1.05]
    np.testing.assert_allclose(rule.fold(0, 2, np.zeros(2, np.float32), 2), [-0.9, 1.05])
    assert rule.params[2] == 5.0             # elements outside the range are untouched


def test_mlnet_k_below_one_is_refused():
    with pytest.raises(ValueError):
        mlnet.dc_tree(SIX, 0)
