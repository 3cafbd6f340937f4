"""Synchronous SGD (BSP): every iteration each worker computes a gradient
and contributes it; the root of each piece of the model averages the N
gradients, applies one step of the experiment's optimizer (agents.optim)
to its elements, and the new values go back to every worker before anyone
computes again.  A model's buffers (BatchNorm's running statistics) are
not trained: each worker contributes its own after its step, and the new
buffers are their mean."""

import numpy as np

from agents.optim import FlatOptimizer, OptimizerSettings
from agents.sync.base import SyncScheme


class SSGD(SyncScheme):
    NAME = "ssgd"
    DESCRIPTION = "bulk-synchronous SGD: compute, push, aggregate, pull every iteration"

    def rule(self, model):
        return OptimizerStep(model)

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


class OptimizerStep:
    """The root side, over the flat model; a root folds only its pieces'
    element ranges."""

    def __init__(self, model):
        self.params = np.array(model.values, dtype=np.float32)
        self.trainable = model.trainable
        self.optimizer = FlatOptimizer(model.trainable, OptimizerSettings.of(model.workload))

    def fold(self, start, stop, total, count):
        """The new values of elements start..stop from the sum of `count`
        gradients (or, past the trained elements, of buffers); a fresh
        array (it is sent while the next one is made)."""
        mean = total / np.float32(count)
        cut = min(max(self.trainable, start), stop)      # trained below, buffers from here
        if cut > start:
            self.optimizer.step(self.params[start:cut], mean[:cut - start], start)
        if stop > cut:
            self.params[cut:stop] = mean[cut - start:]
        return self.params[start:stop].copy()
