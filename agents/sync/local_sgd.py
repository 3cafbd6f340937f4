"""Local SGD on a worker, over the model as one flat float32 vector: the
local optimizer of the schemes that compute several steps between two
synchronizations (FedAvg, FedAsync, ESync, NBSync).

The optimizer is the experiment's: learning rate `lr` and heavy-ball
momentum `momentum` (v = m v + g; w -= lr v), the same arithmetic as
SSGD's root, so that one local step of one worker moves the model as far
as one SSGD step would.  The momentum buffer is the worker's and lives
across rounds, as the optimizer state of NBSync's local server does (the
papers do not say; FedAvg's analysis uses plain SGD, which momentum 0
gives).  FedAsync's proximal term adds rho (w - anchor) to the gradient.
"""

import time

import numpy as np


class LocalSGD:
    def __init__(self, ctx, initial):
        self.ctx = ctx
        self.w = np.array(initial, dtype=np.float32)
        self.v = np.zeros_like(self.w)
        self.lr = np.float32(ctx.cfg.workload.lr)
        self.momentum = np.float32(ctx.cfg.workload.momentum)
        ctx.set_model(self.w)

    def step(self, anchor=None, rho=0.0):
        """One local step at the current model.  Returns (loss, seconds
        the step took, its end on the monotonic clock)."""
        t0 = time.monotonic()
        g, loss, _ = self.ctx.gradient()
        if rho:
            g = g + np.float32(rho) * (self.w - anchor)
        self.v *= self.momentum
        self.v += g
        self.w -= self.lr * self.v
        self.ctx.set_model(self.w)
        end = time.monotonic()
        return loss, end - t0, end

    def load(self, values):
        """Take a model from elsewhere (the global one)."""
        self.w[:] = values
        self.ctx.set_model(self.w)
