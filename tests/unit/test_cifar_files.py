"""CIFAR-10 batches are pickles, read by agents that run as root: a crafted
file must not run code, a real one must load."""

import os
import pickle

import numpy as np
import pytest

from agents.models import dataset_named


class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_batches(folder, batch):
    folder.mkdir(exist_ok=True)
    for name in ("data_batch_1", "test_batch"):
        with open(folder / name, "wb") as f:
            f.write(batch)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_cifar_batch_of_bytes_lists_and_an_array_loads(tmp_path, protocol):
    data = (np.arange(2 * 3072) % 256).astype(np.uint8).reshape(2, 3072)
    batch = {b"batch_label": b"training batch 1 of 5", b"labels": [4, 5], b"data": data,
             b"filenames": [b"a.png", b"b.png"]}
    write_batches(tmp_path / "cifar", pickle.dumps(batch, protocol=protocol))
    x, y, xt, yt = dataset_named("cifar10").load(str(tmp_path / "cifar"))
    assert x.shape == (2, 3, 32, 32) and y.tolist() == [4, 5] and yt.tolist() == [4, 5]
    # The first pixel of the second image's green plane is byte 3072 + 1024 = 4096 % 256 = 0,
    # the one after it 1.
    assert x[1, 1, 0, 0] == 0.0 and x[1, 1, 0, 1] == pytest.approx(1 / 255)


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_a_crafted_cifar_batch_is_refused_without_running_its_code(tmp_path, protocol):
    marker = tmp_path / "ran"
    crafted = pickle.dumps({b"data": RunsACommand(marker), b"labels": [1]}, protocol=protocol)
    write_batches(tmp_path / "cifar", crafted)
    with pytest.raises(pickle.UnpicklingError, match="does not hold posix.system"):
        dataset_named("cifar10").load(str(tmp_path / "cifar"))
    assert not marker.exists()


def test_a_pickle_that_is_not_a_batch_is_refused(tmp_path):
    write_batches(tmp_path / "cifar", pickle.dumps([1, 2, 3]))
    with pytest.raises(pickle.UnpicklingError, match="not a CIFAR-10 batch"):
        dataset_named("cifar10").load(str(tmp_path / "cifar"))


def test_a_folder_without_cifar_batches_is_told_before_a_run(tmp_path):
    assert dataset_named("cifar10").check(str(tmp_path)).startswith(
        f"{tmp_path} holds no CIFAR-10 test_batch and data_batch_* files")
    (tmp_path / "test_batch").write_bytes(b"")
    (tmp_path / "data_batch_1").write_bytes(b"")
    assert dataset_named("cifar10").check(str(tmp_path)) is None
