"""TREE-OPT: the best multi-root fractional tree packing, an achievable
synchronization time and the trees that achieve it.

Each root r takes a share x_r of the gradient rate R.  Its share is reduced
up in-trees (children send partial sums to parents, ending at r) and sent
back down out-trees, both spanning the terminals (plus r, and any agents
without workers the packing finds useful), reduce and broadcast running at
once, chunk by chunk.  A tree's arcs are overlay connections between
agents, each carried over any mix of WAN paths.  Maximise R subject to:
in-tree weights of r sum to x_r, out-tree weights of r sum to x_r, the
trees using an overlay arc fit its load, and the loads fit the links.

The trees are columns generated on demand: after each solve of the master
LP, the cheapest spanning arborescence (Chu-Liu/Edmonds) under the arc
duals prices each root's out-trees, and on the reversed arcs its in-trees;
none with negative reduced cost left means the packing is optimal.  A
second solve keeps R and routes the loads over the least total delay, so
no connection takes a detour it does not need.

Routes.  By default a connection may use any mix of WAN paths; with
`paths` ({(u, v): (dc, ...)}) each is held to the one path the routers
take, which is what a network without extra routes can do.  With `keep`,
each root keeps only its `keep` heaviest in- and out-trees and the rates
are solved again over those: fewer trees, a little less rate.

Time.  A slice of the model sent up an in-tree and down an out-tree at the
trees' rate finishes M / R plus the longest leaf-to-root delay of the one
plus the longest root-to-leaf delay of the other (a connection's delay is
that of its slowest path in use), so
        t_opt = M / R + max over roots (deepest in-tree + deepest out-tree).
Every overlay the testbed runs is a feasible packing, so none does better in
this fluid model; and t_lb <= t_opt.
"""

import itertools
from dataclasses import dataclass

import networkx as nx

from agents.planning.arborescence import cheapest_arborescence
from agents.planning.lp import INFEASIBLE, LP, add_routing, overlay_arcs

TOLERANCE = 1e-9
DUST = 1e-6               # of R
MAX_ROUNDS = 500


@dataclass(frozen=True)
class Tree:
    root: str
    kind: str         # "reduce": arcs go child -> parent; "broadcast": parent -> child
    arcs: tuple       # ((u, v), ...) overlay connections
    rate: float       # bytes/s of the model through this tree


@dataclass(frozen=True)
class Packing:
    rate: float       # R: bytes/s of gradient all-reduced
    trees: tuple      # Tree, ...
    routes: dict      # {(u, v): ((path of DCs, bytes/s), ...)} for every connection in use
    latency: float    # seconds: the deepest in-tree plus out-tree of a root

    def time(self, model_bytes):
        return model_bytes / self.rate + self.latency


def arc_delays(wan, paths=None):
    """{(u, v): one-way delay} of every overlay connection: its least-delay
    path, or the delay of its fixed path."""
    arcs = overlay_arcs(wan.agents)
    if paths is None:
        return {(u, v): wan.dist[u].get(v, float("inf")) for u, v in arcs}
    return {(u, v): (sum(wan.links[link][1] for link in zip(paths[(u, v)], paths[(u, v)][1:]))
                     if (u, v) in paths and all(link in wan.links for link in
                                                 zip(paths[(u, v)], paths[(u, v)][1:]))
                     else float("inf")) for u, v in arcs}


def t_opt(wan, model_bytes):
    if len(wan.terminals) < 2:
        return 0.0
    if not wan.reachable():
        return float("inf")
    return tree_packing(wan).time(model_bytes)


def tree_packing(wan, paths=None, keep=None, start=(), model_bytes=None, give_up=()):
    """The optimal Packing of `wan` (at least two terminals, all reachable);
    see the module docstring for `paths` and `keep`.  `start`: trees
    (root, kind, arcs) to begin the column generation with, such as the last
    packing's on a WAN whose numbers moved: fewer rounds to the optimum.
    `give_up`: shares of the rate that may be traded for shallower trees;
    of the packings at each, the one that synchronizes `model_bytes`
    soonest (M / R + latency) is returned."""
    (candidates,) = tree_packings(wan, paths, [keep], start, give_up)
    return min(candidates, key=lambda p: p.time(model_bytes)) if give_up else candidates[0]


def tree_packings(wan, paths=None, keeps=(None,), start=(), give_up=()):
    """For each count of trees per root in `keeps` (None: no limit), in
    that order, the packings `tree_packing` chooses from: the one of most
    rate, then one per share in `give_up`.  One column generation serves
    them all: the greedy pruning to k trees goes on from where the pruning
    to a larger k stopped."""
    unit = max(rate for rate, _ in wan.links.values())
    delay = arc_delays(wan, paths)
    columns = list(dict.fromkeys(tuple(c) for c in start))
    for root in wan.agents:
        spanned = sorted(set(wan.terminals) | {root})
        star = tuple((root, v) for v in spanned if v != root)
        columns += [(root, "broadcast", star), (root, "reduce", tuple((v, u) for u, v in star))]
    for _ in range(MAX_ROUNDS):
        master = _Master(wan, columns, unit, delay, paths)
        res = master.lp.solve()
        new = _price(wan, master, res)
        if not new:
            break
        columns += new
    columns += _least_delay_trees(wan, delay)
    master, res = _solve(wan, columns, unit, delay, paths)
    out = {}
    for keep in sorted(set(keeps), key=lambda k: -(k or float("inf"))):
        while keep is not None:
            fewer = _without_lightest(columns, res.x[master.weight], keep)
            if fewer is None:
                break
            columns = fewer
            master, res = _solve(wan, columns, unit, delay, paths)
        out[keep] = [master.packing(res, unit)]
        for share in give_up:
            traded, solved = _solve(wan, columns, unit, delay, paths, share)
            out[keep].append(traded.packing(solved, unit))
    return [out[k] for k in keeps]


def _solve(wan, columns, unit, delay, paths, give_up=0.0):
    """The most rate over these columns, then among packings with at least
    (1 - give_up) of it the shallowest: (master, solution).  Should rounding
    make the second solve infeasible, it gives up a little more rate, then
    none is shallower."""
    master = _Master(wan, columns, unit, delay, paths)
    res = master.lp.solve()
    if res.x is None:
        raise RuntimeError(f"the tree packing master LP failed: {res.message}")
    for slack in (1e-7, 1e-5, 1e-3):
        floor = -res.fun * (1 - give_up) * (1 - slack)
        shallow = _Master(wan, columns, unit, delay, paths, least_delay_at=floor)
        found = shallow.lp.solve()
        if found.x is not None:
            return shallow, found
    return master, res


def _without_lightest(columns, weights, keep):
    """The columns in use, less the lightest tree of a root and kind that
    uses more than `keep`; None when none does."""
    dust = DUST * max(weights)
    used = [k for k in range(len(columns)) if weights[k] > dust]
    count = {}
    for k in used:
        count[columns[k][:2]] = count.get(columns[k][:2], 0) + 1
    over = [k for k in used if count[columns[k][:2]] > keep]
    if not over:
        return None
    lightest = min(over, key=lambda k: weights[k])
    return [columns[k] for k in used if k != lightest]


class _Master:
    def __init__(self, wan, columns, unit, delay, paths=None, least_delay_at=None):
        self.wan, self.columns, self.delay, lp = wan, columns, delay, LP()
        self.lp = lp
        self.share = {r: lp.var(cost=0.0 if least_delay_at else -1.0) for r in wan.agents}
        self.weight = [lp.var() for _ in columns]
        self.arcs = overlay_arcs(wan.agents)
        self.load_of, self.flows, on_link = add_routing(lp, wan, self.arcs, paths=paths)
        if least_delay_at is not None:
            # Keep R; among such packings prefer shallow trees and short routes.
            lp.row([(x, -1.0) for x in self.share.values()], "<=", -least_delay_at)
            for arc in self.arcs:
                for link, f in self.flows[arc].items():
                    lp.cost[f] += wan.links[link][1] + TOLERANCE   # a fixed path's load: its sum
            for w, (root, kind, arcs) in zip(self.weight, columns):
                lp.cost[w] = _depth(Tree(root, kind, arcs, 0.0), delay)
        self.balance = {}
        for r in wan.agents:
            for kind in ("reduce", "broadcast"):
                terms = [(w, 1.0) for w, (root, k, _) in zip(self.weight, columns)
                         if root == r and k == kind]
                self.balance[(r, kind)] = lp.row(terms + [(self.share[r], -1.0)], "==")
        using = {arc: [] for arc in self.arcs}
        for w, (_, _, arcs) in zip(self.weight, columns):
            for arc in arcs:
                using[arc].append((w, 1.0))
        self.capacity = {arc: lp.row(using[arc] + [(self.load_of[arc], -1.0)], "<=")
                         for arc in self.arcs}
        for link, cols in on_link.items():
            lp.row([(f, 1.0) for f in cols], "<=", wan.links[link][0] / unit)

    def packing(self, res, unit):
        x = res.x
        # A tree of LP dust would set the latency while carrying nothing: drop
        # it, and what its root can no longer both reduce and broadcast.
        dust = DUST * sum(x[s] for s in self.share.values())
        trees = tuple(Tree(root, kind, arcs, x[w] * unit)
                      for w, (root, kind, arcs) in zip(self.weight, self.columns)
                      if x[w] > dust)
        carried = {}
        for tree in trees:
            carried[(tree.root, tree.kind)] = carried.get((tree.root, tree.kind), 0.0) + tree.rate
        rate = sum(min(carried.get((r, "reduce"), 0.0), carried.get((r, "broadcast"), 0.0))
                   for r in self.wan.agents)
        routes = {}
        for arc in self.arcs:
            if x[self.load_of[arc]] > TOLERANCE:
                flow = {link: x[f] * unit for link, f in self.flows[arc].items()}
                routes[arc] = tuple(_paths(flow, *arc))
        delay = {arc: max(sum(self.wan.links[link][1] for link in zip(path, path[1:]))
                          for path, _ in paths) for arc, paths in routes.items()}
        deepest = {}
        for tree in trees:
            key = (tree.root, tree.kind)
            deepest[key] = max(deepest.get(key, 0.0), _depth(tree, delay))
        latency = max(deepest.get((r, "reduce"), 0.0) + deepest.get((r, "broadcast"), 0.0)
                      for r in self.wan.agents)
        return Packing(rate=rate, trees=trees,
                       routes=routes, latency=latency)


def _price(wan, master, res):
    """New columns of negative reduced cost: per root and kind the cheapest
    spanning arborescence under the arc duals (scipy's marginals are <= 0 on
    the <= rows of a minimisation)."""
    if res.status == INFEASIBLE:
        raise RuntimeError("the tree packing master LP is infeasible")
    # A connection with no path (delay inf) is no arc of any tree.
    arc_price = {arc: -res.ineqlin.marginals[row] for arc, row in master.capacity.items()
                 if master.delay[arc] < float("inf")}
    new = []
    for root in wan.agents:
        optional = [s for s in wan.steiner if s != root]
        for kind in ("broadcast", "reduce"):
            bar = res.eqlin.marginals[master.balance[(root, kind)]]
            best = None
            for k in range(len(optional) + 1):
                for extra in itertools.combinations(optional, k):
                    nodes = sorted(set(wan.terminals) | {root} | set(extra))
                    tree = _cheapest_arborescence(nodes, root, kind, arc_price)
                    if best is None or tree[0] < best[0]:
                        best = tree
            cost, arcs = best
            if cost - bar < -TOLERANCE * max(1.0, abs(bar)):
                new.append((root, kind, arcs))
    return new


def _least_delay_trees(wan, delay):
    """Per root, the in- and out-tree of least-delay paths over the overlay
    (connections of finite `delay`): shallow candidates for the second solve."""
    columns = []
    for root in wan.agents:
        nodes = sorted(set(wan.terminals) | {root})
        for kind in ("broadcast", "reduce"):
            graph = nx.DiGraph()
            for u in nodes:
                for v in nodes:
                    arc = (u, v) if kind == "broadcast" else (v, u)
                    if u != v and delay[arc] < float("inf"):
                        graph.add_edge(u, v, delay=delay[arc])
            paths = nx.single_source_dijkstra_path(graph, root, weight="delay")
            arcs = {(p[-2], p[-1]) for p in paths.values() if len(p) > 1}
            arcs = tuple(sorted(a if kind == "broadcast" else (a[1], a[0]) for a in arcs))
            columns.append((root, kind, arcs))
    return columns


def _cheapest_arborescence(nodes, root, kind, price):
    """(cost, arcs) of the cheapest tree over `nodes` sending from `root`
    (broadcast) or into it (reduce)."""
    # A reduce tree is a broadcast tree with its arcs turned around.
    weight = {}
    for u in nodes:
        for v in nodes:
            arc = (u, v) if kind == "broadcast" else (v, u)
            if arc in price:
                weight[(u, v)] = price[arc]
    tree = cheapest_arborescence(nodes, root, weight)
    arcs = tuple(sorted((u, v) if kind == "broadcast" else (v, u) for u, v in tree))
    return sum(price[arc] for arc in arcs), arcs


def _depth(tree, delay):
    """The longest delay from the root to a leaf (broadcast) or a leaf to the root (reduce)."""
    children = {}
    for u, v in tree.arcs:
        parent, child = (u, v) if tree.kind == "broadcast" else (v, u)
        children.setdefault(parent, []).append(child)

    def down(node):
        arc = lambda c: (node, c) if tree.kind == "broadcast" else (c, node)  # noqa: E731
        return max((delay[arc(c)] + down(c) for c in children.get(node, ())), default=0.0)
    return down(tree.root)


def _paths(flow, src, dst):
    """Decompose a link flow from src to dst into (path, rate) pairs; cycles dropped."""
    flow = {link: f for link, f in flow.items() if f > TOLERANCE}
    while True:
        graph = nx.DiGraph(list(flow))
        if src not in graph or dst not in graph or not nx.has_path(graph, src, dst):
            return
        path = nx.shortest_path(graph, src, dst)
        links = list(zip(path, path[1:]))
        rate = min(flow[link] for link in links)
        for link in links:
            flow[link] -= rate
            if flow[link] <= TOLERANCE:
                del flow[link]
        yield tuple(path), rate
