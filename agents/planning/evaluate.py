"""How fast a Plan can synchronize in the fluid model: the rate its pieces'
trees allow on a WAN, held against the best packing's.

Each piece of a plan carries its share f (its elements over the model's) of
every model byte over each of its tree edges: up the aggregation tree and
down the distribution tree.  An edge between agents in two DCs loads every
link of the routers' path between them with f per byte synchronized; an
edge inside a DC loads no WAN link.  The plan's rate is the most bytes per
second every link can carry at once, min over links of capacity / load.

Why no plan beats TREE-OPT (`packing.tree_packing` with free routing):
collapse each piece's aggregation edges to DCs.  Every contributing DC's
sum reaches the root's DC, so the collapsed edges contain an in-arborescence
spanning the contributing DCs and the root's; likewise the distribution
edges contain an out-arborescence.  A piece is thus a pair of trees of the
packing's kind carrying f each, over links at least as loaded, so the rate
is a feasible point of the packing's LP and at most its optimum.
"""


def plan_loads(plan, dc_of, paths):
    """{link: bytes on it per model byte}: the WAN load of one
    synchronization under `plan`; dc_of maps agent names to DCs, paths maps
    (DC, DC) to the routers' path."""
    loads = {}
    for piece in plan.pieces:
        share = piece.size / plan.size
        edges = list(piece.parent.items())
        edges += [(holder, child) for holder, kids in piece.children.items() for child in kids]
        for a, b in edges:
            u, v = dc_of[a], dc_of[b]
            if u == v:
                continue
            path = paths[(u, v)]
            for link in zip(path, path[1:]):
                loads[link] = loads.get(link, 0.0) + share
    return loads


def plan_rate(plan, dc_of, paths, capacity):
    """Bytes per second of model the plan synchronizes at most, with
    `capacity` {link: payload bytes/s}; inf when it crosses no link."""
    loads = plan_loads(plan, dc_of, paths)
    return min((capacity[link] / load for link, load in loads.items() if load > 0),
               default=float("inf"))


def link_shares(loads, rate, paths):
    """{link: share of every model byte it carries} of a plan given as its
    connections' loads ({"a>b": rate}) and its rate R, in one unit: a
    connection at load r carries r / R of each byte over every link of the
    routers' path between its DCs ({"a>b": [a, ..., b]})."""
    out = {}
    for key, load in loads.items():
        path = paths[key]
        for link in zip(path, path[1:]):
            out[link] = out.get(link, 0.0) + load / rate
    return out
