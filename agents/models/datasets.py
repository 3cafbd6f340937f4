"""The built-in datasets: scikit-learn's digits, which ship inside the
package, and MNIST and CIFAR-10 read from a local folder (nothing is
downloaded); and how a training set is shared among the workers."""

import gzip
import importlib.util
import os
import pickle
import struct

import numpy as np

from agents.models.base import Dataset


def digits():
    """scikit-learn's digits (1797 8x8 images, values 0-16) and their labels,
    read from the file scikit-learn ships: importing sklearn.datasets costs
    about 2 s of every run's agent start, for one small table."""
    package = importlib.util.find_spec("sklearn")     # finds it without importing it
    path = os.path.join(os.path.dirname(package.origin), "datasets", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int)


def _folder(name, data_dir):
    if not data_dir or not os.path.isdir(data_dir):
        raise FileNotFoundError(f"dataset {name} is read from a local folder: set data_dir to one")
    return data_dir


class CifarUnpickler(pickle.Unpickler):
    """CIFAR-10's python batches are pickles of a dict of bytes, lists and
    one numpy array.  A pickle may name any callable to run, and agents run
    as root: only the names that rebuild a numpy array are let through."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"),
               ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               # protocol 5 rebuilds an array from its buffer
               ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
               # protocol 2 written by Python 3 spells bytes as a latin-1 string
               ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a CIFAR-10 batch does not hold {module}.{name}; "
                                     "the file is not loaded")


def load_cifar_batch(f):
    """One CIFAR-10 python batch from an open binary file -> its dict."""
    d = CifarUnpickler(f, encoding="bytes").load()
    if not isinstance(d, dict) or b"data" not in d or b"labels" not in d:
        raise pickle.UnpicklingError("not a CIFAR-10 batch: no data and labels")
    return d


def shard(y, workers, rank, partition, seed=0):
    """Indices of worker `rank`'s share: a random iid slice, or (noniid)
    a contiguous slice of the samples sorted by label, so each worker sees
    only a few classes."""
    n = len(y)
    if partition == "iid":
        order = np.random.RandomState(seed).permutation(n)
    elif partition == "noniid":
        order = np.argsort(y, kind="stable")
    else:
        raise ValueError(f"unknown partition {partition!r}")
    return np.sort(order[rank::workers]) if partition == "iid" else \
        order[rank * n // workers:(rank + 1) * n // workers]


class Digits(Dataset):
    NAME = "digits"
    DESCRIPTION = "scikit-learn's 1,797 8x8 handwritten digits, shipped with the package (80/20 split)"

    def load(self, data_dir=""):
        data, target = digits()
        x = (data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
        y = target.astype(np.int64)
        order = np.random.RandomState(1234).permutation(len(y))
        x, y = x[order], y[order]
        cut = int(len(y) * 0.8)
        return x[:cut], y[:cut], x[cut:], y[cut:]


class MNIST(Dataset):
    NAME = "mnist"
    DESCRIPTION = "MNIST's idx files (gzipped or not) from data_dir"
    NEEDS_DIR = True
    FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")

    def check(self, data_dir):
        missing = [stem for stem in self.FILES
                   if not any(os.path.isfile(os.path.join(data_dir, stem + s)) for s in ("", ".gz"))]
        if missing:
            return (f"{data_dir} holds no MNIST {', '.join(missing)} (nor .gz): put MNIST's four "
                    "idx files there (nothing is downloaded)")
        return None

    def load(self, data_dir):
        data_dir = _folder(self.NAME, data_dir)

        def idx(stem):
            for suffix in ("", ".gz"):
                path = os.path.join(data_dir, stem + suffix)
                if os.path.exists(path):
                    with (gzip.open if suffix else open)(path, "rb") as f:
                        raw = f.read()
                    ndim = raw[3]
                    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
                    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)
            raise FileNotFoundError(f"{stem} not found in {data_dir}")
        xtr = idx("train-images-idx3-ubyte").astype(np.float32)[:, None] / 255.0
        xte = idx("t10k-images-idx3-ubyte").astype(np.float32)[:, None] / 255.0
        return (xtr, idx("train-labels-idx1-ubyte").astype(np.int64),
                xte, idx("t10k-labels-idx1-ubyte").astype(np.int64))


class CIFAR10(Dataset):
    NAME = "cifar10"
    DESCRIPTION = "CIFAR-10's python batches from data_dir"
    NEEDS_DIR = True

    def check(self, data_dir):
        has = set(os.listdir(data_dir))
        if "test_batch" not in has or not has & {f"data_batch_{i}" for i in range(1, 6)}:
            return (f"{data_dir} holds no CIFAR-10 test_batch and data_batch_* files: put the python "
                    "batches there (nothing is downloaded)")
        return None

    def load(self, data_dir):
        data_dir = _folder(self.NAME, data_dir)

        def batch(fname):
            with open(os.path.join(data_dir, fname), "rb") as f:
                d = load_cifar_batch(f)
            x = np.asarray(d[b"data"], np.uint8).reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
            return x, np.asarray(d[b"labels"], np.int64)
        parts = [batch(f"data_batch_{i}") for i in range(1, 6)
                 if os.path.exists(os.path.join(data_dir, f"data_batch_{i}"))]
        if not parts:
            raise FileNotFoundError(f"no CIFAR-10 data_batch_* files in {data_dir}")
        xte, yte = batch("test_batch")
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), xte, yte
