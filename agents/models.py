"""Workloads: real torch models on data that ships with a package, and the
exact parameter shapes of common large models for synthetic runs.

`train` uses scikit-learn's digits (1797 8x8 images, shipped inside the
package: no download) or MNIST / CIFAR-10 read from a local folder the user
names.  `synthetic` models have the per-layer shapes of the published
architectures, so a WAN experiment moves exactly as many bytes as the real
model would, with an emulated compute time per iteration.
"""

import gzip
import importlib.util
import os
import pickle
import struct

import numpy as np

SYNTHETIC = ("resnet18", "resnet50", "vgg16", "bert-base")
TRAINABLE = ("mlp", "cnn")
DATASETS = ("digits", "mnist", "cifar10")


# ------------------------------------------------------------ shapes


def _bn(prefix, c):
    return [(f"{prefix}.weight", (c,)), (f"{prefix}.bias", (c,))]


def resnet_shapes(blocks, bottleneck, classes=1000):
    shapes = [("conv1.weight", (64, 3, 7, 7))] + _bn("bn1", 64)
    cin = 64
    expansion = 4 if bottleneck else 1
    for layer, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512)), start=1):
        for b in range(n):
            p = f"layer{layer}.{b}"
            cout = width * expansion
            if bottleneck:
                shapes += [(f"{p}.conv1.weight", (width, cin, 1, 1))] + _bn(f"{p}.bn1", width)
                shapes += [(f"{p}.conv2.weight", (width, width, 3, 3))] + _bn(f"{p}.bn2", width)
                shapes += [(f"{p}.conv3.weight", (cout, width, 1, 1))] + _bn(f"{p}.bn3", cout)
            else:
                shapes += [(f"{p}.conv1.weight", (width, cin, 3, 3))] + _bn(f"{p}.bn1", width)
                shapes += [(f"{p}.conv2.weight", (width, width, 3, 3))] + _bn(f"{p}.bn2", width)
            if b == 0 and (layer > 1 or cin != cout):
                shapes += [(f"{p}.downsample.0.weight", (cout, cin, 1, 1))] + _bn(f"{p}.downsample.1", cout)
            cin = cout
    return shapes + [("fc.weight", (classes, cin)), ("fc.bias", (classes,))]


def vgg16_shapes(classes=1000):
    shapes, cin, i = [], 3, 0
    for c in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if c == "M":
            i += 1
            continue
        shapes += [(f"features.{i}.weight", (c, cin, 3, 3)), (f"features.{i}.bias", (c,))]
        cin, i = c, i + 2
    for j, (a, b) in zip((0, 3, 6), ((512 * 7 * 7, 4096), (4096, 4096), (4096, classes))):
        shapes += [(f"classifier.{j}.weight", (b, a)), (f"classifier.{j}.bias", (b,))]
    return shapes


def bert_base_shapes(vocab=30522, hidden=768, layers=12, inter=3072, positions=512):
    s = [("embeddings.word", (vocab, hidden)), ("embeddings.position", (positions, hidden)),
         ("embeddings.token_type", (2, hidden)), ("embeddings.ln.weight", (hidden,)),
         ("embeddings.ln.bias", (hidden,))]
    for i in range(layers):
        p = f"encoder.{i}"
        for m in ("query", "key", "value", "attn_out"):
            s += [(f"{p}.{m}.weight", (hidden, hidden)), (f"{p}.{m}.bias", (hidden,))]
        s += [(f"{p}.attn_ln.weight", (hidden,)), (f"{p}.attn_ln.bias", (hidden,)),
              (f"{p}.inter.weight", (inter, hidden)), (f"{p}.inter.bias", (inter,)),
              (f"{p}.out.weight", (hidden, inter)), (f"{p}.out.bias", (hidden,)),
              (f"{p}.out_ln.weight", (hidden,)), (f"{p}.out_ln.bias", (hidden,))]
    return s + [("pooler.weight", (hidden, hidden)), ("pooler.bias", (hidden,))]


def is_flat(model):
    return isinstance(model, str) and model.startswith("flat-") and model[5:].isdigit() \
        and 0 < int(model[5:]) <= 2_000_000_000


def synthetic_shapes(model):
    """Per-layer shapes of a named model; `flat-N` is one tensor of N values
    (a model of an exact size)."""
    if is_flat(model):
        return [("flat", (int(model[5:]),))]
    return {"resnet18": lambda: resnet_shapes((2, 2, 2, 2), False),
            "resnet50": lambda: resnet_shapes((3, 4, 6, 3), True),
            "vgg16": vgg16_shapes,
            "bert-base": bert_base_shapes}[model]()


def count(shapes):
    return sum(int(np.prod(s)) for _, s in shapes)


# ------------------------------------------------------------ data


def digits():
    """scikit-learn's digits (1797 8x8 images, values 0-16) and their labels,
    read from the file scikit-learn ships: importing sklearn.datasets costs
    about 2 s of every run's agent start, for one small table."""
    package = importlib.util.find_spec("sklearn")     # finds it without importing it
    path = os.path.join(os.path.dirname(package.origin), "datasets", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1], table[:, -1].astype(int)


def load_dataset(name, data_dir=""):
    """(x_train, y_train, x_test, y_test) as float32 / int64 numpy arrays."""
    if name == "digits":
        data, target = digits()
        x = (data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
        y = target.astype(np.int64)
        order = np.random.RandomState(1234).permutation(len(y))
        x, y = x[order], y[order]
        cut = int(len(y) * 0.8)
        return x[:cut], y[:cut], x[cut:], y[cut:]
    if not data_dir or not os.path.isdir(data_dir):
        raise FileNotFoundError(f"dataset {name} is read from a local folder: set data_dir to one")
    if name == "mnist":
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
    if name == "cifar10":
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
    raise ValueError(f"unknown dataset {name!r}")


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


# ------------------------------------------------------------ models


def build_model(name, in_shape, classes, seed=0):
    import torch
    from torch import nn
    torch.manual_seed(seed)
    c, h, w = in_shape
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, 128), nn.ReLU(), nn.Linear(128, classes))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(c, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * (h // 4) * (w // 4), 64), nn.ReLU(),
                             nn.Linear(64, classes))
    raise ValueError(f"unknown model {name!r}")
