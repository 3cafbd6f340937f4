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
from dataclasses import dataclass

import numpy as np

from agents.metrics import METRIC
from agents.models import dataset_named, model_named
from agents.models.datasets import shard
from agents.plugins import Registry

# The losses topo.yaml may name (experiment.loss), as torch.nn modules.
LOSSES = {"cross_entropy": "CrossEntropyLoss", "nll": "NLLLoss", "multi_margin": "MultiMarginLoss"}


class Parameters:
    """An ordered {key: shape} with initial values; packing of keys into one
    flat float32 vector and back.  `buffers` are keys that are not trained
    but travel with the model (BatchNorm's running statistics); they come
    after every trained key, so a flat model's first `trainable` elements
    are the trained ones."""

    def __init__(self, shapes, initial, buffers=()):
        self.shapes = dict(shapes)
        self.initial = initial       # {key: float32 array}, flat
        self.buffers = tuple(buffers)
        keys = list(self.shapes)
        if keys[len(keys) - len(self.buffers):] != list(self.buffers):
            raise ValueError("buffers must come after every trained key")

    @property
    def trainable(self):
        """Elements of the flat model that are trained."""
        return sum(int(np.prod(s)) for k, s in self.shapes.items() if k not in self.buffers)

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


@dataclass
class FlatModel:
    """What a sync scheme's root side starts from: the initial model as one
    flat float32 vector, of which the first `trainable` elements are trained
    and the rest are buffers, the experiment's workload settings, and the
    elements of each tensor in the order the vector holds them (empty:
    unknown)."""
    values: np.ndarray
    trainable: int
    workload: object
    tensors: tuple = ()

    @classmethod
    def of(cls, params, workload):
        keys = list(params.shapes)
        return cls(params.pack(keys, params.initial), params.trainable, workload,
                   tuple(int(np.prod(params.shapes[k])) for k in keys))


class Trainer(abc.ABC):
    """One worker's computation.  `speed` is its relative compute speed,
    which the runner may change while it runs."""

    speed = 1.0
    REAL = False          # a real model: rank 0 keeps its final state in the run folder

    @abc.abstractmethod
    def gradients(self):
        """({key: flat float32 gradient, or a buffer's values after the
        step}, loss or None, seconds computing)."""

    def set_parameters(self, values):
        """Load {key: flat values} into the model (default: nothing to load)."""

    def evaluate(self):
        """{"accuracy", "loss", and every metric's name: value} on held-out
        data, or None where there is none."""
        return None

    def evaluate_values(self, values):
        """evaluate() of a copy holding `values` ({key: flat array})."""
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
        tensors = dict(model.named_parameters())
        buffers = floating_buffers(model)
        initial = {k: t.detach().numpy().ravel().astype(np.float32) for k, t in
                   list(tensors.items()) + list(buffers.items())}
        shapes = [(k, tuple(t.shape)) for k, t in list(tensors.items()) + list(buffers.items())]
        return Parameters(shapes, initial, buffers=list(buffers))

    def trainer(self, rank, workers, speed, params):
        return TorchTrainer(self, rank, workers, speed)


def floating_buffers(module):
    """{name: tensor} of a module's floating-point buffers (BatchNorm's
    running mean and variance; not its integer batch counter)."""
    return {k: b for k, b in module.named_buffers() if b.is_floating_point()}


class TorchTrainer(Trainer):
    REAL = True

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
        self.loss_fn = getattr(torch.nn, LOSSES[w.loss])()
        self.buffers = floating_buffers(self.model)
        self.metrics = [METRIC.load(name)[0]() for name in w.metrics]

    def gradients(self):
        t0 = time.monotonic()
        torch = self.torch
        pick = torch.from_numpy(self.rng.randint(0, len(self.y), self.w.batch_size))
        self.model.zero_grad()
        loss = self.loss_fn(self.model(self.x[pick]), self.y[pick])
        loss.backward()
        grads = {k: p.grad.detach().numpy().ravel().copy() for k, p in self.model.named_parameters()}
        grads.update({k: b.detach().numpy().ravel().astype(np.float32) for k, b in self.buffers.items()})
        spent = time.monotonic() - t0
        # A slower device: the step as long as step_time (if it was
        # shorter), stretched by the speed.
        device = max(spent, self.w.step_time) / self.speed
        if device > spent:
            time.sleep(device - spent)
        return grads, loss.item(), time.monotonic() - t0

    def set_parameters(self, values):
        with self.torch.no_grad():
            for k, p in list(self.model.named_parameters()) + list(self.buffers.items()):
                p.copy_(self.torch.from_numpy(np.asarray(values[k]).reshape(p.shape)))

    def evaluate(self):
        """In eval mode: dropout off, BatchNorm on its running statistics."""
        return evaluate(self.model, self.x_test, self.y_test, self.loss_fn, self.metrics)

    def evaluate_values(self, values):
        """evaluate() of a copy of the model holding `values` ({key: flat
        array}), leaving the training model alone (another thread may
        evaluate while this one trains)."""
        import copy
        if not hasattr(self, "_copy"):
            self._copy = copy.deepcopy(self.model)
            self._copy_buffers = floating_buffers(self._copy)
        with self.torch.no_grad():
            for k, p in list(self._copy.named_parameters()) + list(self._copy_buffers.items()):
                p.copy_(self.torch.from_numpy(np.asarray(values[k]).reshape(p.shape)))
        return evaluate(self._copy, self.x_test, self.y_test, self.loss_fn, self.metrics)

    def data_share(self):
        sizes = [len(shard(self.y_all, self.workers, r, self.w.partition, self.w.seed))
                 for r in range(self.workers)]
        return sizes[self.rank] / sum(sizes)


def evaluate(model, x_test, y_test, loss_fn, metrics=()):
    """{"accuracy", "loss", every metric's name: value} of a torch model on
    a test set, in eval mode (restored to the mode it was in)."""
    import torch
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            x, y = torch.from_numpy(x_test), torch.from_numpy(y_test)
            out = model(x)
            result = {"accuracy": float((out.argmax(1) == y).float().mean()),
                      "loss": float(loss_fn(out, y))}
            result.update({m.NAME: float(m(out, y)) for m in metrics})
    finally:
        model.train(was_training)
    return result


class Command(Workload):
    """Programs of the user's own in the hosts, instead of the testbed's
    agents (testbed/spec/programs.py, testbed/run/programs.py)."""
    NAME = "command"
    DESCRIPTION = "programs of your own (experiment.programs) in the hosts, with ranks and a rendezvous"
    RUNS_PROGRAMS = True

    def parameters(self):
        raise TypeError("a command workload has no parameters of the testbed's")

    def trainer(self, rank, workers, speed, params):
        raise TypeError("a command workload runs programs, not trainers")


WORKLOAD = Registry("workload", Workload, {
    "train": "agents.workload:Train",
    "synthetic": "agents.workload:Synthetic",
    "command": "agents.workload:Command",
})


def workload_of(settings):
    """The experiment's workload, from its settings."""
    cls, _ = WORKLOAD.load(settings.kind)
    return cls(settings)


def parameters_for(settings):
    """The parameters every agent of this experiment starts from."""
    return workload_of(settings).parameters()
