"""A lower bound on one synchronization's time from the WAN alone: the
testbed's "physical limit" line.  No algorithm beats it: parameter server,
trees, all-reduce exchanges, pipelining by chunks, relaying through other
DCs included.

What a sync does.  At time 0 every worker holds a gradient of M bytes that
nothing anywhere else knows yet; at the end every DC with workers holds the
aggregate (the sum over all workers, or the model updated with it, from
which the sum follows).  Gradients are arbitrary floats sent uncompressed.

The pair argument.  Take two DCs a and b with workers, and give b for free
every gradient except those of a's workers.  An algorithm that works
without the gift works with it, so what bounds the helped b bounds the
real one.  The helped b knows a's sum as soon as it knows the aggregate
(the aggregate less what it was given), and a's sum is M bytes known only
inside a: M bytes of information must travel from a to b.  They travel
over WAN links.  Link l sends at most r_l = rate_l * GOODPUT_SHARE / 8
payload bytes/s, from time 0 on, and a byte sent on it arrives no sooner
than d_l later (the one-way delay less its jitter).  DCs on the way may
store, combine and forward as they like.  So what b can have received
from a by time t is at most the least cut between them in the network
unrolled over time, which no coding or combining on the way exceeds and
which equals the maximum flow over time from a to b with horizon t (Ford
and Fulkerson): the largest
        t * value(x) - sum_l d_l * x_l
over static flows x from a to b with x_l <= r_l (each path of delay D
carrying its rate for t - D seconds).  The pair's bound is the smallest t
at which that reaches M, the quickest-flow time
        min over v of (M + cost(v)) / v,
cost(v) being the least sum_l d_l x_l of a flow of value v.  cost is
piecewise linear, so the minimum is at one of its breakpoints, which
successive least-delay augmenting paths visit one by one.  The sync's
bound is the largest over ordered pairs (a, b).

What follows from it.
* One path of rate r and delay D: M / r + D.  Two DCs exchanging their
  partial sums (each side sends its sum and adds what arrives) finish in
  exactly the larger of M / r_ab + d_ab and M / r_ba + d_ba: the bound is
  tight there.  Not M / r + d_ab + d_ba: nothing has to come back.
* A line a - b - c: M / r + d_ab + d_bc from a to c; the exchange
  pipelined through b in k chunks takes (1 + 1/k) M / r + d_ab + d_bc.
* Any cut S | T with a in S and b in T: every path from a to b crosses the
  cut's S -> T links, so by time t at most sum_l r_l max(0, t - d_l) bytes
  have crossed; the smallest t at which that reaches M (at least
  M / sum_l r_l + min_l d_l) is at most the pair's bound.  Singleton cuts
  are the familiar "a DC's data must leave over its uplinks, and the
  aggregate must come in over them".
* As M -> 0 the bound is the longest least-delay path between two DCs
  with workers.

What it leaves out (so a system's sync time over it measures them and the
algorithm): TCP's slow start and round trips, queueing, computing the sums,
workers finishing their compute at different times, link changes during
the run (the bound uses the spec's links as built), and that DCs without
hosts only route (the bound lets them compute, so it is optimistic where
they sit on every path).
"""

import networkx as nx

from agents.planning.wan import GOODPUT_SHARE

RESIDUAL = 1e-9            # a link this little of its rate from full or empty is so


def network_of(spec):
    """({dc: workers}, {(src, dst): (payload bytes/s, least one-way delay s)})
    of a Spec or of its JSON form (a run folder's spec.json).  Links that are
    down or have no rate are left out."""
    if isinstance(spec, dict):
        dcs = {d["name"]: d["workers"] for d in spec["datacenters"]}
        links = [(w["a"], w["b"], w["ab"], w["ba"]) for w in spec["wan"]]
        get = lambda d: (d["rate"], d["delay"], d.get("jitter", 0.0), d.get("up", True))  # noqa: E731
    else:
        dcs = {d.name: d.workers for d in spec.datacenters}
        links = [(w.a, w.b, w.ab, w.ba) for w in spec.wan]
        get = lambda d: (d.rate, d.delay, d.jitter, d.up)  # noqa: E731
    wan = {}
    for a, b, ab, ba in links:
        for pair, direction in (((a, b), ab), ((b, a), ba)):
            rate, delay, jitter, up = get(direction)
            if up and rate > 0:
                wan[pair] = (rate * GOODPUT_SHARE / 8, max(0.0, delay - jitter))
    return dcs, wan


def quickest_flow_time(wan, src, dst, model_bytes):
    """The least time in which `model_bytes` can flow from src to dst over
    `wan` ({(u, v): (bytes/s, delay s)}), relays storing and forwarding
    freely; inf when dst cannot be reached."""
    flow = {arc: 0.0 for arc in wan}
    value = cost = 0.0
    best = float("inf")
    while True:
        path = _least_delay_augmenting_path(wan, flow, src, dst)
        if path is None:
            return best
        room = min(left for _, _, left, _, _ in path)
        for u, v, _, forward, _ in path:
            if forward:
                flow[(u, v)] += room
            else:
                flow[(v, u)] -= room
        value += room
        cost += room * sum(delay for _, _, _, _, delay in path)
        best = min(best, (model_bytes + cost) / value)


def _least_delay_augmenting_path(wan, flow, src, dst):
    """[(u, v, room, forward, delay)] along a least-delay path of the residual
    network (sending on a link, or taking back what a link carries), or
    None.  Of two residual arcs between the same DCs the cheaper one is kept."""
    residual = nx.DiGraph()
    for (u, v), (rate, delay) in wan.items():
        # Whole nanoseconds: in floats, a cycle out and back along one link
        # could come out a hair below zero and pass for a negative cycle.
        ns = round(delay * 1e9)
        if rate - flow[(u, v)] > rate * RESIDUAL:
            _keep_cheaper(residual, u, v, ns, rate - flow[(u, v)], True)
        if flow[(u, v)] > rate * RESIDUAL:
            _keep_cheaper(residual, v, u, -ns, flow[(u, v)], False)
    if src not in residual or dst not in residual:
        return None
    try:
        # Taking flow back has negative delay; successive least-cost paths
        # never leave a negative cycle, so Bellman-Ford is exact.
        nodes = nx.bellman_ford_path(residual, src, dst, weight="delay")
    except nx.NetworkXNoPath:
        return None
    arcs = [(u, v, residual[u][v]) for u, v in zip(nodes, nodes[1:])]
    return [(u, v, arc["room"], arc["forward"], arc["delay"] / 1e9) for u, v, arc in arcs]


def _keep_cheaper(graph, u, v, delay, room, forward):
    if not graph.has_edge(u, v) or delay < graph[u][v]["delay"]:
        graph.add_edge(u, v, delay=delay, room=room, forward=forward)


def sync_lower_bound(spec, model_bytes):
    """(seconds, (a, b)) for one aggregation + distribution of `model_bytes`
    among the DCs with workers, (a, b) being the pair that binds: a's sum
    cannot reach b sooner.  (0.0, ()) when fewer than two DCs hold workers:
    nothing has to cross the WAN."""
    dcs, wan = network_of(spec)
    holders = sorted(name for name, workers in dcs.items() if workers > 0)
    if len(holders) < 2:
        return 0.0, ()
    best, where = -1.0, ()
    for a in holders:
        for b in holders:
            if a != b:
                t = quickest_flow_time(wan, a, b, model_bytes)
                if t > best:
                    best, where = t, (a, b)
    return best, where
