"""Local SGD on a worker, over the model as one flat float32 vector: the
local optimizer of the schemes that compute several steps between two
synchronizations (FedAvg, FedAsync, ESync, NBSync).

The optimizer is the experiment's (agents.optim: by default SGD with
learning rate `lr` and heavy-ball momentum `momentum`), the same arithmetic
as SSGD's root, so that one local step of one worker moves the model as
far as one SSGD step would.  Its state is the worker's and lives across
rounds, as the optimizer state of NBSync's local server does (the papers
do not say; FedAvg's analysis uses plain SGD, which momentum 0 gives).
FedAsync's proximal term adds rho (w - anchor) to the gradient.  A
model's buffers are not trained: they are what the worker's steps left.
"""

import time

import numpy as np

from agents.optim import FlatOptimizer, OptimizerSettings


class LocalSGD:
    def __init__(self, ctx, initial):
        self.ctx = ctx
        self.w = np.array(initial, dtype=np.float32)
        self.trainable = ctx.model.trainable
        self.optimizer = FlatOptimizer(self.trainable, OptimizerSettings.of(ctx.cfg.workload))
        ctx.set_model(self.w)

    def step(self, anchor=None, rho=0.0):
        """One local step at the current model.  Returns (loss, seconds
        the step took, its end on the monotonic clock)."""
        t0 = time.monotonic()
        g, loss, _ = self.ctx.gradient()
        n = self.trainable
        if rho:
            g = g.copy()
            g[:n] += np.float32(rho) * (self.w[:n] - anchor[:n])
        self.optimizer.step(self.w[:n], g[:n])
        self.w[n:] = g[n:]
        self.ctx.set_model(self.w)
        end = time.monotonic()
        return loss, end - t0, end

    def load(self, values):
        """Take a model from elsewhere (the global one)."""
        self.w[:] = values
        self.ctx.set_model(self.w)
