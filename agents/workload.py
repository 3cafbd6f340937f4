"""The contract of a workload: what a worker computes, and the parameters
an experiment trains as every agent sees them.

A workload is a subclass of `Workload` named in topo.yaml as
`experiment.workload`.  `parameters()` gives the model's tensors with the
same initial values on every agent (same seed); `trainer(rank, workers,
speed)` gives one worker's computation, a `Trainer`.  The built-ins:

- `train`: a real torch model (`experiment.model`, agents/models) on its
  shard of a dataset (`experiment.dataset`);
- `synthetic`: a model's exact parameter shapes and an emulated compute
  time per step, with a gradient of the right size whose values are drawn
  once per worker from (experiment seed, rank).
"""

import abc
import time

import numpy as np

from agents.models import dataset_named, model_named
from agents.models.datasets import shard
from agents.plugins import Registry


class Parameters:
    """An ordered {key: shape} with initial values; packing of keys into one
    flat float32 vector and back."""

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


class Trainer(abc.ABC):
    """One worker's computation.  `speed` is its relative compute speed,
    which the runner may change while it runs."""

    speed = 1.0

    @abc.abstractmethod
    def gradients(self):
        """({key: flat float32 gradient}, loss or None, seconds computing)."""

    def set_parameters(self, values):
        """Load {key: flat values} into the model (default: nothing to load)."""

    def evaluate(self):
        """(accuracy, loss) on held-out data, or None where there is none."""
        return None

    def data_share(self):
        """This worker's share of all training samples (FedAvg's weight)."""
        return 1.0


class Workload(abc.ABC):
    NAME = ""
    DESCRIPTION = ""
    OPTIONS = ()

    def __init__(self, settings):
        self.settings = settings      # agents.config.WorkloadSettings

    @abc.abstractmethod
    def parameters(self):
        """The Parameters every agent starts from."""

    @abc.abstractmethod
    def trainer(self, rank, workers, speed, params):
        """Worker `rank` of `workers`' Trainer over `params`."""


class Synthetic(Workload):
    NAME = "synthetic"
    DESCRIPTION = "a model's exact parameter shapes and an emulated compute time per step"

    def parameters(self):
        w = self.settings
        shapes = model_named(w.model, w.model_options).shapes()
        rng = np.random.RandomState(w.seed)
        # Small random values: the bytes on the wire are what matters.
        initial = {k: (rng.standard_normal(int(np.prod(s))) * 0.01).astype(np.float32)
                   for k, s in shapes}
        return Parameters(shapes, initial)

    def trainer(self, rank, workers, speed, params):
        return SyntheticTrainer(self.settings, rank, workers, speed, params)


class SyntheticTrainer(Trainer):
    def __init__(self, settings, rank, workers, speed, params):
        self.w = settings
        self.speed = speed
        self.workers = workers
        # Drawn once and resent every iteration: generating fresh values
        # would add CPU time to the emulated compute time.
        draw = np.random.default_rng((settings.seed, rank))
        self.grads = {k: draw.standard_normal(v.size, dtype=np.float32) * np.float32(1e-4)
                      for k, v in params.initial.items()}

    def gradients(self):
        t0 = time.monotonic()
        time.sleep(self.w.compute_time / self.speed)
        return self.grads, None, time.monotonic() - t0

    def data_share(self):
        return 1.0 / self.workers


class Train(Workload):
    NAME = "train"
    DESCRIPTION = "a real torch model trained on its shard of a dataset"

    def data(self):
        w = self.settings
        return dataset_named(w.dataset, w.dataset_options).load(w.data_dir)

    def module(self, data):
        """The torch module for `data`, its initial weights from the seed."""
        x_train, y_train = data[0], data[1]
        classes = int(max(y_train.max(), data[3].max())) + 1
        w = self.settings
        return model_named(w.model, w.model_options).build(x_train.shape[1:], classes, w.seed)

    def parameters(self):
        model = self.module(self.data())
        shapes = [(k, tuple(p.shape)) for k, p in model.named_parameters()]
        initial = {k: p.detach().numpy().ravel().copy() for k, p in model.named_parameters()}
        return Parameters(shapes, initial)

    def trainer(self, rank, workers, speed, params):
        return TorchTrainer(self, rank, workers, speed)


class TorchTrainer(Trainer):
    def __init__(self, workload, rank, workers, speed):
        import torch
        w = workload.settings
        self.w = w
        self.speed = speed
        self.rng = np.random.RandomState(w.seed * 1000 + rank)
        # Every agent shares two cores with many others: one thread each.
        torch.set_num_threads(1)
        self.torch = torch
        data = workload.data()
        self.model = workload.module(data)
        x_train, y_train, self.x_test, self.y_test = data
        self.y_all = y_train
        self.rank, self.workers = rank, workers
        idx = shard(y_train, workers, rank, w.partition, w.seed)
        self.x = torch.from_numpy(x_train[idx])
        self.y = torch.from_numpy(y_train[idx])
        self.loss_fn = torch.nn.CrossEntropyLoss()

    def gradients(self):
        t0 = time.monotonic()
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
        with self.torch.no_grad():
            for k, p in self.model.named_parameters():
                p.copy_(self.torch.from_numpy(np.asarray(values[k]).reshape(p.shape)))

    def evaluate(self):
        torch = self.torch
        with torch.no_grad():
            x = torch.from_numpy(self.x_test)
            y = torch.from_numpy(self.y_test)
            out = self.model(x)
            return float((out.argmax(1) == y).float().mean()), float(self.loss_fn(out, y))

    def data_share(self):
        sizes = [len(shard(self.y_all, self.workers, r, self.w.partition, self.w.seed))
                 for r in range(self.workers)]
        return sizes[self.rank] / sum(sizes)


WORKLOAD = Registry("workload", Workload, {
    "train": "agents.workload:Train",
    "synthetic": "agents.workload:Synthetic",
})


def workload_of(settings):
    """The experiment's workload, from its settings."""
    cls, _ = WORKLOAD.load(settings.kind)
    return cls(settings)


def parameters_for(settings):
    """The parameters every agent of this experiment starts from."""
    return workload_of(settings).parameters()
