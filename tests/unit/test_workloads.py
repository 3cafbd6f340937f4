import gzip
import pickle
import struct

import numpy as np
import pytest

from agents.models import dataset_named, model_named
from agents.models.datasets import digits, shard
from agents.models.shapes import count
from agents.config import AgentConfig, Peer, Transport, WorkloadSettings
from agents.workload import Parameters, parameters_for, workload_of


@pytest.mark.parametrize("model,params", [("resnet18", 11_689_512), ("resnet50", 25_557_032),
                                          ("vgg16", 138_357_544), ("bert-base", 109_482_240)])
def test_synthetic_models_have_their_published_parameter_counts(model, params):
    assert count(model_named(model).shapes()) == params


def test_digits_ship_with_the_package_and_split_80_20():
    x, y, xt, yt = dataset_named("digits").load("")
    assert x.shape == (1437, 1, 8, 8) and xt.shape == (360, 1, 8, 8)
    assert set(np.unique(y)) == set(range(10))
    assert 0.0 <= x.min() and x.max() <= 1.0


def test_digits_read_from_the_shipped_file_are_scikit_learns_digits():
    from sklearn.datasets import load_digits
    data, target = digits()
    reference = load_digits()
    assert np.array_equal(data, reference.data) and np.array_equal(target, reference.target)


def test_iid_shards_are_disjoint_and_cover_everything():
    y = np.arange(100) % 10
    parts = [shard(y, 3, r, "iid") for r in range(3)]
    assert sorted(np.concatenate(parts).tolist()) == list(range(100))


def test_noniid_shards_see_few_labels():
    y = np.repeat(np.arange(10), 10)
    parts = [shard(y, 5, r, "noniid") for r in range(5)]
    assert [sorted(set(y[p])) for p in parts] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_mnist_and_cifar_are_read_from_a_local_folder(tmp_path):
    def idx(path, arr):
        with gzip.open(path, "wb") as f:
            f.write(struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape))
            f.write(arr.astype(np.uint8).tobytes())
    imgs = np.arange(3 * 28 * 28).reshape(3, 28, 28) % 256
    for prefix in ("train", "t10k"):
        idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", imgs)
        idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.array([1, 2, 3]))
    x, y, xt, yt = dataset_named("mnist").load(str(tmp_path))
    assert x.shape == (3, 1, 28, 28) and y.tolist() == [1, 2, 3]
    assert x[0, 0, 0, 1] == pytest.approx(1 / 255)

    c = tmp_path / "cifar"
    c.mkdir()
    for name in ("data_batch_1", "test_batch"):
        with open(c / name, "wb") as f:
            pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [4, 5]}, f)
    x, y, xt, yt = dataset_named("cifar10").load(str(c))
    assert x.shape == (2, 3, 32, 32) and yt.tolist() == [4, 5]


def test_a_missing_data_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="local folder"):
        dataset_named("mnist").load(str(tmp_path / "none"))


def test_parameters_pack_and_unpack_a_servers_keys():
    p = Parameters([("a", (2, 2)), ("b", (3,))], {})
    vec = Parameters.pack(["b", "a"], {"a": np.arange(4, dtype=np.float32),
                                       "b": np.array([7, 8, 9], np.float32)})
    assert vec.tolist() == [7, 8, 9, 0, 1, 2, 3]
    back = p.unpack(["b", "a"], vec)
    assert back["a"].tolist() == [0, 1, 2, 3] and back["b"].tolist() == [7, 8, 9]
    with pytest.raises(ValueError):
        p.unpack(["a"], vec)


def test_every_agent_starts_from_the_same_parameters():
    w = WorkloadSettings(kind="train", model="mlp", seed=3)
    a, b = parameters_for(w), parameters_for(w)
    assert all(np.array_equal(a.initial[k], b.initial[k]) for k in a.initial)


def test_a_real_gradient_step_lowers_the_training_loss():
    w = WorkloadSettings(kind="train", model="mlp", batch_size=64, lr=0.5)
    params = parameters_for(w)
    t = workload_of(w).trainer(0, 1, 1.0, params)
    values = dict(params.initial)
    losses = []
    for _ in range(30):
        grads, loss, _ = t.gradients()
        losses.append(loss)
        values = {k: values[k] - 0.5 * grads[k] for k in values}
        t.set_parameters(values)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_a_slower_worker_computes_longer():
    w = WorkloadSettings(kind="synthetic", model="resnet18", compute_time=0.05)
    params = parameters_for(w)
    fast = workload_of(w).trainer(0, 2, 1.0, params).gradients()[2]
    slow = workload_of(w).trainer(1, 2, 0.5, params).gradients()[2]
    assert fast >= 0.05 and slow >= 0.1


def test_agent_config_round_trips_through_json():
    cfg = AgentConfig(name="dc-w0", role="worker", dc="dc", host="10.1.0.11", port=7000,
                      events="/x.jsonl", servers=[Peer("dc-s0", "10.1.0.10", 7000, "dc")],
                      workers=[Peer("dc-w0", "10.1.0.11", 7000, "dc")], speed=0.5,
                      workload=WorkloadSettings(kind="synthetic", model="vgg16"),
                      transport=Transport(chunk_bytes=4096))
    assert AgentConfig.from_json(cfg.to_json()) == cfg


def test_an_agent_config_with_unknown_keys_is_refused():
    with pytest.raises(ValueError, match="unknown config keys: bogus"):
        AgentConfig.from_dict({"name": "x", "role": "worker", "dc": "d", "host": "h", "port": 1,
                               "events": "e", "bogus": 1})


def test_an_event_tail_returns_each_complete_line_once(tmp_path):
    from agents.events import EventLog, EventTail
    path = tmp_path / "a.jsonl"
    log = EventLog(str(path), "a")
    tail = EventTail(str(path))
    log("one", x=1)
    assert [e["ev"] for e in tail.read()] == ["one"]
    with open(path, "a") as f:
        f.write('{"ev": "half')          # a line still being written
    log.f.flush()
    assert tail.read() == []
    with open(path, "a") as f:
        f.write('"}\n')
    assert [e["ev"] for e in tail.read()] == ["half"]
    log.close()
