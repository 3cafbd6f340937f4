"""The example plug-ins (examples/geo-testbed-examples), loaded by file as a
user who has not installed them names them, checked on hand-made cases."""

import os

import numpy as np
import pytest

from agents.config import WorkloadSettings
from agents.dataplane.tree import TreeNode
from agents.models import DATASET, MODEL
from agents.overlay import OVERLAY
from agents.overlay.layout import Layout
from agents.sync import SYNC
from agents.workload import FlatModel, Train, floating_buffers
from tests.dataplane_sim import run_iteration

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "geo-testbed-examples",
                       "geo_testbed_examples")


def load(registry, module, cls, options=None):
    return registry.load(f"{module}.py:{cls}", base_dir=PACKAGE)[0](options)


def test_the_slow_momentum_reduces_to_local_sgd_and_carries_its_momentum_by_hand():
    model = FlatModel(np.array([1.0, 2.0, 7.0], np.float32), 2, WorkloadSettings(lr=0.5))
    plain = load(SYNC, "sync", "LocalSGDServerMomentum", {"beta": 0.0}).rule(model)
    # Four workers' deltas summing to [4, -8, 2]: the mean [1, -2, 0.5] is added as it is.
    np.testing.assert_allclose(plain.fold(0, 3, np.array([4, -8, 2], np.float32), 4), [2, 0, 7.5])
    slow = load(SYNC, "sync", "LocalSGDServerMomentum", {"beta": 0.5, "alpha": 1.0}).rule(model)
    # u1 = -d / lr = [-2, 4]; x = x - lr u1 = [2, 0].  Then d = 0: u2 = 0.5 u1, x = [2.5, -1].
    np.testing.assert_allclose(slow.fold(0, 2, np.array([4, -8], np.float32), 4), [2, 0])
    np.testing.assert_allclose(slow.fold(0, 2, np.zeros(2, np.float32), 4), [2.5, -1])


def test_the_regional_ps_sums_each_region_at_its_server_then_at_the_root_exactly_once():
    lay = Layout(size=5, workers=[["a-w0", "a"], ["b-w0", "b"], ["c-w0", "c"], ["c-w1", "c"]],
                 servers=[["a-s0", "a"], ["b-s0", "b"]], server_dc="a", dcs=["a", "b", "c"],
                 links=[["a", "b", 1e7, 1e7, 0.01, 0.01], ["b", "c", 1e7, 1e7, 0.01, 0.01]])
    overlay = load(OVERLAY, "overlay", "RegionalPS", {"regions": [["b", "c"]]})
    (piece,) = overlay.plan(lay).pieces
    assert piece.parent == {"a-w0": "a-s0", "b-s0": "a-s0", "b-w0": "b-s0", "c-w0": "b-s0",
                            "c-w1": "b-s0"}
    nodes = {n: TreeNode(n, overlay.plan(lay), 2, lambda a, b, total, count: total)
             for n in ["a-s0", "b-s0"] + lay.worker_names}
    given = {w: np.arange(5, dtype=np.float32) * (i + 1) for i, w in enumerate(lay.worker_names)}
    for values in run_iteration(nodes, given, seed=3).values():
        np.testing.assert_array_equal(values, sum(given.values()))
    assert overlay.refuse({"a": 1, "b": 1, "c": 0}, {}) is None
    bad = load(OVERLAY, "overlay", "RegionalPS", {"regions": [["b", "mars"]]})
    assert bad.refuse({"a": 1, "b": 1, "c": 0}, {}) == "regional-ps: unknown data center mars in regions"


def test_the_batchnorm_cnn_brings_its_running_statistics_as_buffers(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x_train=rng.random((40, 8, 8)), y_train=rng.integers(0, 3, 40),
             x_test=rng.random((10, 8, 8)), y_test=rng.integers(0, 3, 10))
    data = load(DATASET, "dataset", "NpzFile", {"file": "d.npz"}).load(str(tmp_path))
    assert data[0].shape == (40, 1, 8, 8) and data[1].dtype == np.int64
    module = load(MODEL, "model", "BatchNormCNN", {"width": 4}).build((1, 8, 8), 3, 0)
    assert {k for k, b in module.named_buffers() if b.is_floating_point()} == {
        "1.running_mean", "1.running_var", "5.running_mean", "5.running_var"}


def test_a_train_workload_packs_buffers_after_every_trained_value():
    settings = WorkloadSettings(model=os.path.join(PACKAGE, "model.py") + ":BatchNormCNN")
    params = Train(settings).parameters()
    keys = list(params.shapes)
    assert params.buffers == tuple(k for k in keys if "running" in k)
    assert keys[-len(params.buffers):] == list(params.buffers)
    assert params.trainable == sum(int(np.prod(s)) for k, s in params.shapes.items()
                                   if "running" not in k)
    with pytest.raises(ValueError, match="after every trained key"):
        type(params)({"b": (1,), "w": (2,)}, {}, buffers=["b"])


def test_a_flat_models_tensors_are_its_parameters_then_its_buffers_where_the_vector_holds_them():
    settings = WorkloadSettings(model=os.path.join(PACKAGE, "model.py") + ":BatchNormCNN")
    workload = Train(settings)
    params = workload.parameters()
    model = FlatModel.of(params, settings)
    module = workload.module(workload.data())
    tensors = list(module.named_parameters()) + list(floating_buffers(module).items())
    assert model.tensors == tuple(t.numel() for _, t in tensors)
    assert [k for k, _ in tensors][-4:] == ["1.running_mean", "1.running_var", "5.running_mean",
                                            "5.running_var"]
    edges = np.cumsum((0,) + model.tensors)
    assert edges[-1] == model.values.size
    for (name, t), a, b in zip(tensors, edges[:-1], edges[1:]):
        np.testing.assert_array_equal(model.values[a:b], t.detach().numpy().ravel(), err_msg=name)
    # The worker's way back: a flat vector of distinct values lands in each
    # tensor exactly between its edges.
    trainer = workload.trainer(0, 1, 1.0, params)
    flat = np.arange(model.values.size, dtype=np.float32)
    trainer.set_parameters(params.unpack(list(params.shapes), flat))
    held = list(trainer.model.named_parameters()) + list(trainer.buffers.items())
    for (name, t), a, b in zip(held, edges[:-1], edges[1:]):
        np.testing.assert_array_equal(t.detach().numpy().ravel(), flat[a:b], err_msg=name)
