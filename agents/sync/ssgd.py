"""Synchronous SGD (BSP): every iteration each worker computes a gradient
and contributes it; the root of each piece of the model averages the N
gradients, applies one SGD step with momentum to its elements, and the new
values go back to every worker before anyone computes again."""

import numpy as np

from agents.sync.base import SyncScheme


class SSGD(SyncScheme):
    NAME = "ssgd"
    DESCRIPTION = "bulk-synchronous SGD: compute, push, aggregate, pull every iteration"

    def rule(self, initial, workload):
        return MomentumStep(initial, workload)

    def work(self, ctx):
        ctx.data_plane()
        ctx.started()
        values = ctx.initial
        it = 0
        while it < ctx.max_rounds:
            grads, loss, compute = ctx.gradient()
            values, stop = ctx.synchronize(it, grads, compute, loss, ctx.set_model, steps=1)
            it += 1
            if stop:
                break
        ctx.finish(it, values)


class MomentumStep:
    """The root side, over the flat model; a root folds only its pieces'
    element ranges."""

    def __init__(self, initial, workload):
        self.params = np.array(initial, dtype=np.float32)
        self.velocity = np.zeros_like(self.params)
        self.lr = np.float32(workload.lr)
        self.momentum = np.float32(workload.momentum)

    def fold(self, start, stop, total, count):
        """The new values of elements start..stop from the sum of `count`
        gradients; a fresh array (it is sent while the next one is made)."""
        v = self.velocity[start:stop]
        v *= self.momentum
        v += total / np.float32(count)
        p = self.params[start:stop]
        p -= self.lr * v
        return p.copy()

