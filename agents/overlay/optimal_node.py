"""The planner's executor side: NetStorm's versioned release protocol
(`netstorm_node`) running the planner's trees, without NetStorm's
sampling, pacing each connection of this DC's server at its planned load
from the iteration a plan is released for, and taking NetStorm's backlog
detours only under a plan that carries them (a volatile WAN's, `optimal`):
a steady plan holds every connection to its planned path.  A plan that
carries backfill trees (a volatile WAN's with `backfill: 1`,
`optimal.backfill_trees`) runs on `agents/dataplane/backfill`: its backup
copies go after everything else on a connection, and those overtaken are
dropped from the queue."""

from agents.dataplane.backfill import BACKUP, BackfillNode
from agents.dataplane.dispatch import ARRIVED, DispatchNode
from agents.overlay import netstorm_node, optimal


class Node(netstorm_node.Node):
    scheme = optimal

    def __init__(self, name, layout, segment, fold, coordinator):
        super().__init__(name, layout, segment, fold, coordinator)
        self.rates = None
        self.kernel_pace = optimal.option(layout, "kernel_pace")
        self.weights = {}         # version -> [planned rate of each piece]
        self.finished = set()     # iterations this node is done with
        if self.opt["backfill"]:  # backup copies wait for the kernel's queue to drain this far
            self.low_gate = int(self.opt["backfill_gate"])
            self.counters.update(folded_primary=0, folded_backup=0)
        else:                     # nothing for the transport to rank or drop
            self.priority_of = self.obsolete = None
        if not self.opt["multipath"]:
            self.route = None     # every connection held to its planned path, at no cost per message

    def segment(self, policy):
        return optimal.segment_of(policy, self.layout)

    def executor(self, policy):
        if policy.get("dispatch"):
            trees = optimal.family_trees(policy, self.layout)
            return DispatchNode(self.name, trees, self.layout.worker_names, self.layout.size,
                                self.segment(policy), netstorm_node.sum_at_root, arrived=self._arrived)
        if not policy["slices"] or "backup_reduce" not in policy["slices"][0]:
            return super().executor(policy)
        return BackfillNode(self.name, optimal.plan_of(policy, self.layout),
                            optimal.plan_of(policy, self.layout, backup=True), self.segment(policy),
                            netstorm_node.sum_at_root, counters=self.counters,
                            after=self.opt["backfill_after"])

    def upstream(self):
        """Under a dispatched plan the coordinator is upstream all iteration
        long: a node waits on its announcements, not only on its release."""
        out = super().upstream()
        if isinstance(self.trees.get(self.latest), DispatchNode) and self.coordinator not in out:
            out = sorted(out + [self.coordinator])
        return out

    def _arrived(self, it, s, b):
        """What tells the dispatcher block b of slice s reached this contributor."""
        return self.coordinator, {"type": ARRIVED, "it": it, "piece": s, "seg": b}, None

    def on_message(self, sender, header, payload):
        if self.opt["backfill"] and header.get("it") in self.finished \
                and header.get("to", self.name) == self.name:
            return []                   # a backfill copy that lost the race
        return super().on_message(sender, header, payload)

    def result(self, it):
        self.finished.add(it)
        return super().result(it)

    def _executor_of(self, it):
        v = self.version_of.get(it)
        return self.trees.get(v) if v is not None else None

    def priority_of(self, header):
        tree = self._executor_of(header.get("it"))
        return tree.priority_of(header) if isinstance(tree, BackfillNode) else 0

    def obsolete(self, header):
        """A queued message a backfilled plan no longer needs sent."""
        if "to" in header:              # relayed for another server, which may still need it
            return False
        if header.get("it") in self.finished:
            return header.get("type") == "agg" or header.get("lane") == BACKUP
        tree = self._executor_of(header.get("it"))
        return isinstance(tree, BackfillNode) and tree.obsolete(header)

    def _mark(self, messages):
        return messages

    def _released(self, header):
        if "policy" in header:
            v = header["version"]
            slices = header["policy"]["slices"]
            if header["policy"].get("dispatch"):      # a block may go to any slice
                self.weights[v] = [s["rate"] for s in slices]
            else:
                sizes = optimal.sizes_of(header["policy"], self.layout)
                self.weights[v] = [s["rate"] for s, n in zip(slices, sizes) if n > 0]
        if "policy" in header and self.server:
            planned = optimal.connection_rates(header["policy"], self.dc, self.layout)
            self.rates = {peer: planned.get(peer, 0.0) for peer in self.nodes.values()
                          if peer != self.name}
        out = super()._released(header)
        self.weights = {v: w for v, w in self.weights.items() if v in self.trees}
        return out

    def route(self, dst, header, queue_length):
        """NetStorm's detour rule, under a plan that carries detours."""
        v = self.version_of.get(header.get("it"))
        if v is None or "routes" not in self.policies.get(v, {}):
            return dst, header
        return super().route(dst, header, queue_length)

    def flow_of(self, header):
        """(flow, weight) of a message: each slice's reduce tree and its
        broadcast tree are flows weighted by the slice's planned rate, so a
        connection serves the slices it carries at once, in their planned
        shares, and not one after the other.  A connection can be in both
        trees of one slice (the plan then loads it twice the slice's rate):
        as one flow the two would share one share."""
        kind = header.get("type")
        if kind not in ("agg", "dist") or header.get("it") not in self.version_of:
            return None, 1.0
        v = self.version_of[header["it"]]
        return (v, header["piece"], kind, header.get("lane")), self.weights[v][header["piece"]]

    def traces_pieces(self):
        return bool(self.opt["trace_pieces"])

    def trace_fields(self, it):
        """What a trace of iteration `it` needs to name its pieces: the plan's version."""
        return {"version": self.version_of[it]}

    def take_rates(self):
        """{peer: bit/s (0: unpaced)} set since the last call, for the transport."""
        rates, self.rates = self.rates, None
        return rates or {}
