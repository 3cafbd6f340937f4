"""The planner's executor side: NetStorm's versioned release protocol
(`netstorm.node`) running the planner's trees, without NetStorm's
sampling or detours (every connection is held to its planned path),
pacing each connection of this DC's server at its planned load from the
iteration a plan is released for; a dispatched plan runs on
`agents/dataplane/dispatch`."""

from agents.dataplane.dispatch import ARRIVED, DispatchNode
from agents.dataplane.node import ExecutorNode
from agents.overlay.netstorm import node as netstorm_node
from agents.overlay.planner import plan


class Node(netstorm_node.Node):
    scheme = plan
    # Every connection is held to its planned path: no routing, at no cost per message.
    route = ExecutorNode.route

    def __init__(self, name, layout, segment, fold, coordinator):
        super().__init__(name, layout, segment, fold, coordinator)
        self.rates = None
        self.weights = {}         # version -> [planned rate of each piece]

    def detours(self):
        return False

    def segment(self, policy):
        return plan.segment_of(policy, self.layout)

    def executor(self, policy):
        if policy.get("dispatch"):
            trees = plan.family_trees(policy, self.layout)
            return DispatchNode(self.name, trees, self.layout.worker_names, self.layout.size,
                                self.segment(policy), netstorm_node.sum_at_root, arrived=self._arrived)
        return super().executor(policy)

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

    def _mark(self, messages):
        return messages

    def _released(self, header):
        if "policy" in header:
            v = header["version"]
            slices = header["policy"]["slices"]
            if header["policy"].get("dispatch"):      # a block may go to any slice
                self.weights[v] = [s["rate"] for s in slices]
            else:
                sizes = plan.sizes_of(header["policy"], self.layout)
                self.weights[v] = [s["rate"] for s, n in zip(slices, sizes) if n > 0]
        if "policy" in header and self.server:
            planned = plan.connection_rates(header["policy"], self.dc, self.layout)
            self.rates = {peer: planned.get(peer, 0.0) for peer in self.nodes.values()
                          if peer != self.name}
        out = super()._released(header)
        self.weights = {v: w for v, w in self.weights.items() if v in self.trees}
        return out

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
        return (v, header["piece"], kind), self.weights[v][header["piece"]]

    def traces_pieces(self):
        return bool(self.opt["trace_pieces"])

    def trace_fields(self, it):
        """What a trace of iteration `it` needs to name its pieces: the plan's version."""
        return {"version": self.version_of[it]}

    def take_rates(self):
        """{peer: bit/s (0: unpaced)} set since the last call, for the transport."""
        rates, self.rates = self.rates, None
        return rates or {}
