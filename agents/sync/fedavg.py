"""FedAvg (McMahan et al., AISTATS 2017), cross-silo: every round each
worker starts from the global model w_t, runs `local_steps` (tau) local
SGD steps on its shard, and sends its model; the root waits for all and
sets w_{t+1} to their average weighted by data size (n_i / n).

Each worker multiplies its model by its own n_i / n before sending, so the
roots only sum (rules.WeightedSum) and the bytes on the wire are one whole
model up and one down per worker and round.  Computing and synchronizing
alternate strictly: nothing is computed while a round's models travel.
"""

import numpy as np

from agents.plugins import Option
from agents.sync.base import SyncScheme
from agents.sync.local_sgd import LocalSGD
from agents.sync.rules import WeightedSum


class FedAvg(SyncScheme):
    NAME = "fedavg"
    DESCRIPTION = "federated averaging: tau local steps, then a weighted average of the models"
    OPTIONS = (Option("local_steps", 10, "local SGD steps (tau) between two averagings",
                      low=1, high=100_000),)

    def rule(self, model):
        return WeightedSum(model.values)

    def work(self, ctx):
        tau = self.options["local_steps"]
        ctx.data_plane()
        local = LocalSGD(ctx, ctx.initial)
        weight = np.float32(ctx.data_share())
        ctx.started()
        model = ctx.initial
        it = 0
        while it < ctx.max_rounds:
            compute, loss = 0.0, None
            for _ in range(tau):
                loss, seconds, _ = local.step()
                compute += seconds
            model, stop = ctx.synchronize(it, local.w * weight, compute, loss, local.load,
                                          steps=tau, busy=0.0, overlap=0.0)
            it += 1
            if stop:
                break
        ctx.finish(it, model)
