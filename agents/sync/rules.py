"""Root sides shared by several schemes, over the flat model (a root folds
only its pieces' element ranges; each returns a fresh array, which is sent
while the next one is made)."""

import numpy as np


class AverageDelta:
    """G += global_lr * mean of the N deltas (ESync's and NBSync's server:
    the authors' servers add the plain average, global learning rate 1)."""

    def __init__(self, initial, global_lr=1.0):
        self.params = np.array(initial, dtype=np.float32)
        self.global_lr = np.float32(global_lr)

    def fold(self, start, stop, total, count):
        p = self.params[start:stop]
        p += self.global_lr * (total / np.float32(count))
        return p.copy()


class WeightedSum:
    """The new model is the sum of what arrives: each worker contributes
    its model already multiplied by its weight (FedAvg: its share of the
    data), so the sum is the weighted average and no root needs to know
    the weights."""

    def __init__(self, initial):
        self.params = np.array(initial, dtype=np.float32)

    def fold(self, start, stop, total, count):
        self.params[start:stop] = total
        return self.params[start:stop].copy()
