"""The coflow scheduling service of a live search, without sockets: the
coordinator's scheduler feeds it arrivals and finished flows and sends
what it returns.

It holds the active coflows, estimates each flow's bytes left from the
rates it gave (the fluid model: a flow paced at r for dt seconds sent
r dt; a flow that reported its end has none left), asks the policy for
rates on every arrival and departure and whenever the policy asks to be
woken, and says which senders' rates changed.  A policy that does not
pace (fair sharing: TCP decides) still gets asked, so the estimates
follow what the network is believed to do, but its rates go out as None
(unpaced).

Flow ids are "<coflow id>:<flow index>".  Rates are in the fabric's
units (bytes/s when the fabric's capacities are).
"""

from agents.coflow.allocation import EPS


def flow_id(cid, i):
    return f"{cid}:{i}"


class LiveScheduler:
    def __init__(self, policy, fabric):
        self.policy = policy
        self.fabric = fabric
        self.active = {}          # coflow id -> Coflow, in arrival order
        self.remaining = {}       # (coflow id, flow index) -> bytes left (estimated)
        self.rates = {}           # (coflow id, flow index) -> rate in force
        self.arrived_at = {}      # coflow id -> arrival time
        self.done_flows = set()
        self.last = None
        self.wake_at = None

    def _advance(self, now):
        if self.last is not None:
            dt = max(0.0, now - self.last)
            for key, rate in self.rates.items():
                if key in self.remaining:
                    # Not below a byte: only the receiver's report ends a flow.
                    self.remaining[key] = max(1.0, self.remaining[key] - rate * dt)
        self.last = now

    def arrive(self, coflow, now):
        """A coflow arrived; returns the new rates {flow key: rate}."""
        self._advance(now)
        self.active[coflow.id] = coflow
        self.arrived_at[coflow.id] = now
        for i, f in enumerate(coflow.flows):
            self.remaining[(coflow.id, i)] = float(f.size)
        self.policy.on_arrival(coflow, now)
        return self._decide(now)

    def flow_finished(self, cid, i, now):
        """The receiver has every byte of a flow.  Returns (the coflow if
        it is now complete, else None; the new rates)."""
        self._advance(now)
        self.remaining.pop((cid, i), None)
        self.rates.pop((cid, i), None)
        self.done_flows.add((cid, i))
        coflow = self.active.get(cid)
        complete = coflow is not None and all((cid, j) in self.done_flows
                                              for j in range(len(coflow.flows)))
        if complete:
            del self.active[cid]
            self.policy.on_departure(coflow, now)
        return (coflow if complete else None), self._decide(now)

    def tick(self, now):
        """The new rates if the policy asked to be woken by now, else None."""
        if self.wake_at is None or now < self.wake_at:
            return None
        self._advance(now)
        return self._decide(now)

    def _decide(self, now):
        new = self.policy.rates(now, self.active, self.remaining, self.fabric)
        new = {k: r for k, r in new.items() if r > EPS and k in self.remaining}
        changed = {k: new.get(k, 0.0) for k in set(self.rates) | set(new)
                   if k in self.remaining and abs(new.get(k, 0.0) - self.rates.get(k, 0.0)) > EPS}
        self.rates = new
        delay = self.policy.wake_up(now, self.active, self.remaining, new)
        self.wake_at = None if delay is None else now + delay
        return changed

    def sent_rate(self, key):
        """What a sender is told for a flow: its rate, or None when the
        policy does not pace."""
        return self.rates.get(key, 0.0) if self.policy.paced else None
