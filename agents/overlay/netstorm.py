"""NetStorm's control logic: routes, FAPT trees, the root metric and the
multi-root split, as pure functions of per-direction link speeds.

Source: Li et al., "Accelerating Geo-distributed Machine Learning with
Network-Aware Adaptive Tree and Auxiliary Route" (IEEE/ACM ToN 2024) as its
authors' public code implements it (ps-lite `van.cc`: route computation,
the root metric and the policy decision; the kvstore's key division).

- **Routes.** For every ordered DC pair (i, j), every simple path in the WAN
  graph, found by depth-first search trying neighbours in DC order.  A
  path's cost is the sum over its links of 1 / speed (seconds per byte,
  store and forward).  The cheapest is the primary path; the auxiliary
  paths are the next cheapest whose intermediate DCs are disjoint from
  those of every path already taken.  Ties go to the path found first.
- **FAPT of root r.** DC j's parent is the first hop of j's primary path
  *to* r (speeds j -> r).
- **Root metric.** The links of r's primary paths *from* r to every other
  DC (speeds r -> j), each counted once, grouped by hop depth;
  T(r) = sum over depths of 1 / (slowest link at that depth) and
  perf(r) = 1 / T(r).  The R best roots keep their perf, the others get 0.
  The code does not say how equal metrics are ranked; here ties go to the
  later DC in DC order, which is what reproduces the authors' reference
  output (`R = 1` keeps DC 7 of 5 and 7, `R = 3` keeps DC 8 of 2, 4, 6, 8).
- **Split.** The flat model is cut into pieces of at most `piece` elements
  (MXNet's big-array bound, 1,000,000); root r's quota is
  ceil(perf(r) / sum(perf) x size) elements, and pieces go in order
  round-robin over the roots (in DC order) that have quota left.  Every
  node computes the same split from the same perf vector.

As an overlay (`overlay: netstorm`): every DC runs a server, and the
servers are the overlay's nodes; a worker talks only to its DC's server.
Each piece is reduced up its root's tree (a server sends one message per
piece to its parent once it holds its children's and its own workers'
contributions) and sent back down the same tree; the root only sums, and
every worker applies the sync rule to the sum itself (the authors' trainer
steps on the workers), so roots can move between iterations without state
to hand over.  The coordinator (`netstorm_policy`) re-plans from the link
speeds the servers measure and releases each iteration with the policy
version all nodes use for it (`netstorm_node`).  Options, with the
authors' defaults: `roots` (R, 0 = all), `piece`, `multipath` (1/0),
`queue_limit` (L), `sample_bytes`, `samples`, `report_change`,
`check_period`, `update_change`, and `replan` (0 freezes the first policy:
an ablation, not in the original).

`python -m agents.overlay.netstorm FILE.json` reads a graph (`links_mbit`
with keys "1-2" for symmetric links, or `links_mbit_per_direction` with
keys "1->2") and prints perf with all, three and one roots, every root's
tree and the paths from the first DC to the last, in the shape of
`static-9dc.json` the authors' numbers were checked against.
"""

import argparse
import json
import math
import sys

from agents.dataplane.plan import Piece, Plan

PIECE = 1_000_000          # elements: MXNet's MXNET_KVSTORE_BIGARRAY_BOUND
COST_DIGITS = 12           # path costs equal to this many digits are ties

NAME = "netstorm"
DESCRIPTION = "NetStorm: multi-root FAPT trees from measured link speeds, multipath relays"
DYNAMIC = True
OPTIONS = {"roots": 0, "piece": PIECE, "multipath": 1, "queue_limit": 1,
           "sample_bytes": 2_000_000, "samples": 4, "report_change": 0.0,
           "check_period": 2.0, "update_change": 0.0, "replan": 1}
RANGES = {"roots": (0, 10**4), "piece": (1, 10**9), "multipath": (0, 1), "queue_limit": (1, 10**4),
          "sample_bytes": (1, 10**10), "samples": (1, 10**4), "report_change": (0.0, 10.0),
          "check_period": (0.1, 3600.0), "update_change": (0.0, 10.0), "replan": (0, 1)}


def neighbours(speeds, order):
    """{dc: [neighbours in DC order]} of the graph whose directed links are
    the keys of `speeds`."""
    rank = {dc: i for i, dc in enumerate(order)}
    out = {dc: [] for dc in order}
    for a, b in speeds:
        if b not in out[a]:
            out[a].append(b)
    for dc in out:
        out[dc].sort(key=rank.__getitem__)
    return out


def simple_paths(adjacent, src, dst):
    """Every simple path src -> dst, in depth-first order."""
    paths, stack = [], [src]

    def walk(here):
        if here == dst:
            paths.append(tuple(stack))
            return
        for nxt in adjacent[here]:
            if nxt not in stack:
                stack.append(nxt)
                walk(nxt)
                stack.pop()

    walk(src)
    return paths


def path_cost(path, speeds):
    return sum(1.0 / speeds[(a, b)] for a, b in zip(path, path[1:]))


def routes_between(adjacent, speeds, src, dst, multipath=True):
    """[primary, auxiliary...] paths src -> dst (see the module docstring)."""
    found = simple_paths(adjacent, src, dst)
    ranked = sorted(range(len(found)),
                    key=lambda k: (round(path_cost(found[k], speeds), COST_DIGITS), k))
    taken, used = [], set()
    for k in ranked:
        middle = set(found[k][1:-1])
        if taken and middle & used:
            continue
        taken.append(found[k])
        used |= middle
        if not multipath:
            break
    return taken


def all_routes(speeds, order, multipath=True):
    """{(i, j): [primary, auxiliary...]} for every ordered pair of DCs
    connected in the graph."""
    adjacent = neighbours(speeds, order)
    out = {}
    for i in order:
        for j in order:
            if i != j:
                paths = routes_between(adjacent, speeds, i, j, multipath)
                if paths:
                    out[(i, j)] = paths
    return out


def tree_parents(routes, order, root):
    """{dc: parent} of root's FAPT: the first hop of each DC's primary path
    to the root."""
    return {j: routes[(j, root)][0][1] for j in order if j != root and (j, root) in routes}


def root_metric(routes, speeds, order, root):
    """perf(root) = 1 / sum over depths of 1 / slowest link at that depth,
    over root's primary paths to every other DC."""
    levels = {}
    for j in order:
        if j == root or (root, j) not in routes:
            continue
        path = routes[(root, j)][0]
        for depth, link in enumerate(zip(path, path[1:])):
            levels.setdefault(depth, set()).add(link)
    if not levels:
        return 0.0
    return 1.0 / sum(1.0 / min(speeds[link] for link in links) for links in levels.values())


def performance(routes, speeds, order, keep=None):
    """{dc: perf}; only the `keep` best roots (all when None) keep theirs."""
    perf = {r: root_metric(routes, speeds, order, r) for r in order}
    if keep is not None and keep < len(order):
        rank = {dc: i for i, dc in enumerate(order)}
        best = sorted(order, key=lambda r: (perf[r], rank[r]), reverse=True)[:keep]
        perf = {r: (perf[r] if r in best else 0.0) for r in order}
    return perf


def split(size, perf, order, piece=PIECE):
    """[(start, stop, root)] covering range(size) in order: pieces of at
    most `piece` elements dealt round-robin over the roots with quota left."""
    roots = [r for r in order if perf.get(r, 0) > 0]
    if not roots:
        raise ValueError("no root has a positive metric")
    total = sum(perf[r] for r in roots)
    quota = {r: math.ceil(perf[r] / total * size) for r in roots}
    given = dict.fromkeys(roots, 0)
    out, turn = [], 0
    for start in range(0, size, piece):
        stop = min(size, start + piece)
        while given[roots[turn % len(roots)]] >= quota[roots[turn % len(roots)]]:
            turn += 1
        root = roots[turn % len(roots)]
        out.append((start, stop, root))
        given[root] += stop - start
        turn += 1
    return out


# --- the overlay: servers as nodes, a policy turned into a plan ----------

def option(layout, key):
    return layout.option(key, OPTIONS[key])


def servers_by_dc(layout):
    """{dc: its first server}: the overlay node of each DC."""
    out = {}
    for name, dc in layout.servers:
        out.setdefault(dc, name)
    return out


def overlay_dcs(layout):
    """The DCs of the overlay, in the layout's order."""
    nodes = servers_by_dc(layout)
    return [dc for dc in layout.dcs if dc in nodes]


def refuse(server_counts, worker_counts=None):
    """Why DCs with these numbers of servers ({dc: n}) cannot run
    NetStorm, or None: it relays at every DC's server, transit DCs' too."""
    bare = [dc for dc, n in server_counts.items() if n < 1]
    if bare:
        return (f"netstorm relays at a server in every DC, and {', '.join(bare)} "
                f"{'has' if len(bare) == 1 else 'have'} none")
    return None


def takes_part(name, layout):
    return name in layout.worker_names or name in servers_by_dc(layout).values()


def compute_policy(speeds, order, layout):
    """The policy for these speeds ({(a, b): bytes/s} per direction): every
    root's tree, the roots' metric and the routes between neighbours, as
    JSON-ready data."""
    keep = option(layout, "roots") or None
    routes = all_routes(speeds, order, bool(option(layout, "multipath")))
    perf = performance(routes, speeds, order, keep)
    neighbour_routes = {f"{a}>{b}": [list(p) for p in routes[(a, b)]]
                        for (a, b) in speeds if (a, b) in routes}
    return {"perf": perf,
            "parents": {r: tree_parents(routes, order, r) for r in order if perf[r] > 0},
            "routes": neighbour_routes}


def plan_of(policy, layout):
    """The Plan a policy gives: pieces split by the roots' metric, each
    reduced up and sent down its root's tree of servers, every worker
    below its DC's server."""
    nodes = servers_by_dc(layout)
    order = overlay_dcs(layout)
    pieces = []
    for start, stop, root in split(layout.size, policy["perf"], order, option(layout, "piece")):
        parent = {w: nodes[dc] for w, dc in layout.workers}
        parent.update({nodes[dc]: nodes[up] for dc, up in policy["parents"][root].items()})
        children = {}
        for child, up in sorted(parent.items()):
            children.setdefault(up, []).append(child)
        pieces.append(Piece(start, stop, nodes[root], parent, children))
    return Plan(layout.size, tuple(layout.worker_names), tuple(pieces)).validate()


# --- the command line: a graph file in, the policy out --------------------

class GraphError(ValueError):
    pass


def read_graph(doc):
    """(speeds {(a, b): bytes/s}, DC order) from a graph document."""
    if not isinstance(doc, dict):
        raise GraphError("the graph file must hold a JSON object")
    if "links_mbit_per_direction" in doc:
        pairs = [(_ends(k, "->"), v) for k, v in _table(doc, "links_mbit_per_direction").items()]
    elif "links_mbit" in doc:
        pairs = []
        for key, v in _table(doc, "links_mbit").items():
            a, b = _ends(key, "-")
            pairs += [((a, b), v), ((b, a), v)]
    else:
        raise GraphError("the graph needs links_mbit or links_mbit_per_direction")
    speeds = {}
    for (a, b), mbit in pairs:
        if isinstance(mbit, bool) or not isinstance(mbit, (int, float)) or not mbit > 0:
            raise GraphError(f"link {a}-{b}: {mbit!r} is not a positive rate in Mbit/s")
        speeds[(a, b)] = mbit * 1e6 / 8
    names = {dc for link in speeds for dc in link}
    order = sorted(names, key=lambda n: (0, int(n), "") if n.isdigit() else (1, 0, n))
    return speeds, order


def _table(doc, key):
    value = doc[key]
    if not isinstance(value, dict) or not value:
        raise GraphError(f"{key} must be a non-empty object of links")
    return value


def _ends(key, sep):
    a, found, b = str(key).partition(sep)
    if not found or not a or not b or a == b:
        raise GraphError(f"{key!r} is not a link like 1{sep}2")
    return a, b


def _label(dc):
    return int(dc) if dc.isdigit() else dc


def describe(speeds, order, multipath=True):
    """The policy in the shape of the authors' reference file; speeds in
    MB/s as their code reports them."""
    mb = {link: s / 1e6 for link, s in speeds.items()}
    routes = all_routes(mb, order, multipath)
    out = {}
    for keep in sorted({len(order), 3, 1}, reverse=True):
        if keep <= len(order):
            perf = performance(routes, mb, order, keep)
            out[f"perf_R{keep}"] = [round(perf[r], 2) for r in order]
    out["tree_parents"] = {str(r): {str(j): _label(p) for j, p in tree_parents(routes, order, r).items()}
                           for r in order}
    first, last = order[0], order[-1]
    out[f"paths_{first}_to_{last}"] = [[_label(dc) for dc in p]
                                       for p in routes.get((first, last), [])]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m agents.overlay.netstorm",
                                description="NetStorm's routes, trees and root metric for a WAN graph")
    p.add_argument("file", help="a JSON graph with links_mbit or links_mbit_per_direction")
    p.add_argument("--no-multipath", dest="multipath", action="store_false",
                   help="primary paths only")
    args = p.parse_args(argv)
    try:
        with open(args.file) as f:
            doc = json.load(f)
        speeds, order = read_graph(doc)
    except OSError as e:
        print(f"error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    except ValueError as e:        # GraphError and JSON syntax errors
        print(f"error: {args.file}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(describe(speeds, order, args.multipath), indent=1))
    return 0


# The overlay's two sides, which use the functions above.
from agents.overlay.netstorm_node import Node  # noqa: E402,F401
from agents.overlay.netstorm_policy import Policy  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(main())
