"""Local SGD with server momentum (Wang, Tantia, Ballas, Rabbat, "SlowMo:
Improving Communication-Efficient Distributed SGD with Slow Momentum",
ICLR 2020, Algorithm 1 with the base optimizer's buffers kept): every
round each worker runs `local_steps` steps of the experiment's optimizer
from the global model x_t and sends its delta; the roots average them,
d_t = mean(x_t,i - x_t), and step a slow momentum:

    u_{t+1} = beta u_t - d_t / lr          (the paper's -1/gamma scaling)
    x_{t+1} = x_t - alpha lr u_{t+1}

so alpha = 1, beta = 0 is plain local SGD (FedAvg with equal weights).
"""

import numpy as np

from agents.plugins import Option
from agents.sync.base import SyncScheme
from agents.sync.local_sgd import LocalSGD


class LocalSGDServerMomentum(SyncScheme):
    NAME = "local-momentum"
    DESCRIPTION = "local SGD with a slow momentum at the roots (SlowMo)"
    OPTIONS = (
        Option("local_steps", 5, "local steps between two synchronizations", low=1, high=100_000),
        Option("alpha", 1.0, "slow learning rate", low=0.0, high=10.0),
        Option("beta", 0.5, "slow momentum", low=0.0, high=0.999),
    )

    def rule(self, model):
        return SlowMomentum(model, self.options["alpha"], self.options["beta"])

    def work(self, ctx):
        tau = self.options["local_steps"]
        ctx.data_plane()
        local = LocalSGD(ctx, ctx.initial)
        ctx.started()
        model = ctx.initial.copy()
        it = 0
        while it < ctx.max_rounds:
            compute, loss = 0.0, None
            for _ in range(tau):
                loss, seconds, _ = local.step()
                compute += seconds
            model, stop = ctx.synchronize(it, local.w - model, compute, loss, local.load,
                                          steps=tau, busy=0.0, overlap=0.0)
            it += 1
            if stop:
                break
        ctx.finish(it, model)


class SlowMomentum:
    """The roots' side: the slow momentum over the averaged deltas; a
    model's buffers (past `trainable`) take the mean delta as they are."""

    def __init__(self, model, alpha, beta):
        self.x = np.array(model.values, dtype=np.float32)
        self.u = np.zeros_like(self.x)
        self.trainable = model.trainable
        self.lr = np.float32(model.workload.lr)
        self.alpha, self.beta = np.float32(alpha), np.float32(beta)

    def fold(self, start, stop, total, count):
        d = total / np.float32(count)
        cut = min(max(self.trainable, start), stop)
        u, x = self.u[start:cut], self.x[start:cut]
        u *= self.beta
        u -= d[:cut - start] / self.lr
        x -= self.alpha * self.lr * u
        self.x[cut:stop] += d[cut - start:]
        return self.x[start:stop].copy()
