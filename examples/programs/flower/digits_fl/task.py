"""The model and the data: a one-hidden-layer MLP in NumPy (64 inputs,
`hidden` ReLU units, 10 classes) on scikit-learn's digits, read from the
file scikit-learn ships (no download).  A node trains on its partition of
the training split; the server evaluates on the held-out test split."""

import gzip
import importlib.util
import os

import numpy as np


def digits():
    """(x_train, y_train, x_test, y_test), the same shuffle everywhere."""
    spec = importlib.util.find_spec("sklearn")
    path = os.path.join(os.path.dirname(spec.origin), "datasets", "data", "digits.csv.gz")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    x, y = table[:, :-1] / 16.0, table[:, -1].astype(np.int64)
    order = np.random.default_rng(1234).permutation(len(y))
    x, y = x[order], y[order]
    cut = int(len(y) * 0.8)
    return x[:cut], y[:cut], x[cut:], y[cut:]


def partition(partition_id, num_partitions):
    """This node's share of the training split."""
    x, y, _, _ = digits()
    return x[partition_id::num_partitions], y[partition_id::num_partitions]


def initial_weights(hidden, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, np.sqrt(2 / 64), (64, hidden)), np.zeros(hidden),
            rng.normal(0, np.sqrt(2 / hidden), (hidden, 10)), np.zeros(10)]


def forward(weights, x):
    w1, b1, w2, b2 = weights
    h = np.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return h, p / p.sum(axis=1, keepdims=True)


def evaluate(weights, x, y):
    """(mean cross-entropy, accuracy)."""
    _, p = forward(weights, x)
    loss = -np.log(p[np.arange(len(y)), y] + 1e-12).mean()
    return float(loss), float((p.argmax(axis=1) == y).mean())


def train(weights, x, y, epochs, batch, lr, seed):
    """Mini-batch SGD on (x, y); returns the new weights and the mean loss."""
    w1, b1, w2, b2 = (w.copy() for w in weights)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch):
            pick = order[start:start + batch]
            xb, yb = x[pick], y[pick]
            h, p = forward((w1, b1, w2, b2), xb)
            losses.append(-np.log(p[np.arange(len(yb)), yb] + 1e-12).mean())
            grad = p.copy()
            grad[np.arange(len(yb)), yb] -= 1.0
            grad /= len(yb)
            gw2, gb2 = h.T @ grad, grad.sum(axis=0)
            dh = (grad @ w2.T) * (h > 0)
            gw1, gb1 = xb.T @ dh, dh.sum(axis=0)
            w1 -= lr * gw1
            b1 -= lr * gb1
            w2 -= lr * gw2
            b2 -= lr * gb2
    return [w1, b1, w2, b2], float(np.mean(losses))


def append_metrics(line):
    """One JSON line to the file $TESTBED_METRICS names, where it is set."""
    path = os.environ.get("TESTBED_METRICS")
    if path:
        import json
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")
