"""MLNET: a static k-ary tree overlay for aggregation and distribution
(Mai et al., "Optimizing Network Performance in Distributed Machine
Learning", HotCloud 2015; the baseline as NetStorm's authors ran it).

Each DC that hosts agents has one aggregator: its first server, or its
first worker where it has no server; the DC's other workers hang below it
(their LAN is fast).  The aggregators form a balanced k-ary tree rooted at
the server DC, built once from the configured WAN so that nodes close in
the tree are close in the WAN:

- DCs are taken in order of shortest-path delay from the root DC (ties by
  name) and fill the tree level by level: k DCs at depth 1, k^2 at depth 2,
  and so on, so the tree is balanced;
- each DC of a level, in that order, takes as parent the nearest DC (by
  shortest-path delay, ties by name) of the level above that has fewer
  than k children.

Aggregation goes up the tree (every interior node sums its subtree before
forwarding), distribution comes down the same tree.  The model is cut
evenly across the server DC's servers, each piece rooted at one of them
over the same tree of DCs.  The paper does not fix how the tree maps onto
the WAN; the nearest-first rule above is this testbed's choice.
"""

from agents.dataplane.plan import Piece, Plan, even_cuts
from agents.overlay.base import StaticOverlay
from agents.plugins import Option


def aggregators(layout):
    """{dc: the agent that aggregates for it}, for every DC hosting agents."""
    out = {}
    for name, dc in layout.servers:
        out.setdefault(dc, name)
    for name, dc in layout.workers:
        out.setdefault(dc, name)
    return out


def dc_tree(layout, k):
    """{dc: parent dc} of the balanced k-ary tree, the server DC at the root."""
    if k < 1:
        raise ValueError("k must be at least 1")
    delay = layout.delays()
    root = layout.server_dc
    others = sorted((dc for dc in aggregators(layout) if dc != root),
                    key=lambda dc: (delay[(root, dc)], dc))
    parent, level, at, width = {}, [root], 0, k
    while at < len(others):
        nxt = others[at:at + width]
        children = {p: 0 for p in level}
        for dc in nxt:
            free = [p for p in level if children[p] < k]
            best = min(free, key=lambda p: (delay[(dc, p)], p))
            parent[dc] = best
            children[best] += 1
        level, at, width = nxt, at + width, width * k
    return parent


class MLNET(StaticOverlay):
    NAME = "mlnet"
    DESCRIPTION = "MLNET: a static balanced k-ary tree over the DCs, aggregating on the way up"
    OPTIONS = (Option("k", 2, "children per node of the tree of DCs", low=1, high=64),)

    def plan(self, layout):
        k = self.options["k"]
        agg = aggregators(layout)
        up = dc_tree(layout, k)
        workers = layout.worker_names
        pieces = []
        for (a, b), root in zip(even_cuts(layout.size, len(layout.roots())), layout.roots()):
            head = dict(agg, **{layout.server_dc: root})
            parent = {head[dc]: head[p] for dc, p in up.items()}
            for name, dc in layout.workers + layout.servers:
                if name != head.get(dc) and (name in workers):
                    parent[name] = head[dc]
            children = {}
            for node, p in parent.items():
                children.setdefault(p, []).append(node)
            pieces.append(Piece(a, b, root, parent, {n: sorted(c) for n, c in children.items()}))
        return Plan(layout.size, tuple(workers), tuple(pieces)).validate()
