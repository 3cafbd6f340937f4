"""The parameters an experiment trains, as both servers and workers see them.

`Parameters` is an ordered {key: shape} with the same initial values on
every agent (same seed), plus packing of keys into one flat
float32 vector and back.  `Trainer` computes a worker's gradients: a real
torch forward/backward on its shard, or, for synthetic models, an emulated
compute time and a gradient of the right size whose values are drawn
once per worker from (experiment seed, rank): another seed, another sample.
"""

import time

import numpy as np

from agents import models


class Parameters:
    def __init__(self, shapes, initial):
        self.shapes = dict(shapes)
        self.initial = initial       # {key: float32 array}, flat

    def sizes(self):
        return {k: int(np.prod(s)) * 4 for k, s in self.shapes.items()}

    @staticmethod
    def pack(keys, arrays):
        return np.concatenate([arrays[k].ravel() for k in keys]).astype(np.float32, copy=False)

    def unpack(self, keys, vector):
        out, off = {}, 0
        for k in keys:
            n = int(np.prod(self.shapes[k]))
            out[k] = vector[off:off + n]
            off += n
        if off != vector.size:
            raise ValueError(f"vector of {vector.size} values for keys of {off}")
        return out


def parameters_for(workload):
    if workload.kind == "synthetic":
        shapes = models.synthetic_shapes(workload.model)
        rng = np.random.RandomState(workload.seed)
        # Small random values: the bytes on the wire are what matters.
        initial = {k: (rng.standard_normal(int(np.prod(s))) * 0.01).astype(np.float32)
                   for k, s in shapes}
        return Parameters(shapes, initial)
    model, _ = _torch_model(workload)
    shapes = [(k, tuple(p.shape)) for k, p in model.named_parameters()]
    initial = {k: p.detach().numpy().ravel().copy() for k, p in model.named_parameters()}
    return Parameters(shapes, initial)


def _torch_model(workload, data=None):
    data = data or models.load_dataset(workload.dataset, workload.data_dir)
    x_train, y_train = data[0], data[1]
    classes = int(max(y_train.max(), data[3].max())) + 1
    return models.build_model(workload.model, x_train.shape[1:], classes, workload.seed), data


class Trainer:
    """One worker's computation."""

    def __init__(self, workload, rank, workers, speed, params):
        self.w = workload
        self.speed = speed
        self.params = params
        self.rng = np.random.RandomState(workload.seed * 1000 + rank)
        if workload.kind == "synthetic":
            # Drawn once and resent every iteration: generating fresh values
            # would add CPU time to the emulated compute time.
            draw = np.random.default_rng((workload.seed, rank))
            self.grads = {k: draw.standard_normal(v.size, dtype=np.float32) * np.float32(1e-4)
                          for k, v in params.initial.items()}
            return
        import torch
        # Every agent shares two cores with many others: one thread each.
        torch.set_num_threads(1)
        self.torch = torch
        self.model, data = _torch_model(workload)
        x_train, y_train, self.x_test, self.y_test = data
        self.y_all = y_train
        idx = models.shard(y_train, workers, rank, workload.partition, workload.seed)
        self.x = torch.from_numpy(x_train[idx])
        self.y = torch.from_numpy(y_train[idx])
        self.loss_fn = torch.nn.CrossEntropyLoss()

    def gradients(self):
        """({key: flat float32 gradient}, loss or None, seconds computing)."""
        t0 = time.monotonic()
        if self.w.kind == "synthetic":
            time.sleep(self.w.compute_time / self.speed)
            return self.grads, None, time.monotonic() - t0
        torch = self.torch
        pick = torch.from_numpy(self.rng.randint(0, len(self.y), self.w.batch_size))
        self.model.zero_grad()
        loss = self.loss_fn(self.model(self.x[pick]), self.y[pick])
        loss.backward()
        grads = {k: p.grad.detach().numpy().ravel().copy() for k, p in self.model.named_parameters()}
        spent = time.monotonic() - t0
        # A slower device: the step as long as step_time (if it was
        # shorter), stretched by the speed.
        device = max(spent, self.w.step_time) / self.speed
        if device > spent:
            time.sleep(device - spent)
        return grads, loss.item(), time.monotonic() - t0

    def set_parameters(self, values):
        if self.w.kind == "synthetic":
            return
        with self.torch.no_grad():
            for k, p in self.model.named_parameters():
                p.copy_(self.torch.from_numpy(np.asarray(values[k]).reshape(p.shape)))

    def evaluate(self):
        """(accuracy, loss) on the held-out test set; None for synthetic."""
        if self.w.kind == "synthetic":
            return None
        torch = self.torch
        with torch.no_grad():
            x = torch.from_numpy(self.x_test)
            y = torch.from_numpy(self.y_test)
            out = self.model(x)
            return float((out.argmax(1) == y).float().mean()), float(self.loss_fn(out, y))
