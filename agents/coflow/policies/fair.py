"""Per-flow fair sharing: max-min fair rates over all active flows by
progressive filling (the fluid model of long-lived TCP flows sharing
bottlenecks).  No order, no parameters."""

from agents.coflow.allocation import max_min
from agents.coflow.policies.base import Policy


class Fair(Policy):
    NAME = "fair"
    DESCRIPTION = "fair sharing: every flow its max-min share, no order (live: TCP shares)"
    PACED = False        # live: no control, TCP shares

    def rates(self, now, active, remaining, fabric):
        ports = {}
        for cid, c in active.items():
            for i, f in enumerate(c.flows):
                if (cid, i) in remaining:
                    ports[(cid, i)] = fabric.flow_ports(f)
        return max_min(list(ports), ports, fabric.capacity.copy(), fabric.capacity)
