"""NetStorm's routes, trees, root metric and multi-root split, as pure
functions of per-direction link speeds (see the package docstring for the
rules and their source)."""

import math

PIECE = 1_000_000          # elements: MXNet's MXNET_KVSTORE_BIGARRAY_BOUND
COST_DIGITS = 12           # path costs equal to this many digits are ties


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
