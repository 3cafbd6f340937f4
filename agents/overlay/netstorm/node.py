"""NetStorm's executor side: one node's part of every iteration under the
policy version the coordinator released for it, passive link
measurement, and multipath relaying (see `netstorm` for the algorithm).

- **Versions.** A worker asks the coordinator to release iteration t when
  it starts it; the answer (to every node) names the policy version for t
  and carries the policy when it is new.  Each version has its own tree
  executor (`TreeNode` over the version's plan, one segment per piece: the
  original sends one message per piece and tree edge); messages of an
  iteration whose version is not known yet wait here.
- **Sums at the roots, steps at the workers.** A root returns the sum of
  the N contributions; each worker applies the sync rule to it, so every
  worker takes the same step from the same sum and no root holds state.
- **Awareness.** A server asks the transport to stamp each message of at
  least `sample_bytes` it sends to another DC's server when it leaves the
  queue; the receiving server turns `samples` of them into the link's
  speed (bytes over seconds, summed) and reports it when it changed by
  more than `report_change` (relative).
- **Multipath.** When a server sends to another DC's server, the message
  goes to the auxiliary path's first hop instead when the primary next
  hop's queue holds more than 2L messages and that hop's fewer than L;
  the path rides in the header (`to`, `route`, `from`) and relays forward
  by it, so a message never changes route in flight.
- **Leaving.** A server done with its last iteration may still be on the
  path of another's detour, so where detours can happen it tells every
  other server it is done (`farewell`) and stays, relaying, until each of
  them has said the same (`lingering`).  A detour ends at a server that
  needs it to finish, so once every server has said it is done, none is
  left on the way.
"""

import numpy as np

from agents.dataplane.node import ExecutorNode
from agents.dataplane.tree import TreeNode
from agents.overlay.netstorm import plan as ns


def sum_at_root(start, stop, total, count):
    return np.array(total, dtype=np.float32)


class Node(ExecutorNode):
    QUEUED = True                 # wants a transport with visible per-peer queues
    scheme = ns                   # the overlay module whose options and plans these are

    def __init__(self, name, layout, segment, fold, coordinator):
        self.name = name
        self.layout = layout
        self.rule_fold = fold
        self.coordinator = coordinator
        self.nodes = ns.servers_by_dc(layout)
        self.dc_of = {n: dc for n, dc in list(layout.servers) + list(layout.workers)}
        self.dc = self.dc_of[name]
        self.worker = name in layout.worker_names
        self.server = self.nodes.get(self.dc) == name
        self.name_of = {dc: n for dc, n in self.nodes.items()}
        self.n = len(layout.workers)
        self.opt = {k: self.scheme.option(layout, k) for k in self.scheme.DEFAULTS}
        self.policies = {}        # version -> policy
        self.trees = {}           # version -> TreeNode
        self.version_of = {}      # iteration -> version
        self.latest = None
        self.pending = {}         # iteration -> start arguments, until released
        self.held = {}            # iteration -> messages that came before its release
        self.acc = {}             # source DC -> [bytes, seconds, samples]
        self.reported = {}        # source DC -> last reported rate
        self.counters = {"detoured": 0, "relayed": 0, "speed_reports": 0}
        self.farewells = set()    # servers that said they are done

    # ------------------------------------------------------------ queries

    def roots(self):
        tree = self.trees.get(self.latest)
        return tree.roots() if tree else []

    def segments_of(self, piece):
        return 1

    def counts(self):
        return dict(self.counters)

    def upstream(self):
        out = {self.coordinator} if self.pending else set()
        tree = self.trees.get(self.latest)
        return sorted(out | set(tree.upstream() if tree else ()))

    def detours(self):
        """True where this node's overlay may send a message through another
        DC's server on a path the plan does not name."""
        return self.server and bool(self.opt.get("multipath"))

    def farewell(self):
        """Messages that tell every other server this one is done."""
        if not self.detours():
            return []
        return [(peer, {"type": "ns_farewell"}, None) for peer in sorted(self.nodes.values())
                if peer != self.name]

    def lingering(self):
        """The servers this one waits to hear `farewell` from before it leaves."""
        if not self.detours():
            return []
        return sorted(set(self.nodes.values()) - self.farewells - {self.name})

    def done(self, it):
        v = self.version_of.get(it)
        return v is not None and it not in self.pending and self.trees[v].done(it)

    def result(self, it):
        v = self.version_of.pop(it)
        values, stop, last = self.trees[v].result(it)
        if values is not None:
            values = self.rule_fold(0, values.size, values, self.n)
        for old in [x for x in self.trees if x != self.latest and x not in self.version_of.values()]:
            del self.trees[old], self.policies[old]
        return values, stop, last

    # ------------------------------------------------------------ events

    def start(self, it, contribution=None, stop=False, started=0.0):
        self.pending[it] = (contribution, stop, started)
        if it in self.version_of:
            return self._begin(it)
        if self.worker:
            return [(self.coordinator, {"type": "ns_release", "it": it, "size": self.layout.size}, None)]
        return []

    def on_message(self, sender, header, payload):
        if header["type"] == "ns_policy":
            return self._released(header)
        if header["type"] == "ns_farewell":
            self.farewells.add(sender)
            return []
        if header.get("to", self.name) != self.name:
            return [self._forward(header, payload)]
        out = self._measure(sender, header, payload)
        it = header["it"]
        origin = header.get("from", sender)
        if it not in self.version_of:
            self.held.setdefault(it, []).append((origin, header, payload))
            return out
        return out + self._mark(self.trees[self.version_of[it]].on_message(origin, header, payload))

    def route(self, dst, header, queue_length):
        """(next hop, header): the primary next hop, or an auxiliary path's
        when the primary one is backed up and that one is not."""
        if not (self.opt["multipath"] and self.server and header.get("type") in ("agg", "dist")
                and dst in self.name_of.values() and self.dc_of[dst] != self.dc
                and "to" not in header):
            return dst, header
        policy = self.policies[self.version_of[header["it"]]]
        paths = policy["routes"].get(f"{self.dc}>{self.dc_of[dst]}", [])
        limit = self.opt["queue_limit"]
        if len(paths) < 2 or queue_length(self.name_of[paths[0][1]]) <= 2 * limit:
            return dst, header
        for path in paths[1:]:
            first = self.name_of[path[1]]
            if queue_length(first) < limit:
                self.counters["detoured"] += 1
                return first, {**header, "from": self.name, "to": dst,
                               "route": [self.name_of[dc] for dc in path[2:]]}
        return dst, header

    # ------------------------------------------------------------ internals

    def _released(self, header):
        it, v = header["it"], header["version"]
        if "policy" in header:
            self.policies[v] = header["policy"]
            self.trees[v] = self.executor(header["policy"])
            self.latest = v
        self.version_of[it] = v
        return self._begin(it) if it in self.pending else []

    def executor(self, policy):
        """The executor of a released policy's plan."""
        plan = self.scheme.plan_of(policy, self.layout)
        return TreeNode(self.name, plan, self.segment(policy), sum_at_root)

    def segment(self, policy):
        """Elements per segment under a policy: one segment per piece."""
        return self.opt["piece"]

    def _begin(self, it):
        tree = self.trees[self.version_of[it]]
        contribution, stop, started = self.pending.pop(it)
        out = self._mark(tree.start(it, contribution if self.worker else None, stop, started))
        for origin, header, payload in self.held.pop(it, []):
            out += self._mark(tree.on_message(origin, header, payload))
        return out

    def _mark(self, messages):
        """Ask the transport to stamp large messages between DCs' servers."""
        out = []
        for dst, header, payload in messages:
            if (self.server and payload is not None and dst in self.name_of.values()
                    and self.dc_of[dst] != self.dc and payload.nbytes >= self.opt["sample_bytes"]):
                header = {**header, "stamp": True}
            out.append((dst, header, payload))
        return out

    def _forward(self, header, payload):
        self.counters["relayed"] += 1
        route = header["route"]
        header = {k: v for k, v in header.items() if k not in ("sent", "arrived")}
        nxt, header["route"] = route[0], route[1:]
        (out,) = self._mark([(nxt, header, payload)])       # stamped as what this server sends
        return out

    def _measure(self, sender, header, payload):
        """A link speed sample from a stamped message; a report when
        `samples` of them are in and the speed moved."""
        if not (self.server and "sent" in header and payload is not None):
            return []
        src = self.dc_of.get(sender)
        seconds = header["arrived"] - header["sent"]
        if src is None or src == self.dc or seconds <= 0:
            return []
        acc = self.acc.setdefault(src, [0, 0.0, 0])
        acc[0] += payload.nbytes
        acc[1] += seconds
        acc[2] += 1
        if acc[2] < self.opt["samples"]:
            return []
        rate = acc[0] * 8 / acc[1]
        del self.acc[src]
        last = self.reported.get(src)
        if last is not None and abs(rate - last) / last <= self.opt["report_change"]:
            return []
        self.reported[src] = rate
        self.counters["speed_reports"] += 1
        return [(self.coordinator, {"type": "ns_speed", "src": src, "dst": self.dc, "rate": rate},
                 None)]
