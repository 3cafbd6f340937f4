"""FIFO-LM, FIFO with limited multiplexing (Baraat: Dogar, Karagiannis,
Ballani, Rowstron, SIGCOMM 2014), run centrally on the big switch.

Coflows are served in arrival order.  The multiplexing level starts at 1
and grows by one for each heavy coflow in the served prefix: walking the
FIFO order, a coflow is admitted while fewer than `level` are admitted,
and an admitted coflow that has sent more than the heavy threshold raises
`level` by one (so when it finishes the level falls back).  Admitted
coflows share per-flow max-min fairly; what they leave goes to the
coflows behind them in FIFO order, each filled max-min fairly on what is
left, so the allocation is work-conserving.

A coflow is heavy once it has sent at least the threshold (Baraat says
"more than"; the two differ only at one instant, and "at least" lets the
simulator wake up exactly when a coflow turns heavy).  The heavy threshold
is `threshold` bytes when given, otherwise the
`percentile` (default 90, as in the two-class approximation of
abdullahfsm/multiclass-scheduler) of the sizes of the coflows seen so far.
Where the text is silent: Baraat decides per switch port; here one
central decision per event, with the FIFO order global (task ids are
global in Baraat, too).  A "task" is one coflow.
"""

import numpy as np

from agents.coflow.allocation import max_min
from agents.plugins import Option
from agents.coflow.policies.base import Policy

# Float dust in bytes sent must not keep a coflow from turning heavy on time.
HEAVY_TOLERANCE = 1e-9


class FifoLM(Policy):
    NAME = "fifo-lm"
    DESCRIPTION = "FIFO with limited multiplexing: arrival order, heavy coflows share"
    OPTIONS = (Option("threshold", None, "bytes from which a coflow is heavy (unset: the "
                      "percentile's)", low=0, type="number"),
               Option("percentile", 90.0, "the percentile of the sizes seen that makes a coflow "
                      "heavy", low=0.0, high=100.0))

    def __init__(self, threshold=None, percentile=90.0):
        if threshold is not None and threshold < 0:
            raise ValueError(f"the heavy threshold must be >= 0, not {threshold}")
        if not 0 <= percentile <= 100:
            raise ValueError(f"the heavy percentile must be within 0..100, not {percentile}")
        self.threshold = threshold
        self.percentile = percentile
        self.sizes_seen = []
        self.seq = {}

    def on_arrival(self, coflow, now):
        self.sizes_seen.append(coflow.size())
        self.seq[coflow.id] = (now, len(self.seq))

    def on_departure(self, coflow, now):
        self.seq.pop(coflow.id, None)

    def heavy_threshold(self):
        if self.threshold is not None:
            return self.threshold
        return float(np.percentile(self.sizes_seen, self.percentile)) if self.sizes_seen else 0.0

    def order(self, now, active, remaining, fabric):
        return sorted(active, key=lambda c: self.seq[c])

    @staticmethod
    def sent(coflow, remaining):
        return coflow.size() - sum(remaining.get((coflow.id, i), 0.0)
                                   for i in range(len(coflow.flows)))

    def is_heavy(self, coflow, remaining):
        theta = self.heavy_threshold()
        return self.sent(coflow, remaining) >= theta - HEAVY_TOLERANCE * max(theta, 1.0)

    def admitted(self, fifo, active, remaining):
        level, chosen = 1, []
        for cid in fifo:
            if len(chosen) >= level:
                break
            chosen.append(cid)
            if self.is_heavy(active[cid], remaining):
                level += 1
        return chosen

    def wake_up(self, now, active, remaining, rates):
        """When the first admitted light coflow turns heavy at its current rate."""
        fifo = self.order(now, active, remaining, None)
        theta = self.heavy_threshold()
        soonest = None
        for cid in self.admitted(fifo, active, remaining):
            c = active[cid]
            if self.is_heavy(c, remaining) or c.size() <= theta:
                continue
            rate = sum(rates.get((cid, i), 0.0) for i in range(len(c.flows)))
            if rate > 0:
                t = (theta - self.sent(c, remaining)) / rate
                soonest = t if soonest is None else min(soonest, t)
        return soonest

    def rates(self, now, active, remaining, fabric):
        fifo = self.order(now, active, remaining, fabric)
        admitted = self.admitted(fifo, active, remaining)
        residual = fabric.capacity.copy()

        def flows_of(cids):
            return {(cid, i): fabric.flow_ports(f) for cid in cids
                    for i, f in enumerate(active[cid].flows) if (cid, i) in remaining}

        ports = flows_of(admitted)
        rates = max_min(list(ports), ports, residual, fabric.capacity)
        m = fabric.machines
        for cid in fifo[len(admitted):]:
            if not (residual[:m].any() and residual[m:].any()):
                break
            # Only flows with room at both ends can take anything.
            ports = {k: pq for k, pq in flows_of([cid]).items()
                     if residual[pq[0]] > 0 and residual[pq[1]] > 0}
            rates.update(max_min(list(ports), ports, residual, fabric.capacity))
        return rates
