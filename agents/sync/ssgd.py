"""Synchronous SGD (BSP): every iteration each worker computes a gradient,
pushes it, the server averages the gradients of all workers, applies one
SGD step with momentum, and every worker pulls the new parameters."""

import numpy as np

NAME = "ssgd"
DESCRIPTION = "bulk-synchronous SGD: compute, push, aggregate, pull every iteration"
OVERLAYS = ("ps",)


class Rule:
    """Server side for the keys one server holds; arrays are float32 vectors."""

    def __init__(self, params, workers, lr, momentum=0.0):
        self.params = {k: np.array(v, dtype=np.float32) for k, v in params.items()}
        self.velocity = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.workers = list(workers)
        self.lr = lr
        self.momentum = momentum
        self.iteration = 0
        self.pending = {}

    def push(self, worker, iteration, grads):
        """Take one worker's gradients; True once every worker's are in."""
        if iteration != self.iteration:
            raise ValueError(f"{worker} pushed iteration {iteration} during {self.iteration}")
        if worker in self.pending:
            raise ValueError(f"{worker} pushed iteration {iteration} twice")
        self.pending[worker] = grads
        return len(self.pending) == len(self.workers)

    def step(self):
        """Average, apply, advance; returns the new parameters."""
        n = len(self.pending)
        for k, p in self.params.items():
            g = sum(self.pending[w][k] for w in self.workers) / n
            v = self.velocity[k]
            v *= self.momentum
            v += g
            p -= self.lr * v
        self.pending = {}
        self.iteration += 1
        return self.params
