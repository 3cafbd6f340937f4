"""The coflow scheduling service of a live search, without sockets: the
coordinator's scheduler feeds it arrivals, senders' progress reports and
finished flows, and sends what it returns.

It holds the active coflows and estimates each flow's bytes left from the
rates it gave (the fluid model: a flow paced at r for dt seconds sent
r dt; a flow that reported its end has none left).  Two things keep the
estimate honest, because a flow believed all but done gets a share sized
for its last byte and may then never finish:

- Senders report what each flow has sent; an estimate more than
  `slack_chunks` chunks off takes the sender's figure (a sender that fell
  behind its rate, or one the CPU did not run, sends less than the model),
  and no estimate drops below that slack before the receiver reports.
- A gated flow (a PS's pull, which forwards chunk k only once chunk k of
  each of its gates, the pushes, is in) is never estimated ahead of its
  gates.  When it has caught up with a gate that the policy gives no
  rate, it is closed: hidden from the policy (which then takes it for
  done), so the capacity it cannot use goes to others, the pushes it waits
  for among them, instead of being held for it.  Otherwise two coflows
  can each hold a port the other's pushes need, for ever.  It reopens when
  the model says its gates are a chunk ahead again; the scheduler wakes
  itself for both moments.

It asks the policy for rates on every arrival and departure, on a report
that moves an estimate, and whenever the policy or a gate asks
to be woken, and says which senders' rates changed.  A policy that does
not pace (fair sharing: TCP decides) still gets asked, so the estimates
follow what the network is believed to do, but its rates go out as None
(unpaced).  A rate under DUST of the largest port is rounding dust,
not a share (the built-in policies give none: agents.coflow.allocation),
and no sender could keep it: from a plug-in policy it is taken as 0.

Flow ids are "<coflow id>:<flow index>".  Rates are in the fabric's
units (bytes/s when the fabric's capacities are).
"""

from agents.coflow.allocation import DUST, EPS

# A sender on pace is at most a chunk ahead of the fluid model (its bucket's
# burst), and its queue to a peer holds two chunks (agents/roles/machine.py):
# two chunks of difference is noise.
SLACK_CHUNKS = 2
ROUNDING = 1e-6           # of a chunk: rounding, not bytes


def flow_id(cid, i):
    return f"{cid}:{i}"


def flow_key(fid):
    """The (coflow id, flow index) a live search's flow id names."""
    cid, i = fid.split(":")
    return int(cid), int(i)


class LiveScheduler:
    def __init__(self, policy, fabric, chunk_bytes=1.0, slack_chunks=SLACK_CHUNKS):
        """chunk_bytes: what a sender hands over at once, the step in which
        a gate opens; slack_chunks: how far (in chunks) a sender may be from
        the model (a sender's report further off replaces the estimate) and
        the least an unreported flow is believed to have left."""
        self.policy = policy
        self.fabric = fabric
        self.chunk = float(chunk_bytes)
        self.level = ROUNDING * self.chunk     # a gap this small is rounding: the gate is ahead
        self.slack_bytes = slack_chunks * self.chunk
        self.resyncs = 0          # estimates a sender's report replaced
        self.active = {}          # coflow id -> Coflow, in arrival order
        self.sizes = {}           # (coflow id, flow index) -> bytes
        self.remaining = {}       # (coflow id, flow index) -> bytes left (estimated)
        self.gates = {}           # gated flow key -> keys of the flows it forwards
        self.closed = set()       # gated flows hidden from the policy
        self.rates = {}           # (coflow id, flow index) -> rate in force
        self.arrived_at = {}      # coflow id -> arrival time
        self.done_flows = set()
        self.last = None
        self.wake_at = None

    def _floor(self, key):
        """The least a flow is believed to have left before its receiver
        reports: what may still wait in its sender's queue.  A flow believed
        all but done would get a share sized for a byte and could then
        take an age over the chunks that are truly left."""
        return min(self.sizes[key], self.slack_bytes)

    def _sent(self, key):
        """Bytes of a flow the model says are out (all of them once it ended)."""
        return self.sizes[key] - self.remaining[key] if key in self.remaining else float("inf")

    def _advance(self, now):
        if self.last is not None:
            dt = max(0.0, now - self.last)
            for key, rate in self.rates.items():
                if key in self.remaining:
                    self.remaining[key] = max(self._floor(key), self.remaining[key] - rate * dt)
            self._hold_behind_gates()
        self.last = now

    def _hold_behind_gates(self):
        for key, gates in self.gates.items():
            ahead = min(self._sent(g) for g in gates)
            if self._sent(key) > ahead:
                self.remaining[key] = max(self._floor(key), self.sizes[key] - ahead)

    def _gap(self, key, g):
        """Bytes gate g must still send before gated flow `key` may send a chunk."""
        return min(self._sent(key) + self.chunk, self.sizes[g]) - self._sent(g)

    def _waiting_on(self, key):
        """The gates of `key` that have not ended, with the bytes each must still send."""
        return [(g, self._gap(key, g)) for g in self.gates[key] if g in self.remaining]

    def _caught_up(self, key, with_gate):
        """Whether gated flow `key` waits for a gate that with_gate(g) picks."""
        return any(gap > self.level and with_gate(g) for g, gap in self._waiting_on(key))

    def _gates_move_in(self):
        """Seconds until the model says a closed flow's gates are all a chunk
        ahead of it, or an open one catches up with a gate that has no
        rate; None if neither is coming."""
        times = []
        for key in self.gates:
            waiting = self._waiting_on(key)
            if key in self.closed:
                waits = [max(0.0, gap) / self.rates[g] if self.rates.get(g, 0.0) > 0
                         else (0.0 if gap <= self.level else None) for g, gap in waiting]
                if waits and None not in waits:
                    times.append(max(waits))
            elif self.rates.get(key, 0.0) > 0:
                times += [max(0.0, self.level - gap) / self.rates[key]
                          for g, gap in waiting if self.rates.get(g, 0.0) <= 0]
        return min(times) if times else None

    def arrive(self, coflow, now, gates=None):
        """A coflow arrived; returns the new rates {flow key: rate}.
        gates: {flow index: indices of the flows whose bytes it forwards}."""
        self._advance(now)
        self.active[coflow.id] = coflow
        self.arrived_at[coflow.id] = now
        for i, f in enumerate(coflow.flows):
            self.remaining[(coflow.id, i)] = self.sizes[(coflow.id, i)] = float(f.size)
        for i, gated_by in (gates or {}).items():
            if gated_by:
                self.gates[(coflow.id, i)] = [(coflow.id, j) for j in gated_by]
        self.policy.on_arrival(coflow, now)
        return self._decide(now)

    def flow_finished(self, cid, i, now):
        """The receiver has every byte of a flow.  Returns (the coflow if
        it is now complete, else None; the new rates)."""
        self._advance(now)
        for table in (self.remaining, self.sizes, self.rates, self.gates):
            table.pop((cid, i), None)
        self.closed.discard((cid, i))
        self.done_flows.add((cid, i))
        coflow = self.active.get(cid)
        complete = coflow is not None and all((cid, j) in self.done_flows
                                              for j in range(len(coflow.flows)))
        if complete:
            del self.active[cid]
            self.policy.on_departure(coflow, now)
        return (coflow if complete else None), self._decide(now)

    def progress(self, sent, now):
        """Senders' reports {flow key: bytes handed to the network so far}.
        Returns the new rates ({} when no estimate moved)."""
        self._advance(now)
        moved = False
        for key, nbytes in sent.items():
            if key not in self.remaining:
                continue        # its end was reported already
            left = max(self._floor(key), self.sizes[key] - nbytes)
            if abs(self.remaining[key] - left) > self.slack_bytes:
                self.remaining[key] = left
                self.resyncs += 1
                moved = True
        self._hold_behind_gates()
        return self._decide(now) if moved else {}

    def tick(self, now):
        """The new rates if the policy or a gate asked to be woken by now, else None."""
        if self.wake_at is None or now < self.wake_at:
            return None
        self._advance(now)
        return self._decide(now)

    def _decide(self, now):
        # A closed flow stays closed until its gates are a chunk ahead; an
        # open one closes if the rates just given leave a gate it has caught
        # up with without any (then the policy is asked again without it).
        closed = {key for key in self.closed if self._caught_up(key, lambda g: True)}
        floor = max(EPS, DUST * float(self.fabric.capacity.max()))
        while True:
            view = {k: v for k, v in self.remaining.items() if k not in closed}
            new = self.policy.rates(now, self.active, view, self.fabric)
            new = {k: r for k, r in new.items() if r > floor and k in view}
            stuck = {key for key in self.gates if key not in closed
                     and self._caught_up(key, lambda g: new.get(g, 0.0) <= 0)}
            if not stuck:
                break
            closed |= stuck
        self.closed = closed
        changed = {k: new.get(k, 0.0) for k in set(self.rates) | set(new)
                   if k in self.remaining and abs(new.get(k, 0.0) - self.rates.get(k, 0.0)) > EPS}
        self.rates = new
        waits = [self.policy.wake_up(now, self.active, view, new), self._gates_move_in()]
        waits = [w for w in waits if w is not None]
        self.wake_at = now + min(waits) if waits else None
        return changed

    def sent_rate(self, key):
        """What a sender is told for a flow: its rate, or None when the
        policy does not pace."""
        return self.rates.get(key, 0.0) if self.policy.PACED else None
