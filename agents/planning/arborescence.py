"""The cheapest spanning arborescence of a small directed graph, by
Chu-Liu/Edmonds (Y. J. Chu and T. H. Liu, 1965; J. Edmonds, "Optimum
branchings", 1967): every node but the root takes its cheapest incoming
arc; a cycle among those arcs is contracted into one node, whose incoming
arcs cost what they would save over the cycle arc they replace; the
contracted graph is solved the same way and the cycle expanded again.

The tree packing prices one tree per root, kind and set of transit DCs in
every round of column generation: thousands of calls on graphs of at most
a dozen nodes, where a general graph library's version costs about 11 ms
a call and this one a few hundredths of that.
"""


class NoArborescence(ValueError):
    """Some node cannot be reached from the root."""


def cheapest_arborescence(nodes, root, weight):
    """The arcs (u, v) of the cheapest tree over `nodes` reaching every
    node from `root`, with `weight` {(u, v): cost} giving the arcs that
    may be used.  Arcs into the root, loops and arcs touching nodes not in
    `nodes` are ignored.  Ties go to the arc met first in `weight`."""
    nodes = set(nodes)
    if root not in nodes:
        raise NoArborescence(f"the root {root!r} is not one of the nodes")
    arcs = {(u, v): w for (u, v), w in weight.items()
            if u != v and v != root and u in nodes and v in nodes}
    return _solve(nodes, root, arcs)


def _solve(nodes, root, arcs):
    best_in = {}
    for (u, v), w in arcs.items():
        if v not in best_in or w < arcs[best_in[v]]:
            best_in[v] = (u, v)
    unreached = [v for v in nodes if v != root and v not in best_in]
    if unreached:
        raise NoArborescence(f"no arc reaches {sorted(map(str, unreached))}")
    cycle = _cycle(best_in)
    if not cycle:
        return set(best_in.values())
    merged = _Merged()
    contracted, origin = {}, {}
    for (u, v), w in arcs.items():
        if u in cycle and v in cycle:
            continue
        if v in cycle:
            key, w = (u, merged), w - arcs[best_in[v]]
        elif u in cycle:
            key = (merged, v)
        else:
            key = (u, v)
        if key not in contracted or w < contracted[key]:
            contracted[key], origin[key] = w, (u, v)
    tree = _solve((nodes - cycle) | {merged}, root, contracted)
    chosen = {origin[arc] for arc in tree}
    (entered,) = [v for _, v in chosen if v in cycle]
    return chosen | {best_in[v] for v in cycle if v != entered}


def _cycle(best_in):
    """The nodes of a cycle among the chosen incoming arcs, or an empty set."""
    done = set()
    for start in best_in:
        path, node = [], start
        while node in best_in and node not in done and node not in path:
            path.append(node)
            node = best_in[node][0]
        if node in path:
            return set(path[path.index(node):])
        done.update(path)
    return set()


class _Merged:
    """A contracted cycle: a node equal to nothing else in the graph."""

    def __repr__(self):
        return "<contracted cycle>"
