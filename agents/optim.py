"""The experiment's optimizer over a flat float32 model: SGD with heavy-ball
momentum, Adam or AdamW, with weight decay and a learning-rate schedule.
Where it runs is the sync scheme's choice: at the roots on averaged
gradients (SSGD) or at each worker between synchronizations (local SGD).

The arithmetic is PyTorch's (torch.optim.SGD with dampening 0 and no
Nesterov, torch.optim.Adam and AdamW), on numpy float32 arrays:

- sgd:   g += wd w;  v = m v + g;  w -= lr_t v
- adam:  g += wd w;  m1 = b1 m1 + (1 - b1) g;  m2 = b2 m2 + (1 - b2) g^2;
         w -= lr_t (m1 / (1 - b1^t)) / (sqrt(m2 / (1 - b2^t)) + eps)
- adamw: w -= lr_t wd w, then adam's step without the decay in g.

The schedule sets lr_t from the number of steps t taken before this one:
`none` (lr), `step` (lr gamma^floor(t / every)) or `cosine`
(lr (1 + cos(pi min(t, total) / total)) / 2, torch's CosineAnnealingLR
with eta_min 0).  An element range is stepped as a whole, so every element
of it has taken the same number of steps; the counter is kept per element
because a root folds whatever ranges its plan gives it.
"""

import math
from dataclasses import dataclass

import numpy as np

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("none", "step", "cosine")


@dataclass(frozen=True)
class OptimizerSettings:
    name: str = "sgd"
    lr: float = 0.1
    momentum: float = 0.9             # sgd
    weight_decay: float = 0.0
    betas: tuple = (0.9, 0.999)       # adam, adamw
    eps: float = 1e-8                 # adam, adamw
    schedule: str = "none"
    step_every: int = 1               # step: steps between two decays
    gamma: float = 0.1                # step: the decay
    total: int = 1                    # cosine: steps to reach 0

    @classmethod
    def of(cls, workload):
        """The settings an experiment's WorkloadSettings carry."""
        return cls(name=workload.optimizer, lr=workload.lr, momentum=workload.momentum,
                   weight_decay=workload.weight_decay, betas=tuple(workload.betas), eps=workload.eps,
                   schedule=workload.lr_schedule, step_every=workload.lr_step_every,
                   gamma=workload.lr_gamma, total=max(1, workload.lr_total))

    def rate(self, t):
        """lr_t after t steps."""
        if self.schedule == "step":
            return self.lr * self.gamma ** (t // self.step_every)
        if self.schedule == "cosine":
            return self.lr * (1 + math.cos(math.pi * min(t, self.total) / self.total)) / 2
        return self.lr


class FlatOptimizer:
    """The optimizer's state over `size` elements; `step` updates a range
    of the parameters in place."""

    def __init__(self, size, settings):
        if settings.name not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {settings.name!r}")
        self.s = settings
        self.t = np.zeros(size, np.int64)
        if settings.name == "sgd":
            self.v = np.zeros(size, np.float32)
        else:
            self.m1 = np.zeros(size, np.float32)
            self.m2 = np.zeros(size, np.float32)

    def step(self, params, grad, start=0):
        """Move `params` (a view of elements start..start+len) along `grad`."""
        stop = start + len(params)
        t = int(self.t[start]) if len(params) else 0
        lr = np.float32(self.s.rate(t))
        wd = np.float32(self.s.weight_decay)
        if self.s.name == "sgd":
            if wd:
                grad = grad + wd * params
            v = self.v[start:stop]
            v *= np.float32(self.s.momentum)
            v += grad
            params -= lr * v
        else:
            if self.s.name == "adamw" and wd:
                params -= lr * wd * params
            elif wd:
                grad = grad + wd * params
            b1, b2 = (np.float32(b) for b in self.s.betas)
            m1, m2 = self.m1[start:stop], self.m2[start:stop]
            m1 *= b1
            m1 += (1 - b1) * grad
            m2 *= b2
            m2 += (1 - b2) * grad * grad
            k = t + 1
            corrected1 = m1 / np.float32(1 - self.s.betas[0] ** k)
            corrected2 = m2 / np.float32(1 - self.s.betas[1] ** k)
            params -= lr * corrected1 / (np.sqrt(corrected2) + np.float32(self.s.eps))
        self.t[start:stop] += 1
        return params
