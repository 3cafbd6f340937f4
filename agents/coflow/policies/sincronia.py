"""Sincronia (Agarwal et al., SIGCOMM 2018): BSSI ordering of the unfinished
coflows on their remaining demand, then greedy order-preserving,
work-conserving rates.  BSSI and greedy follow the reference code
(sincronia-coflow/simulator: offlinesim/primal_dual.cpp, scheduler.cpp).

Where the text is silent: the reference implementation reorders whenever
a coflow becomes ready (and on epoch timers, with an LP admission step);
here the order is recomputed when coflows arrive (`reorder="arrivals"`,
the default), which on a batch of coflows arriving together is the
reference offline simulator's single BSSI pass, so its results are
reproduced exactly.  `reorder="events"` also recomputes on departures,
from the remaining demand; on a batch it can differ (a coflow that has
sent part of its bytes looks smaller).  Weights are each coflow's `weight` (1 unless
the trace says otherwise)."""

import numpy as np

from agents.coflow.allocation import bssi
from agents.coflow.policies.base import OrderedPolicy, remaining_sizes, reorder_option


class Sincronia(OrderedPolicy):
    NAME = "sincronia"
    DESCRIPTION = "Sincronia: BSSI order, greedy order-preserving rates"
    OPTIONS = (reorder_option("arrivals"),)

    def compute_order(self, now, active, remaining, fabric):
        ids = list(active)
        if not ids:
            return []
        demands = np.array([fabric.demand(active[c].flows, remaining_sizes(active[c], remaining))
                            for c in ids])
        return [ids[i] for i in bssi(demands, [active[c].weight for c in ids])]
