"""Varys (Chowdhury, Zhong, Stoica, SIGCOMM 2014): coflows in Smallest
Effective Bottleneck First order; MADD gives every flow of a coflow
size_left / Gamma, Gamma being the coflow's bottleneck time on the
capacity left by coflows ahead of it, so its flows finish together.
As in Sincronia's reference (offlinesim/scheduler.cpp, MADD) and Varys'
work conservation, capacity MADD leaves unused is then handed out greedily
in the same order.  The order is recomputed on arrivals and departures
(`reorder="arrivals"`: on arrivals only)."""

import numpy as np

from agents.coflow.allocation import greedy, settle
from agents.coflow.policies.base import OrderedPolicy, remaining_sizes


class Varys(OrderedPolicy):
    NAME = "varys"
    DESCRIPTION = "Varys: smallest effective bottleneck first, MADD rates"

    def compute_order(self, now, active, remaining, fabric):
        def bottleneck(cid):
            return fabric.isolation_time(active[cid].flows, remaining_sizes(active[cid], remaining))
        return sorted(active, key=bottleneck)

    def rates(self, now, active, remaining, fabric):
        order = self.order(now, active, remaining, fabric)
        residual = fabric.capacity.copy()
        rates = {}
        for cid in order:
            c = active[cid]
            sizes = remaining_sizes(c, remaining)
            d = fabric.demand(c.flows, sizes)
            need = d > 0
            if not need.any() or (residual[need] <= 0).any():
                continue
            gamma = float(np.max(d[need] / residual[need]))
            for i, f in enumerate(c.flows):
                if sizes[i] > 0:
                    r = sizes[i] / gamma
                    rates[(cid, i)] = r
                    a, b = fabric.flow_ports(f)
                    residual[a] -= r
                    residual[b] -= r
            # Ports its rates filled are full, not left with rounding dust
            # that would give the coflows behind it a share of nothing.
            settle(residual, fabric.capacity)
        extra, _ = greedy(order, active, remaining, fabric, residual)
        for k, r in extra.items():
            rates[k] = rates.get(k, 0.0) + r
        return rates
